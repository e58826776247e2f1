// Tokenizer and field variants of the lexical expert, judged on SWE-Skills-Bench validation (batches
// 1-5) over the benchmark's library (its golds mixed into the public skills), reported on test (6-10)
// only with --test. Each variant rewrites documents and queries into plain text that the shipped
// tokenizer (src/lexical/postings.ts) then reads, so every variant scores through the same BM25.
//
// Usage: npx vite-node scripts/lexical/variants.ts -- [--test] [--k1 3] [--b 1] [--only name,…]
import { loadLibrary } from "../../lab/eval/io.js";
import { loadTasks } from "../../lab/eval/tasks.js";
import { acceptedIds, libraryIndex } from "../../lab/eval/metrics.js";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { bm25Tokens } from "../../src/lexical/postings.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const flag = (n: string) => { const i = args.indexOf(n); return i >= 0 ? (args.splice(i, 1), true) : false; };
const opt = (n: string) => { const i = args.indexOf(n); return i >= 0 ? args.splice(i, 2)[1] : undefined; };
const test = flag("--test");
const k1 = Number(opt("--k1") ?? 3);
const b = Number(opt("--b") ?? 1);
const only = opt("--only")?.split(",");

const tasks = (await loadTasks("../shared/data/swe-skills-bench/tasks.jsonl")).filter((t) => {
  const n = Number(String(t.batch).replace(/\D/g, ""));
  return test ? n >= 6 : n <= 5;
});
const { skills } = await loadLibrary(["../shared/data/swe-skills-bench/skills.jsonl", "../shared/data/skills-mit.jsonl.gz"]);
const routable = skills.filter((s) => !s.disableModelInvocation);
// accepted: a gold, or a library copy of it (same name and description), as `gavel eval` scores
const lib = libraryIndex(routable);
const scored = tasks.map((t) => ({ text: t.text, accepted: acceptedIds(t.gold_skill_ids, lib) })).filter((t) => t.accepted.size > 0);
console.log(`${test ? "test" : "validation"}: ${scored.length} tasks, ${routable.length} skills, k1 ${k1}, b ${b}`);

// Identifier parts: fooBar → foo bar, HTTPServer → http server, kept beside the whole word.
const camel = (text: string) => text.replace(/[\p{L}\p{N}]+/gu, (w) => {
  const parts = w.replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, "$1 $2").replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, "$1 $2");
  return parts === w ? w : `${w} ${parts}`;
});
// Harman's S-stemmer: plural endings only (ies→y, es→e, s→∅ with its exceptions).
const sStem = (t: string) => {
  if (t.length > 3 && t.endsWith("ies") && !t.endsWith("eies") && !t.endsWith("aies")) return t.slice(0, -3) + "y";
  if (t.length > 3 && t.endsWith("es") && !t.endsWith("aes") && !t.endsWith("ees") && !t.endsWith("oes")) return t.slice(0, -1);
  if (t.length > 2 && t.endsWith("s") && !t.endsWith("us") && !t.endsWith("ss")) return t.slice(0, -1);
  return t;
};
const stemText = (text: string) => bm25Tokens(text).map(sStem).join(" ");
// A light suffix stemmer: the S-stemmer, then one of -ization … -ing / -ed / -er cut where four or
// more letters stay, then a final e (scripts/experiments/stem-probe.ts: short requests).
const LIGHT_SUFFIXES = ["ization", "isation", "ation", "izing", "ising", "ized", "ised", "izes", "ize", "ise", "ing", "ed", "er"];
const lightStem = (w: string) => {
  let t = sStem(w);
  const suf = LIGHT_SUFFIXES.find((x) => t.endsWith(x) && t.length - x.length >= 4);
  if (suf) t = t.slice(0, -suf.length);
  return t.endsWith("e") && t.length > 4 ? t.slice(0, -1) : t;
};
const lightText = (text: string) => bm25Tokens(text).map(lightStem).join(" ");

/** The query with each distinct word repeated f(its count) times. */
function qtfRewrite(q: string, f: (count: number) => number): string {
  const counts = new Map<string, number>();
  for (const t of bm25Tokens(q)) counts.set(t, (counts.get(t) ?? 0) + 1);
  return [...counts].map(([t, c]) => rep(t, f(c))).join(" ");
}
const firstLine = (q: string) => q.split("\n").find((l) => l.trim().length > 0) ?? "";
interface Variant { doc: (s: { name: string; description: string; body?: string }) => { name: string; description: string; body?: string }; query: (q: string) => string }
const id = (x: string) => x;
const rep = (x: string, n: number) => Array.from({ length: n }, () => x).join("\n");
const variants: Record<string, Variant> = {
  baseline: { doc: (s) => s, query: id },
  camel: { doc: (s) => ({ name: camel(s.name), description: camel(s.description), body: camel(s.body ?? "") }), query: camel },
  sstem: { doc: (s) => ({ name: stemText(s.name), description: stemText(s.description), body: stemText(s.body ?? "") }), query: stemText },
  light: { doc: (s) => ({ name: lightText(s.name), description: lightText(s.description), body: lightText(s.body ?? "") }), query: lightText },
  "fields2": { doc: (s) => ({ name: rep(s.name, 2), description: rep(s.description, 2), body: s.body }), query: id },
  "fields3": { doc: (s) => ({ name: rep(s.name, 3), description: rep(s.description, 3), body: s.body }), query: id },
  "name3": { doc: (s) => ({ name: rep(s.name, 3), description: s.description, body: s.body }), query: id },
  // the task's first line (a statement's title) counted k more times
  title2: { doc: (s) => s, query: (q) => rep(firstLine(q), 2) + "\n" + q },
  title4: { doc: (s) => s, query: (q) => rep(firstLine(q), 4) + "\n" + q },
  "desc3": { doc: (s) => ({ name: s.name, description: rep(s.description, 3), body: s.body }), query: id },
  // the query's term counts: each distinct word once (binary), or ⌈√count⌉ times (sublinear)
  qbinary: { doc: (s) => s, query: (q) => [...new Set(bm25Tokens(q))].join(" ") },
  qsqrt: { doc: (s) => s, query: (q) => qtfRewrite(q, (c) => Math.ceil(Math.sqrt(c))) },
  qlog: { doc: (s) => s, query: (q) => qtfRewrite(q, (c) => 1 + Math.floor(Math.log2(c))) },
};

for (const [name, v] of Object.entries(variants)) {
  if (only && !only.includes(name)) continue;
  const t0 = Date.now();
  const index = new Bm25Index(routable.map((s) => ({ id: s.id, ...v.doc(s) })), { k1, b });
  let hit1 = 0, r20 = 0, mrr = 0;
  for (const t of scored) {
    const top = index.search(v.query(t.text), 20);
    const rank = top.findIndex((h) => t.accepted.has(h.id));
    if (rank === 0) hit1++;
    if (rank >= 0) { r20++; mrr += 1 / (rank + 1); }
  }
  const n = scored.length;
  console.log(`${name.padEnd(10)} Hit@1 ${(hit1 / n).toFixed(3)}  R@20 ${(r20 / n).toFixed(3)}  MRR@20 ${(mrr / n).toFixed(3)}  (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
}
