/**
 * Routing over a small library, method by method: each request file's tasks over one skills folder
 * (default examples/skills), scored by the glance alone, the lexical expert alone (BM25 at the
 * projections' k1 and b over each skill's name, description and body), and the router's route with
 * abstention on and off, under the given projections and under each variant: `rerank@N` (the shipped
 * re-ranker from N routable skills on), `gRank@W` / `g@W` (its cheap stage also reads the glance,
 * − W·ln(1 + the rank by g) or + W·g/0.03). Prints a line per request and method that misses, and a
 * table of right / declined / wrong per file and method.
 *
 *   npx vite-node scripts/select/small-library.ts -- REQUESTS.json[,MORE.json] [--skills DIR[,LIBRARY.jsonl]]
 *     [--projections P.gguf] [--variants rerank@0,...] [--verdict-off] [--live] [--quiet]
 *
 * --live also selects as a live agent would: the request as a chat's user message (after a short
 * system message), rendered with the model's chat template, its ℓ* rows appended to a fresh
 * `router.live()` context, then `selectLive` with abstention on, the library's own cut on
 * (`<name>, live`) and off (`<name>, live, no library cut`).
 *
 * A request file is a JSON array of {task, expected} (expected null: no skill serves it), or JSONL of
 * {text, gold_skill_ids} (bench/data/short-requests-examples.jsonl), its first gold expected.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { loadSkills } from "../../src/skills/index.js";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { readRequests } from "./requests.js";
import { selectLive } from "../../src/route/firing.js";
import { renderChat } from "../../src/render/template.js";
import type { ChatMessage } from "../../src/render/index.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : undefined; };
const flag = (n: string) => { const i = argv.indexOf(n); return i >= 0 ? (argv.splice(i, 1), true) : false; };
// --skills A[,B]: the library, one or more skill folders or library.jsonl[.gz] files installed in turn
const skillsDir = opt("--skills") ?? "examples/skills";
const sources = skillsDir.split(",").filter(Boolean);
const projPath = opt("--projections") ?? DEFAULT_PROJECTIONS;
const variants = (opt("--variants") ?? "").split(",").filter(Boolean);
const quiet = flag("--quiet");
// --verdict-off: each router also routes with the verdict off (its cheap stage, or the first stage)
const verdictOff = flag("--verdict-off");
const live = flag("--live");
const files = (argv[0] ?? "").split(",").filter(Boolean);
if (files.length === 0) throw new Error("usage: small-library.ts REQUESTS.json[,MORE.json] [--skills DIR] [--projections P] [--variants rerank@N,…]");

const sets = files.map((f) => ({ file: f, tasks: readRequests(f) }));
const base = await Projections.load(projPath);
function variant(name: string): Projections {
  const m = /^rerank@(\d+)$/.exec(name);
  if (m && base.rerank) return base.withCalibration({ rerank: { ...base.rerank, minSkills: Number(m[1]) } });
  // gRank@W, g@W: the cheap stage also reads the glance, − W·gRank or + W·g/0.03
  const c = /^(gRank|g)@([0-9.]+)$/.exec(name);
  if (c && base.rerank) {
    const [feature, w] = [c[1] as "g" | "gRank", Number(c[2])];
    const s = base.rerank.cheap;
    const cheap = { features: [...s.features, feature], weights: [...s.weights, feature === "g" ? w : -w], mean: [...s.mean, 0], scale: [...s.scale, feature === "g" ? 0.03 : 1] };
    return base.withCalibration({ rerank: { ...base.rerank, cheap } });
  }
  throw new Error(`unknown variant ${name}`);
}
const skills = (await Promise.all(sources.map((s) => loadSkills(s)))).flatMap((l) => l.skills);
// requests name the skill written for them by id (an example skill's folder): a public skill of the
// same name is not that skill
const bm25 = new Bm25Index(skills.map((s) => ({ id: s.id, name: s.name, description: s.description, body: s.body })), { k1: base.lexicalK1, b: base.lexicalB });
const model = await Model.load(DEFAULT_MODEL, { contextSize: 2048 });
const dir = mkdtempSync(join(tmpdir(), "gavel-small-library-"));
type Tally = { right: number; declined: number; wrong: number };
/** Per route method: how often the verdict ran, and each route's time (ms). */
const runs = new Map<string, { ran: number; ms: number[] }>();
const timed = (method: string, r: { verdict: string | null; timings: { totalMs: number } }) => {
  const t = runs.get(method) ?? { ran: 0, ms: [] };
  if (r.verdict === "ran") t.ran++;
  t.ms.push(r.timings.totalMs);
  runs.set(method, t);
};
const table = new Map<string, Tally>();
const tally = (file: string, method: string, expected: string | null, got: string | null, declined: boolean, task: string) => {
  const key = `${file}\t${method}`;
  const t = table.get(key) ?? { right: 0, declined: 0, wrong: 0 };
  if (got === expected) t.right++; else if (declined) t.declined++; else t.wrong++;
  table.set(key, t);
  if (got !== expected && !quiet) console.log(`MISS ${method.padEnd(22)} ${JSON.stringify(task.slice(0, 72))} → ${declined ? "(declined)" : got} (expected ${expected ?? "a decline"})`);
};
try {
  const routers: [string, Router][] = [];
  for (const [i, name] of ["shipped", ...variants].entries()) {
    const router = await Router.open(model, { projections: name === "shipped" ? base : variant(name), bankDir: join(dir, `bank${i}`) });
    for (const source of sources) await router.install(source);
    routers.push([name, router]);
  }
  for (const { file, tasks } of sets) {
    for (const t of tasks) {
      const g = (await routers[0][1].glance(t.task, { topK: 1 }))[0]?.skill ?? null;
      tally(file, "glance", t.expected, g, false, t.task);
      tally(file, "bm25", t.expected, bm25.search(t.task, 1)[0]?.id ?? null, false, t.task);
      for (const [name, router] of routers) {
        const on = await router.route(t.task, { abstain: true });
        timed(name, on);
        tally(file, `${name}`, t.expected, on.abstained ? null : on.skill, on.abstained, t.task);
        if (t.expected !== null) {
          const off = await router.route(t.task, { abstain: false });
          tally(file, `${name}, abstention off`, t.expected, off.skill, false, t.task);
          if (verdictOff) {
            const nv = await router.route(t.task, { abstain: false, verdict: false });
            tally(file, `${name}, abstention and verdict off`, t.expected, nv.skill, false, t.task);
          }
        }
        if (live) {
          const messages: ChatMessage[] = [{ role: "system", content: "You are a helpful assistant." }, { role: "user", content: t.task }];
          const ctx = router.live();
          const tokens = model.tokenize(renderChat(model.info.chatTemplate ?? null, messages), { special: true, addBos: model.info.addBos });
          await ctx.append(await model.hiddenStates(tokens, ctx.layer));
          for (const cut of [true, false]) {
            const pick = await selectLive(ctx, messages, { libraryCut: cut });
            tally(file, `${name}, live${cut ? "" : ", no library cut"}`, t.expected, pick.abstained ? null : pick.skill, pick.abstained, t.task);
          }
        }
      }
    }
  }
  for (const [, r] of routers) await r.close();
} finally {
  await model.dispose();
  rmSync(dir, { recursive: true, force: true });
}
console.log(`\n${skills.length} skills in ${skillsDir}; projections ${projPath}`);
console.log("file\tmethod\tright\tdeclined\twrong");
for (const [key, t] of table) console.log(`${key}\t${t.right}\t${t.declined}\t${t.wrong}`);
const q = (v: number[], f: number) => [...v].sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor(v.length * f))];
console.log("\nroute (abstention on)\tverdict ran\troute p50 ms\tp95 ms");
for (const [m, t] of runs) console.log(`${m}\t${t.ran} of ${t.ms.length}\t${q(t.ms, 0.5).toFixed(1)}\t${q(t.ms, 0.95).toFixed(1)}`);
