/**
 * Word forms over short requests: BM25 (the projections' k1, b) over a small library with the words
 * as written, plural-stemmed (Harman's S-stemmer) and light-suffix-stemmed, Hit@1 per request file.
 *
 *   npx vite-node scripts/experiments/stem-probe.ts -- REQUESTS[,MORE] [--skills DIR[,LIBRARY.jsonl]]
 */
import { loadSkills } from "../../src/skills/index.js";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { bm25Tokens } from "../../src/lexical/postings.js";
import { readRequests } from "../select/requests.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : undefined; };
const sources = (opt("--skills") ?? "examples/skills").split(",").filter(Boolean);
const files = (argv[0] ?? "").split(",").filter(Boolean);

const sStem = (t: string) => {
  if (t.length > 3 && t.endsWith("ies") && !t.endsWith("eies") && !t.endsWith("aies")) return t.slice(0, -3) + "y";
  if (t.length > 3 && t.endsWith("es") && !t.endsWith("aes") && !t.endsWith("ees") && !t.endsWith("oes")) return t.slice(0, -1);
  if (t.length > 2 && t.endsWith("s") && !t.endsWith("us") && !t.endsWith("ss")) return t.slice(0, -1);
  return t;
};
// light: plural, then one of -ing / -ed / -ize / -ise / -er / -ation cut when 4+ letters stay
const light = (w: string) => {
  let t = sStem(w);
  for (const suf of ["ization", "isation", "ation", "izing", "ising", "ized", "ised", "izes", "ize", "ise", "ing", "ed", "er"]) {
    if (t.endsWith(suf) && t.length - suf.length >= 4) { t = t.slice(0, -suf.length); break; }
  }
  if (t.endsWith("e") && t.length > 4) t = t.slice(0, -1);
  return t;
};
const forms: Record<string, (t: string) => string> = { asis: (t) => t, s: sStem, light };
const skills = (await Promise.all(sources.map((s) => loadSkills(s)))).flatMap((l) => l.skills);
const sets = files.map((f) => ({ file: f, tasks: readRequests(f).filter((r) => r.expected !== null) }));
for (const [name, f] of Object.entries(forms)) {
  const tx = (s: string) => bm25Tokens(s).map(f).join(" ");
  const idx = new Bm25Index(skills.map((s) => ({ id: s.id, name: tx(s.name), description: tx(s.description), body: tx(s.body ?? "") })), { k1: 3, b: 1 });
  const row: string[] = [];
  let all = 0, n = 0;
  for (const set of sets) {
    let right = 0;
    for (const r of set.tasks) {
      const top = idx.search(tx(r.task), 1)[0];
      const ok = top !== undefined && (top.id === r.expected || top.id.endsWith(`/${r.expected}`));
      if (ok) right++;
      else if (process.env.SHOW === name) console.log(`  ${name} miss: ${r.task.slice(0, 90)} → ${top?.id} (want ${r.expected})`);
    }
    row.push(`${right}/${set.tasks.length}`);
    all += right; n += set.tasks.length;
  }
  console.log(`${name.padEnd(6)} ${row.join("  ")}  all ${all}/${n}`);
}
