/**
 * BM25 with the request's everyday words dropped: a query word whose weight in the projections'
 * domain table is under −τ (it reads as an everyday assistant query's) is left out of the BM25 query.
 * Hit@1 and R@20 of BM25 alone (k1 3, b 1) over a library, for each τ, per request file.
 *
 *   NODE_OPTIONS=--max-old-space-size=12000 npx vite-node scripts/experiments/domain-query-filter.ts -- \
 *     --library SRC[,SRC] --tasks A.jsonl[,B.jsonl] [--taus inf,2,1,0.5,0] [--projections P]
 *
 * Request files as scripts/select/requests.ts reads them; rows without a gold skill are skipped.
 */
import { loadLibrary } from "../../lab/eval/io.js";
import { Bm25Index, bm25Tokens } from "../../src/lexical/bm25.js";
import { Projections } from "../../src/projections/projections.js";
import { DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { readRequests } from "../select/requests.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : undefined; };
const library = (opt("--library") ?? "").split(",").filter(Boolean);
const taskFiles = (opt("--tasks") ?? "").split(",").filter(Boolean);
const taus = (opt("--taus") ?? "inf,2,1,0.5,0").split(",").map((x) => (x === "inf" ? Infinity : Number(x)));
const domain = (await Projections.load(opt("--projections") ?? DEFAULT_PROJECTIONS)).domain;
if (!domain) throw new Error("the projections carry no domain table");
const lib = await loadLibrary(library);
const idx = new Bm25Index(lib.skills.map((s) => ({ id: s.id, name: s.name, description: s.description, body: s.body })), { k1: 3, b: 1 });

function filtered(text: string, tau: number): string {
  if (tau === Infinity) return text;
  const kept = bm25Tokens(text).filter((w) => { const x = domain!.weightOf(w); return x === undefined || x >= -tau; });
  return kept.length > 0 ? kept.join(" ") : text;
}

console.log(`${lib.skills.length} skills; BM25 Hit@1 / R@20 by τ (words with a domain weight under −τ dropped)`);
console.log(["file", "n", ...taus.map((t) => `τ ${t}`)].join("\t"));
for (const f of taskFiles) {
  const rows = readRequests(f).filter((r) => r.expected !== null);
  const cells = taus.map((tau) => {
    let h1 = 0, r20 = 0;
    for (const r of rows) {
      const top = idx.search(filtered(r.task, tau), 20).map((h) => h.id);
      if (top[0] === r.expected) h1++;
      if (top.includes(r.expected!)) r20++;
    }
    return `${h1} / ${r20}`;
  });
  console.log([f.split("/").pop(), rows.length, ...cells].join("\t"));
}
