/**
 * Per-query records of the lexical read-out abstention's large band reads (the best BM25 score over a
 * library, k1 3 and b 1 as the route's lexical expert), for request files over a library, without a
 * router: what scripts/lexical/domain-band.py needs of requests that no device run recorded.
 *
 *   NODE_OPTIONS=--max-old-space-size=12000 npx vite-node scripts/lexical/reach-records.ts -- \
 *     --library SRC[,SRC] --tasks A.jsonl[,B.jsonl] OUT.jsonl.gz [--suffix @lib]
 *
 * SRC: skill folders or library.jsonl[.gz] files, installed in turn (their ids deduplicated, the first
 * kept). Each output line: {id (with --suffix appended), batch, lexical: {size, top: [{skill, s}]}}.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { loadLibrary } from "../../lab/eval/io.js";
import { Bm25Index } from "../../src/lexical/bm25.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : undefined; };
const library = (opt("--library") ?? "").split(",").filter(Boolean);
const taskFiles = (opt("--tasks") ?? "").split(",").filter(Boolean);
const suffix = opt("--suffix") ?? "";
const [out] = argv;
if (!out || library.length === 0 || taskFiles.length === 0) throw new Error("usage: reach-records.ts --library SRC[,SRC] --tasks A.jsonl[,B] OUT.jsonl.gz [--suffix @lib]");
const lib = await loadLibrary(library);
const idx = new Bm25Index(lib.skills.map((s) => ({ id: s.id, name: s.name, description: s.description, body: s.body })), { k1: 3, b: 1 });
const lines: string[] = [];
for (const f of taskFiles) {
  for (const l of readFileSync(f, "utf8").split("\n")) {
    if (!l.trim()) continue;
    const t = JSON.parse(l) as { id: string; text: string; batch?: string };
    const top = idx.search(t.text, 5).map((h) => ({ skill: h.id, s: Math.round(h.score * 1e4) / 1e4 }));
    lines.push(JSON.stringify({ id: t.id + suffix, batch: t.batch ?? "", lexical: { size: lib.skills.length, top } }));
  }
}
writeFileSync(out, gzipSync(lines.join("\n") + "\n"));
console.log(`${out}: ${lines.length} records over ${lib.skills.length} skills`);
