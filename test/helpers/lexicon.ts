// Checks of the bank's lexicon: that it is the index a fresh rebuild and a plain Bm25Index over the
// same texts would be, and a textbook BM25 to hold B against.
import { expect } from "vitest";
import { Bm25Index } from "../../src/lexical/bm25.js";
import type { LiveBm25Index } from "../../src/lexical/live-index.js";

import { words } from "./lexicon-bank.js";

export { LexiconBank, randomSkill, words, type TestSkill } from "./lexicon-bank.js";

/** The index's documents as plain data: id, length and term → count (strings, not ids), in order. */
export function canonical(index: LiveBm25Index): { id: string; length: number; terms: [string, number][] }[] {
  return index.ids().map((id) => {
    const d = index.docTerms(id)!;
    const terms = Array.from(d.terms, (t, j) => [index.vocabulary.term(t), d.tfs[j]] as [string, number]);
    terms.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return { id, length: d.length, terms };
  });
}

/** Queries that hit common words, rare ones, words no skill has, and repeats. */
export function randomQueries(r: () => number, n: number): string[] {
  return Array.from({ length: n }, (_, i) => (i === 0 ? "" : words(r, 1 + Math.floor(r() * 60))));
}

/**
 * The live index is a plain Bm25Index over `docs` (same ids in the same order, the same scores bit
 * for bit) for every query.
 */
export function expectSameAsBm25(index: LiveBm25Index, docs: readonly { id: string; name: string; description: string; body?: string }[], queries: readonly string[], what: string): void {
  const ref = new Bm25Index(docs, { k1: index.k1, b: index.b });
  expect(index.ids(), what).toEqual(ref.ids);
  for (const q of queries) {
    const a = index.scores(q);
    const b = ref.scores(q);
    expect(a.length, what).toBe(b.length);
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) expect(`${what}: query ${JSON.stringify(q)}, ${ref.ids[i]}: ${a[i]}`).toBe(`${b[i]}`);
  }
}

/** BM25 by the textbook, in float64 with Maps (its own tokenizer, the same definition). */
export function plainBm25(docs: readonly { id: string; name: string; description: string; body?: string }[], query: string, k1 = 1.2, b = 0.75): number[] {
  const tok = (s: string) => s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const tf = docs.map((d) => {
    const m = new Map<string, number>();
    for (const t of tok(`${d.name}\n${d.description}\n${d.body ?? ""}`)) m.set(t, (m.get(t) ?? 0) + 1);
    return m;
  });
  const len = docs.map((d) => tok(`${d.name}\n${d.description}\n${d.body ?? ""}`).length);
  const N = docs.length;
  const avg = N ? len.reduce((a, x) => a + x, 0) / N : 0;
  return docs.map((_, i) => {
    let s = 0;
    for (const t of tok(query)) {
      const n = tf.filter((m) => m.has(t)).length;
      const f = tf[i].get(t) ?? 0;
      if (f === 0) continue;
      const idf = Math.log(1 + (N - n + 0.5) / (n + 0.5));
      s += (idf * f * (k1 + 1)) / (f + k1 * (1 - b + (b * len[i]) / (avg || 1)));
    }
    return s;
  });
}
