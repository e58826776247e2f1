/**
 * The hostile table of issue 17 (section 6), re-measured, and the data behind the hub and echo
 * thresholds (src/route/probes.ts).
 *
 *   npm run bench -- hostile            the table: each hostile variant added to the 24 example skills,
 *                                       the tasks routed with the embedded default pair, the tasks each
 *                                       variant wins, with and without excludeFlagged
 *   npm run bench -- hostile calibrate [public=200]
 *                                       the probes' top-match share of every example skill, of the first
 *                                       N public skills of ../shared/data/skills-mit.jsonl.gz and of the
 *                                       variants; the longest verbatim word run each task shares with
 *                                       each example skill
 *
 * Tasks: the 12 of examples/demo-tasks.json and 12 more below (one each for example skills the demo
 * tasks do not cover): 22 in-domain tasks and 2 off-domain prompts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { Router } from "../src/route/Router.js";
import { Library } from "../src/bank/library.js";
import { RenderEncoder } from "../src/render/encode.js";
import { installSkills } from "../src/route/install.js";
import { probeBreadth, HUB_SHARE, longestSharedRun, words } from "../src/route/probes.js";
import { taskBudgets } from "../src/route/parts.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../src/defaults.js";
import { loadSkills } from "../src/skills/index.js";
import { HOSTILE_KINDS, hostileSkill } from "../test/helpers/hostile-skills.js";
import { routingTasks } from "./routing-tasks.js";

const root = resolve(".");
const skillsDir = join(root, "examples", "skills");
const tasks = routingTasks(root);

// the demo's settings (src/cli/commands/demo.ts): context 16,384, 40 sequences, flash attention, skill budget 1,024
const model = await Model.load(DEFAULT_MODEL, { contextSize: 16_384, sequences: 40, flashAttention: true });
const SKILL_BUDGET = 1024;
const projections = await Projections.load(DEFAULT_PROJECTIONS);
const machine = `${cpus().length} × ${cpus()[0].model}, ${new Date().toISOString().slice(0, 10)}, model ${model.info.description}`;
const mode = process.argv[2] ?? "table";

if (mode === "calibrate") {
  const nPublic = Number(process.argv[3] ?? 200);
  const dir = mkdtempSync(join(tmpdir(), "gavel-hostile-"));
  const library = await Library.open(dir, projections, { create: true });
  const skillBudget = SKILL_BUDGET;
  const encoder = new RenderEncoder(model, skillBudget);
  const parts = { model, projections, encoder, library, ...taskBudgets(model.info.contextSize, skillBudget, encoder), keyBudget: skillBudget, keep: "end" as const };
  console.log(`machine: ${machine}`);
  const report = async (label: string) => {
    const b = await probeBreadth(parts);
    const rows = [...b.entries()].sort((x, y) => y[1].share - x[1].share);
    const shares = rows.map((r) => r[1].share);
    console.log(`\n${label}: ${rows.length} skills; top-match share max ${(shares[0] * 100).toFixed(1)}%, p99 ${(shares[Math.floor(shares.length * 0.01)] * 100).toFixed(1)}%; skills ≥ ${HUB_SHARE * 100}%: ${shares.filter((s) => s >= HUB_SHARE).length}`);
    for (const [id, x] of rows.slice(0, 6)) console.log(`  ${(x.share * 100).toFixed(1).padStart(5)}%  g-share ${(x.gShare * 100).toFixed(1)}%  m̄ ${x.meanM.toFixed(3)}  ${id}`);
    const g = rows.map((r) => r[1].gShare).sort((a, b) => b - a);
    console.log(`  by g: max ${(g[0] * 100).toFixed(1)}%, next ${g.slice(1, 5).map((x) => (x * 100).toFixed(1) + "%").join(", ")}`);
    return b;
  };
  /** Each hostile variant added alone to the library as it is now: its probes' shares, then removed. */
  const reportEachVariant = async () => {
    for (const kind of HOSTILE_KINDS) {
      const s = { ...hostileSkill(kind, tasks.map((t) => t.task)), id: `hostile-${kind}` };
      await installSkills(parts, [s]);
      const b = await probeBreadth(parts);
      const x = b.get(`hostile-${kind}`)!;
      console.log(`  + ${kind}: share ${(x.share * 100).toFixed(1)}%  g-share ${(x.gShare * 100).toFixed(1)}%  m̄ ${x.meanM.toFixed(3)}`);
      await library.remove(`hostile-${kind}`);
    }
  };
  await installSkills(parts, skillsDir);
  await report("24 example skills");
  await reportEachVariant();
  await installSkills(parts, join(root, "..", "shared", "data", "skills-mit.jsonl.gz"), { limit: nPublic });
  await report(`24 example skills + first ${nPublic} public skills`);
  await reportEachVariant();
  // echo: the longest verbatim word run each task shares with each example skill
  const { skills } = await loadSkills(skillsDir);
  let worst = { run: 0, task: "", skill: "" };
  const runs: number[] = [];
  for (const t of tasks) {
    for (const s of skills) {
      const run = longestSharedRun(words(t.task), words(`${s.name}\n${s.description}\n${s.body}`));
      runs.push(run);
      if (run > worst.run) worst = { run, task: t.task, skill: s.id };
    }
  }
  runs.sort((a, b) => b - a);
  console.log(`\necho: longest shared word run, ${tasks.length} tasks × ${skills.length} example skills: max ${worst.run} (${worst.skill}: ${JSON.stringify(worst.task)}), next ${runs.slice(1, 6).join(", ")}`);
  await library.close();
  rmSync(dir, { recursive: true, force: true });
} else {
  const dir = mkdtempSync(join(tmpdir(), "gavel-hostile-"));
  const router = await Router.open(model, { projections, bankDir: dir, skillBudget: SKILL_BUDGET });
  const base = await router.install(skillsDir);
  console.log(`machine: ${machine}; ${base.installed.length} example skills, ${tasks.length} tasks`);
  const wins = async (variant: string | null, options: Parameters<Router["route"]>[1]) => {
    let won = 0, flagged = 0, correct = 0, served = 0;
    for (const t of tasks) {
      const r = await router.route(t.task, options);
      if (variant !== null && r.skill === variant) {
        won++;
        if (r.flags?.length) flagged++;
      }
      if (t.expected === null ? r.abstained || r.skill === null : r.skill === t.expected) correct++;
      if (variant === "task-helper" && r.skill === variant) served++;
    }
    return { won, flagged, correct, served };
  };
  const b0 = await wins(null, {});
  console.log(`baseline: ${b0.correct}/${tasks.length} tasks correct`);
  const rows: string[] = [];
  for (const kind of HOSTILE_KINDS) {
    const s = hostileSkill(kind, tasks.map((t) => t.task));
    const rep = await router.install([s]);
    const warn = router.list().find((x) => x.name === s.name)?.warnings ?? [];
    const flags = [warn.some((w) => w.startsWith("hub:")) ? "hub" : "", warn.some((w) => w.includes("steer routing")) ? "injection" : ""].filter(Boolean).join(", ");
    const plain = await wins(s.name, {});
    const ex = await wins(s.name, { excludeFlagged: ["hub", "echo", "injection"] });
    rows.push(`| ${kind} | ${flags || "–"} | ${plain.won}/${tasks.length} (${plain.flagged} flagged) | ${plain.correct}/${tasks.length} | ${ex.won}/${tasks.length} | ${ex.correct}/${tasks.length} |`);
    console.log(rows.at(-1), rep.failed.length ? `failed: ${rep.failed.map((f) => f.error.message)}` : "");
    await router.uninstall(s.name);
  }
  console.log("\n| skill added | flags at install | tasks it won (flagged at route) | tasks correct | won with excludeFlagged | correct with excludeFlagged |\n| --- | --- | --- | --- | --- | --- |");
  for (const r of rows) console.log(r);
  await router.close();
  rmSync(dir, { recursive: true, force: true });
}
await model.dispose();

