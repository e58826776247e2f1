/**
 * gavel-mini's verdict over BM25's best k: for each request of the files (its first gold expected),
 * the verdict's L, V and S = g + αL + γV of every one of the example skills (`Router.rank`), and how
 * often the best of BM25's best k by each read-out is the gold, against BM25's own first pick.
 *
 *   npx vite-node scripts/experiments/verdict-pool.ts -- A.jsonl [B.jsonl …]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { loadSkills } from "../../src/skills/index.js";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { readRequests } from "../select/requests.js";
const files = process.argv.slice(2).filter((a) => a !== "--");
const model = await Model.load(DEFAULT_MODEL, { contextSize: 2048 });
const proj = await Projections.load(DEFAULT_PROJECTIONS);
const dir = mkdtempSync(join(tmpdir(), "gavel-verdict-pool-"));
const router = await Router.open(model, { projections: proj, bankDir: join(dir, "bank") });
await router.install("examples/skills");
const { skills } = await loadSkills("examples/skills");
const idx = new Bm25Index(skills.map((s) => ({ id: s.id, name: s.name, description: s.description, body: s.body })), { k1: 3, b: 1 });
for (const f of files) {
  const tasks = (await readRequests(f)).filter((t) => t.expected);
  const tally: Record<string, number> = {};
  const add = (k: string, ok: boolean) => { tally[k] = (tally[k] ?? 0) + (ok ? 1 : 0); };
  for (const t of tasks) {
    const s = idx.scores(t.task);
    const order = [...s.keys()].sort((a, b) => s[b]! - s[a]!).map((i) => skills[i]!.id);
    const r = await router.rank(t.task, { glanceTop: 24, verdictTop: 24 });
    const by = new Map(r.verdict.map((c) => [c.skill, c]));
    add("bm25", order[0] === t.expected);
    for (const k of [2, 3, 5, 24]) {
      const pool = order.slice(0, k).map((id) => by.get(id)!).filter(Boolean);
      for (const key of ["L", "V", "S"] as const) {
        const best = pool.reduce((a, b) => (b[key] > a[key] ? b : a));
        add(`${key}@bm25top${k}`, best.skill === t.expected);
      }
    }
  }
  console.log(f.split("/").pop(), tasks.length, JSON.stringify(tally));
}
await router.close?.();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
