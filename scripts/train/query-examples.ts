/**
 * Prints the pseudo-queries the generators make for a few public skills of ../shared/data (one per kind
 * by default), with the characters each masks in its positive: the examples of docs/TRAINING.md.
 *
 *   npx vite-node scripts/train/query-examples.ts [--id <skill id>]... [--seed N] [--stats N]
 *
 * --stats N: over the first N skills of the library, how many give a candidate of each kind, and the
 * mean characters of each kind's queries.
 */
import { parseArgs } from "node:util";
import { join } from "node:path";
import { loadSkills } from "../../src/skills/index.js";
import { candidateQueries, mixQueries, QUERY_KINDS, type PseudoQuery } from "../../lab/train/queries/index.js";

const { values } = parseArgs({ options: { id: { type: "string", multiple: true }, seed: { type: "string" }, stats: { type: "string" } } });
const seed = Number(values.seed ?? 0);
const library = join(import.meta.dirname ?? ".", "..", "..", "..", "shared", "data", "skills-mit.jsonl.gz");
const limit = values.stats ? Number(values.stats) : values.id ? undefined : 3000;
const { skills } = await loadSkills(library, { limit });

if (values.stats) {
  const has = Object.fromEntries(QUERY_KINDS.map((k) => [k, 0]));
  const chars = Object.fromEntries(QUERY_KINDS.map((k) => [k, [0, 0]]));
  const masked = Object.fromEntries(QUERY_KINDS.map((k) => [k, 0]));
  const mixed = Object.fromEntries(QUERY_KINDS.map((k) => [k, 0]));
  for (const s of skills) {
    for (const [k, list] of candidateQueries(s, QUERY_KINDS, seed)) {
      has[k]++;
      for (const q of list) {
        chars[k][0] += q.text.length;
        chars[k][1]++;
        // share of the skill's text (description + body) the query's spans mask
        const cover = new Set<string>();
        for (const sp of q.spans) for (let c = sp.start; c < sp.end; c++) cover.add(`${sp.field}${c}`);
        masked[k] += cover.size / Math.max(1, s.description.length + s.body.length);
      }
    }
    for (const q of mixQueries(s, { seed })) mixed[q.kind]++;
  }
  for (const k of QUERY_KINDS) {
    const n = Math.max(1, chars[k][1]);
    console.log(`${k.padEnd(12)} skills with a candidate ${(has[k] / skills.length).toFixed(3)}  mean chars ${(chars[k][0] / n).toFixed(0)}  mean share masked ${(masked[k] / n).toFixed(3)}  picked by the mix ${mixed[k]}`);
  }
} else {
  const show = (id: string, q: PseudoQuery) => {
    console.log(`\n=== ${q.kind} — ${id}\n${q.text}\n--- masks: ${q.spans.map((s) => `${s.field}[${s.start}, ${s.end})`).join(" ")}`);
  };
  const wanted = values.id ?? [];
  for (const s of wanted.length ? skills.filter((x) => wanted.includes(x.id)) : []) {
    for (const [, list] of candidateQueries(s, QUERY_KINDS, seed)) show(s.id, list[0]);
  }
  if (!wanted.length) {
    // The first English skill (by the ASCII share of its text) that gives a candidate of every kind.
    const ascii = (t: string) => t.replace(/[^\x00-\x7f]/g, "").length / Math.max(1, t.length);
    const s = skills.find((x) => ascii(x.body) > 0.97 && x.body.length < 6000 && candidateQueries(x, QUERY_KINDS, seed).size === QUERY_KINDS.length);
    if (!s) throw new Error("no skill gives every kind");
    console.log(`skill ${s.id} (${s.name}), ${s.body.length} body characters`);
    for (const [, list] of candidateQueries(s, QUERY_KINDS, seed)) show(s.id, list[0]);
  }
}
