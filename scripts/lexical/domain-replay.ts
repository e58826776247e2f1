/**
 * Replays a projections file's abstention decision, through the runtime's own functions
 * (src/route/abstention.ts, the projections' domain table), over the per-query records that
 * domain-band.py fits on: what a route over those libraries decides, from the lexical reach, the
 * library's size and the task's domain score (the large band reads no more). Prints the declines and
 * the prompts let through per library and split, for each projections file given.
 *
 *   npx vite-node scripts/lexical/domain-replay.ts -- LP.jsonl RECORDS30K_DIR SHORT1K SHORT3K P.gguf [P2.gguf …]
 *
 * Arguments as domain-band.py's (LP.jsonl maps the short requests' record ids to their texts).
 */
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { Projections } from "../../src/projections/projections.js";
import { abstentionFeatures, decideAbstention } from "../../src/route/abstention.js";
import { lexicalReach } from "../../src/lexical/postings.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const [lpPath, d30, s1k, s3k, ...files] = args;
if (!lpPath || !d30 || !s1k || !s3k || files.length === 0) throw new Error("usage: domain-replay.ts LP.jsonl RECORDS30K_DIR SHORT1K SHORT3K P.gguf [P2.gguf …]");
const lines = (p: string) => (p.endsWith(".gz") ? gunzipSync(readFileSync(p)) : readFileSync(p)).toString("utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const texts = new Map<string, string>();
for (const r of lines(lpPath)) if (r.id) texts.set(r.id, r.text);
for (const r of lines("bench/data/off-domain-prompts.jsonl")) texts.set(r.id, r.text);
for (const r of lines("../shared/data/swe-skills-bench/tasks.jsonl")) texts.set(r.id, r.text);

interface Rec { id: string; batch: string; lexical: { size: number; top: { s: number }[] } }
interface Row { text: string; off: boolean; fit: boolean; reach: number; logN: number }
const FIT_REQUESTS = new Set(["sl1", "sl2", "sl3", "sl4", "sl5", "fresh1", "mid1", "mid2", "mid3", "mid4", "mid5", "demo1"]);
const batchNo = (b: string) => Number(b.replace(/\D/g, ""));
const row = (r: Rec, off: boolean, fit: boolean): Row => {
  const text = texts.get(r.id.split("@")[0]);
  if (text === undefined) throw new Error(`no text for record ${r.id}`);
  return { text, off, fit, reach: lexicalReach(r.lexical.top[0]?.s ?? 0, r.lexical.size), logN: Math.log(r.lexical.size) };
};
const libs = new Map<string, Row[]>();
libs.set("30,593 skills", [
  ...lines(`${d30}/val.jsonl.gz`).map((r: Rec) => row(r, false, true)),
  ...lines(`${d30}/test.jsonl.gz`).map((r: Rec) => row(r, false, false)),
  ...lines(`${d30}/offdomain.jsonl.gz`).filter((r: Rec) => r.id.startsWith("offhw")).map((r: Rec) => row(r, true, batchNo(r.batch) <= 5)),
]);
for (const [name, path] of [["1,024 skills", s1k], ["3,024 skills", s3k]] as const) {
  libs.set(name, lines(path).map((r: Rec) => {
    const off = r.id.startsWith("offhw");
    return row(r, off, off ? batchNo(r.batch) <= 5 : FIT_REQUESTS.has(r.batch));
  }));
}

for (const file of files) {
  const p = await Projections.load(file);
  const abstains = (r: Row) => {
    const domain = p.domain?.score(r.text);
    const f = abstentionFeatures([{ S: 1, g: 0, V: NaN }], { reach: r.reach, logN: r.logN, ...(domain !== undefined ? { domain } : {}) });
    return decideAbstention(p.abstention, f).abstain;
  };
  console.log(`${file}${p.domain ? ` (domain table of ${p.domain.words} words)` : ""}: declined / let through (in-domain n, prompts n)`);
  console.log("| library | fitting | held out |\n| --- | --- | --- |");
  for (const [name, rows] of libs) {
    const cell = (fit: boolean) => {
      const ins = rows.filter((r) => r.fit === fit && !r.off), off = rows.filter((r) => r.fit === fit && r.off);
      return `${(ins.filter(abstains).length / ins.length).toFixed(3)} / ${(off.filter((r) => !abstains(r)).length / off.length).toFixed(3)} (${ins.length}, ${off.length})`;
    };
    console.log(`| ${name} | ${cell(true)} | ${cell(false)} |`);
  }
  console.log();
}
