/**
 * Re-ranker records over a real installed bank (a library smaller than the benchmark's 30,593
 * skills), for fitting and checking the re-ranker where the library's size moves its lexical
 * features. Per task, over the bank's routable skills:
 * - every skill's glance g (`Router.glance`, all of them);
 * - BM25 under the lexical expert's constants (k1 3, b 1) over the full texts, the pool (the glance's
 *   best 20 ∪ BM25's best 20, as src/route/rerank.ts builds it);
 * - the verdict's L and V for the pool members some cheap stage puts in its best `--top`: taken from
 *   the 30,593-skill records where they hold them (L and V of a (task, skill) pair do not depend on
 *   the library), computed here through `Router.rank` otherwise.
 *
 *   npx vite-node scripts/select/bank-records.ts -- BANK LIBRARY.jsonl[,…] OUT.jsonl.gz
 *     [--records DIR/val.jsonl.gz] [--batches 1-5] [--cheap a.json,b.json] [--top 4] [--limit N]
 *
 * `--cheap`: cascade JSON files (scripts/select/rerank.ts's cascade*.json) whose cheap stages choose
 * which candidates get a verdict. Appends per task (resumable: tasks already in OUT are skipped).
 */
import { existsSync, readFileSync, appendFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
import { loadLibrary, readPerQuery } from "../../lab/eval/io.js";
import { acceptedIds, libraryIndex } from "../../lab/eval/metrics.js";
import { loadTasks, selectTasks } from "../../lab/eval/tasks.js";
import { defaultModelPaths } from "../../src/defaults.js";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { nameBigramShare, nameTokens, nameVerbatim, share, taskText } from "../../src/lexical/name-features.js";
import { Model } from "../../src/model/Model.js";
import { Projections } from "../../src/projections/projections.js";
import { stageScore, type RerankStage } from "../../src/projections/rerank-model.js";
import { Router } from "../../src/route/Router.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string, d: string) => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : d; };
const recordsPath = opt("--records", "bench/results/2026-11-28-h200-default/l1/val.jsonl.gz");
const batches = opt("--batches", "1-5");
const cheapFiles = opt("--cheap", "bench/results/2026-11-28-cpu-rerank/cascade-demo.json").split(",");
const top = Number(opt("--top", "4"));
const limit = Number(opt("--limit", "Infinity"));
const [bankDir, libraryList, out] = argv;
if (!bankDir || !libraryList || !out) throw new Error("usage: bank-records.ts BANK LIBRARY.jsonl[,…] OUT.jsonl.gz [--records …] [--batches 1-5] [--cheap a.json,…] [--top 4]");
const T = 53.8174;
const cheaps = cheapFiles.map((f) => (JSON.parse(readFileSync(f, "utf8")) as { cheap: RerankStage }).cheap);

const { skills } = await loadLibrary(libraryList.split(","));
const index = libraryIndex(skills);
const { model: modelPath, projections: projPath } = defaultModelPaths();
const model = await Model.load(modelPath, { contextSize: 2048 });
const projections = (await Projections.load(projPath)).withCalibration({ rerank: null });
const router = await Router.open(model, { projections, bankDir, readOnly: true, skillBudget: 512 });
const installed = router.list().map((s) => s.id);
const inBank = new Set(installed);
const lib = skills.filter((s) => inBank.has(s.id) && !s.disableModelInvocation);
const bm = new Bm25Index(lib, { k1: 3, b: 1 });
const known = new Map<string, Map<string, { L: number; V: number }>>();
for (const r of await readPerQuery(recordsPath)) known.set(r.id, new Map((r.verdict ?? []).filter((p) => p.L !== undefined).map((p) => [p.skill, { L: p.L!, V: p.V! }])));
const done = new Set<string>();
if (existsSync(out)) for (const l of gunzipSync(readFileSync(out)).toString().split("\n")) if (l) done.add((JSON.parse(l) as { id: string }).id);
const all = selectTasks(await loadTasks("../shared/data/swe-skills-bench/tasks.jsonl"), { batches }).filter((t) => [...acceptedIds(t.gold_skill_ids, index)].some((id) => inBank.has(id)));
console.log(`bank ${bankDir}: ${lib.length} routable skills; ${all.length} tasks (batches ${batches}), ${done.size} already done`);
let n = 0, computed = 0;
const t0 = Date.now();
// the stride order 97 · i mod n: a run stopped early still samples every batch
for (const t of Array.from({ length: all.length }, (_, i) => all[(97 * i) % all.length])) {
  if (done.has(t.id) || n >= limit) continue;
  n++;
  const s = bm.scores(t.text), luc = bm.scores(t.text, { k1: 1.2, b: 0.75 });
  const g = new Map((await router.glance(t.text, { topK: lib.length })).map((h) => [h.skill, h.g]));
  const byG = [...lib.keys()].sort((a, b) => (g.get(lib[b].id) ?? -Infinity) - (g.get(lib[a].id) ?? -Infinity) || a - b);
  const byS = [...lib.keys()].sort((a, b) => s[b] - s[a] || a - b);
  const pool = [...new Set([...byG.slice(0, 20), ...byS.slice(0, 20)])];
  const task = taskText(t.text);
  const sMax = Math.max(0, ...pool.map((i) => s[i])), lMax = Math.max(0, ...pool.map((i) => luc[i]));
  const sOrd = [...pool].sort((a, b) => s[b] - s[a] || pool.indexOf(a) - pool.indexOf(b));
  const feats = pool.map((i) => {
    const who = { id: lib[i].id, name: lib[i].name };
    const nt = nameTokens(who);
    return { bm25: s[i] / T, bm25Rel: sMax > 0 ? s[i] / sMax : 0, bm25Rank: Math.log1p(sOrd.indexOf(i)), lucene: lMax > 0 ? luc[i] / lMax : 0, nameShare: share(nt, task.tokens), nameVerbatim: nameVerbatim(who, task), nameTitle: share(nt, task.title), nameBigram: nameBigramShare(who, task) };
  });
  const need = new Set<string>();
  for (const c of cheaps) {
    const sc = feats.map((f) => stageScore(c, { ...f, g: 0, gRank: 0, L: NaN, LRel: NaN, LRank: NaN, V: NaN }));
    pool.map((_, k) => k).sort((a, b) => sc[b] - sc[a] || a - b).slice(0, top).forEach((k) => need.add(lib[pool[k]].id));
  }
  const have = known.get(t.id) ?? new Map();
  const missing = [...need].filter((id) => !have.has(id));
  const lv = new Map(have);
  if (missing.length) {
    const r = await router.rank(t.text, { glanceTop: 1, verdictTop: 0, also: missing });
    for (const c of r.verdict) lv.set(c.skill, { L: c.L, V: c.V });
    computed += missing.length;
  }
  const accepted = [...acceptedIds(t.gold_skill_ids, index)].filter((id) => inBank.has(id));
  const rec = {
    id: t.id, batch: t.batch, size: lib.length, accepted, lexicalTop: lib[byS[0]].id,
    pool: pool.map((i, k) => ({ skill: lib[i].id, g: g.get(lib[i].id) ?? NaN, s: s[i], ...feats[k], ...(lv.has(lib[i].id) ? lv.get(lib[i].id) : {}) })),
  };
  appendFileSync(out, gzipSync(JSON.stringify(rec) + "\n"));
  if (n % 10 === 0) console.log(`  ${n} tasks, ${computed} verdicts computed, ${((Date.now() - t0) / n / 1000).toFixed(1)} s a task`);
}
console.log(`done: ${n} tasks, ${computed} verdicts computed`);
await router.close();
await model.dispose();
