// How far a lexical match over the embedded backbone's own tokens can go: BM25 whose terms are
// gavel-mini's token ids (each skill's name, description and body tokenized by the model, cut to its
// first L tokens, or whole), beside the shipped lexical expert (words), over the benchmark's library
// (its golds mixed into the public skills), on SWE-Skills-Bench validation (batches 1-5) and test
// (6-10). The ℓ1 glance is close to a weighted lexical match over what its keys read (BENCHMARKS, "The
// glance's key budget"), so this bounds what any vote over ℓ1 keys of the same tokens could reach.
//
// Usage: npx vite-node scripts/lexical/token-ceiling.ts -- [--k1 3] [--b 1] [--budgets 1536,4096,0]
//   [--tokenizer PATH] [--lower] [--terms tokens|words|tail2|pieces]
//   (a budget of 0 reads each skill whole; --tokenizer reads the tokens of another vocabulary instead
//   of gavel-mini's: an ES module whose `encode(text)` returns token ids, such as gpt-tokenizer's
//   `esm/encoding/cl100k_base.js`, installed outside the repository; --lower tokenizes skills and
//   tasks lower-cased, as the lexical expert reads them; --terms words makes each term a whole word's
//   token ids (a word starts at a piece that opens with SentencePiece's space or is not alphanumeric),
//   a stand-in for a glance whose keys tell words apart, and tail2 a word's last two token ids, for a
//   key at a word's last token that reads one token back; gavel-mini's vocabulary only)
import { defaultModelPaths } from "../../src/defaults.js";
import { Model } from "../../src/model/Model.js";
import { benchSplits } from "./bench-splits.js";
import { Bm25Index } from "../../src/lexical/bm25.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = args.indexOf(n); return i >= 0 ? args.splice(i, 2)[1] : undefined; };
const k1 = Number(opt("--k1") ?? 3);
const b = Number(opt("--b") ?? 1);
const budgets = (opt("--budgets") ?? "1536,4096,0").split(",").map(Number);
const tokenizerPath = opt("--tokenizer");
const lower = args.includes("--lower");
const terms = opt("--terms") ?? "tokens";
if (!["tokens", "words", "tail2", "pieces"].includes(terms) || (terms !== "tokens" && tokenizerPath)) throw new Error(`--terms: tokens, words or tail2 (gavel-mini's vocabulary only)`);

const { routable, splits } = await benchSplits();

const model = tokenizerPath ? undefined : await Model.load(defaultModelPaths().model, { contextSize: 512 });
const external = tokenizerPath ? ((await import(tokenizerPath)) as { encode(text: string, o?: { disallowedSpecial?: Set<string> }): number[] }) : undefined;
const tokenize = async (raw: string): Promise<Int32Array> => {
  const text = lower ? raw.toLowerCase() : raw;
  return external ? Int32Array.from(external.encode(text, { disallowedSpecial: new Set() })) : model!.tokenizeAsync(text);
};
// a token id (or a word's ids) as a word the lexical tokenizer keeps whole
const pieceStarts = new Map<number, boolean>();
const startsWord = (id: number): boolean => {
  let v = pieceStarts.get(id);
  if (v === undefined) { const p = model!.tokenPiece(id); v = p.length === 0 || p[0] === "\u2581" || p[0] === " " || !/[\p{L}\p{N}]/u.test(p[0]); pieceStarts.set(id, v); }
  return v;
};
const pieceTerms = new Map<number, string>();
const pieceTerm = (id: number): string => {
  let v = pieceTerms.get(id);
  if (v === undefined) {
    const p = model!.tokenPiece(id).replace(/^[\u2581 ]+/, "").toLowerCase();
    v = /^[\p{L}\p{N}]+$/u.test(p) ? p : `x${Array.from(p, (c) => c.codePointAt(0)!.toString(16)).join("x")}`;
    pieceTerms.set(id, v);
  }
  return v;
};
const words = (ids: ArrayLike<number>) => {
  if (terms === "tokens") return Array.from(ids, (x) => `t${x}`).join(" ");
  if (terms === "pieces") return Array.from(ids, (x) => `p${pieceTerm(x)}`).join(" ");
  const out: string[] = [];
  let cur: number[] = [];
  const flush = () => { if (cur.length) out.push(`t${(terms === "tail2" ? cur.slice(-2) : cur).join("x")}`); cur = []; };
  for (let i = 0; i < ids.length; i++) { if (startsWord(ids[i])) flush(); cur.push(ids[i]); }
  flush();
  return out.join(" ");
};
const t0 = Date.now();
const docs: Int32Array[] = [];
for (const s of routable) docs.push(await tokenize(`${s.name}\n${s.description}\n${s.body ?? ""}`));
const queries = Object.fromEntries(await Promise.all(Object.entries(splits).map(async ([k, ts]) =>
  [k, await Promise.all(ts.map(async (t) => words(await tokenize(t.text))))] as const)));
const lens = docs.map((d) => d.length).sort((x, y) => x - y);
console.log(`${tokenizerPath ?? "gavel-mini"}${lower ? ", lower-cased" : ""}, terms ${terms}: ${routable.length} skills tokenized in ${((Date.now() - t0) / 1000).toFixed(0)} s: p10 ${lens[Math.floor(lens.length * 0.1)]} p50 ${lens[Math.floor(lens.length / 2)]} p90 ${lens[Math.floor(lens.length * 0.9)]}; k1 ${k1}, b ${b}`);

function score(index: Bm25Index, name: string, query: (split: string, i: number, text: string) => string) {
  const parts: string[] = [];
  for (const [k, ts] of Object.entries(splits)) {
    let hit1 = 0, r20 = 0;
    ts.forEach((t, i) => {
      const rank = index.search(query(k, i, t.text), 20).findIndex((h) => t.accepted.has(h.id));
      if (rank === 0) hit1++;
      if (rank >= 0) r20++;
    });
    parts.push(`${k} (${ts.length}) Hit@1 ${(hit1 / ts.length).toFixed(3)} R@20 ${(r20 / ts.length).toFixed(3)}`);
  }
  console.log(`${name.padEnd(28)} ${parts.join("  ")}`);
}

score(new Bm25Index(routable.map((s) => ({ id: s.id, name: s.name, description: s.description, body: s.body })), { k1, b }), "words, whole (the expert)", (_k, _i, text) => text);
for (const L of budgets) {
  const index = new Bm25Index(routable.map((s, i) => ({ id: s.id, name: "", description: "", body: words(L > 0 ? docs[i].subarray(0, L) : docs[i]) })), { k1, b });
  score(index, `model tokens, ${L > 0 ? `first ${L}` : "whole"}`, (k, i) => queries[k][i]);
}
await model?.dispose();
