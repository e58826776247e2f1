/**
 * `gavel demo`: the first command to run on a fresh install. Routes the example tasks of
 * examples/demo-tasks.json over the skills of examples/skills/ with the embedded default model and
 * projections (src/defaults.ts), on CPU, and prints each ruling.
 *
 * The bank lives in a cache folder under os.tmpdir() keyed by the model's and the projections' content
 * hashes, so the first run pays one forward pass per skill and later runs only route (the bank is
 * incremental: an edited skill is re-encoded, an unchanged one costs nothing).
 */
import { createHash } from "node:crypto";
import { createReadStream, existsSync, statSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { GavelError, invalidArgument, clip, clipMessage } from "../../errors.js";
import { Model } from "../../model/Model.js";
import { Router, type Candidate, type InstallReport, type RouteResult, type SkillWarnings } from "../../route/index.js";
import { PACKAGE_ROOT, resolveModelPath, resolveProjectionsPath, type ResolvedPath } from "../../defaults.js";
import { intArg, nonEmptyArgs } from "../ui/options.js";
import { Progress } from "../ui/progress.js";
import { failureText, safeText } from "../ui/safe-text.js";
import { formatMs } from "../ui/table.js";
import { shortlistTable } from "./route.js";
import type { Command } from "./types.js";
import { UsageError } from "../usage-error.js";
import { parseFlags } from "../ui/flags.js";

/** The example skills render to ~450–650 tokens; 1024 keeps them whole and leaves room for the task. */
const SKILL_BUDGET = 1024;
/**
 * KV cells of the one pool that every sequence shares (llama.cpp's unified cache). Each verdict
 * sequence (skill render + task) stays within the model's trained 2048 positions, checked per task
 * below; the pool is larger so that the KV of every shortlisted skill's render stays cached from one
 * task to the next (about 24 × 550 cells for the example skills) instead of being recomputed for each
 * task, as a 2048-cell pool (room for three renders) forces. Costs ~170 MB of f32 KV.
 */
const CONTEXT_SIZE = 16_384;
/** Sequences: one scratch, the rest hold cached prefixes (30: every example skill, with room). */
const SEQUENCES = 40;
/** Room for the verdict's question and chat scaffolding around the task, in tokens. */
const VERDICT_ROOM = 128;
/** Shortlist rows printed per task (the expected skill is always shown, wherever it ranks). */
const SHOWN_ROWS = 6;

/** The example skills the demo routes over (`--skills` replaces them). */
export const DEFAULT_SKILLS_DIR = join(PACKAGE_ROOT, "examples", "skills");
/** The example tasks, each with the skill it was written for (`--tasks` replaces them). */
export const DEFAULT_TASKS_FILE = join(PACKAGE_ROOT, "examples", "demo-tasks.json");

/**
 * One example task and the skill it was written for; `null` for an off-domain prompt that no skill
 * serves, where the right answer is to load nothing (abstain).
 */
export interface DemoTask {
  task: string;
  expected: string | null;
}

/** One routed task, as `--json` prints it. */
export interface DemoTaskResult extends DemoTask {
  chosen: string | null;
  /** Routed to the expected skill, or abstained on an off-domain prompt (`expected: null`). */
  correct: boolean;
  abstained: boolean;
  /** Why it abstained or not (when abstention was on). */
  abstention?: RouteResult["abstention"];
  verdict: RouteResult["verdict"];
  shortlist: RouteResult["shortlist"];
  timings: RouteResult["timings"];
}

/** The whole `--json` report. */
export interface DemoReport {
  model: string;
  projections: string;
  skills: string;
  bank: string;
  install: { installed: number; unchanged: number; removed: number; failed: { where: string; error: string }[]; warnings: SkillWarnings[]; seconds: number };
  tasks: DemoTaskResult[];
  correct: number;
  total: number;
  /** In-domain tasks routed to the skill written for them. */
  routed: number;
  /** Off-domain prompts declined (abstained on). */
  declined: number;
  timings: { loadMs: number; installMs: number; routeMs: number; totalMs: number };
}

/** Reads and validates the tasks file: a JSON array of `{ task, expected }` (expected: a skill name, or null). */
async function loadTasks(path: string): Promise<DemoTask[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, "utf8"));
  } catch (err) {
    throw new GavelError(`cannot read the demo tasks ${clip(path)}: ${clipMessage(err)}`, "CORRUPT_FILE", { cause: err });
  }
  if (!Array.isArray(parsed) || parsed.length === 0) throw invalidArgument(`${clip(path)} must hold a non-empty JSON array of { "task", "expected" }`);
  return parsed.map((t, i) => {
    if (!t || typeof t.task !== "string" || t.task.trim() === "" || !(typeof t.expected === "string" || t.expected === null)) {
      throw invalidArgument(`${clip(path)}[${i}] must be { "task": "<text>", "expected": "<skill name>" or null (no skill serves it) }`);
    }
    return { task: t.task, expected: t.expected };
  });
}

/** sha256 of a file's bytes (streamed: the model is tens of MB). */
function fileHash(path: string): Promise<string> {
  return new Promise((res, rej) => {
    const h = createHash("sha256");
    createReadStream(path)
      .on("data", (d) => h.update(d))
      .on("error", rej)
      .on("end", () => res(h.digest("hex")));
  });
}

/**
 * The cache bank's folder. Keyed by content (not paths or mtimes) so that a retrained model or new
 * projections never meet a stale bank, and by the skills folder so that two --skills folders do not
 * churn one bank back and forth.
 */
async function cacheBankDir(model: string, projections: string, skillsDir: string): Promise<string> {
  const key = createHash("sha256")
    .update(JSON.stringify([await fileHash(model), await fileHash(projections), resolve(skillsDir), SKILL_BUDGET]))
    .digest("hex")
    .slice(0, 16);
  return join(tmpdir(), "gavel-demo", key);
}

/**
 * Fails early, naming the file and where it came from: a path that does not exist, or is not a regular
 * file (a folder, say: the hash and the model load would fail with a bare EISDIR), is FILE_NOT_FOUND.
 */
function requireFile(what: string, r: ResolvedPath, flag: string, env?: string): void {
  let st: ReturnType<typeof statSync> | undefined;
  try {
    st = statSync(r.path);
  } catch {
    st = undefined; // missing, or a path through a file: does not exist, as existsSync says
  }
  if (st?.isFile()) return;
  const from = r.source === "argument" ? `from ${flag}` : r.source === "env" ? `from $${env}` : "the embedded default";
  throw new GavelError(`${what} ${clip(r.path)} (${from}) ${st ? "is not a file" : "does not exist"}`, "FILE_NOT_FOUND");
}

/**
 * Opens the router on the cache bank. A bank held by another running demo (BANK_LOCKED) is left alone
 * and this run uses a throw-away bank; an unreadable cache (CORRUPT_FILE, BANK_MISMATCH: a crash or an
 * older layout) is rebuilt, since it is only a cache.
 */
async function openBank(model: Model, projections: string, dir: string): Promise<{ router: Router; temporary: boolean }> {
  const open = (bankDir: string) => Router.open(model, { projections, bankDir, skillBudget: SKILL_BUDGET });
  try {
    await mkdir(dir, { recursive: true });
    return { router: await open(dir), temporary: false };
  } catch (err) {
    if (!(err instanceof GavelError)) throw err;
    if (err.code === "CORRUPT_FILE" || err.code === "BANK_MISMATCH") {
      await rm(dir, { recursive: true, force: true });
      return { router: await open(dir), temporary: false };
    }
    if (err.code !== "BANK_LOCKED") throw err;
    const tmp = await mkdtemp(join(tmpdir(), "gavel-demo-bank-"));
    return { router: await open(tmp), temporary: true };
  }
}

/** One task's ruling as a table: the shortlist with g, L, V, (B,) S, the chosen skill marked, then the abstention. */
function printTask(i: number, n: number, r: DemoTaskResult): void {
  console.log(`\n[${i + 1}/${n}] ${r.task}`);
  const shown = r.shortlist.slice(0, SHOWN_ROWS);
  const expectedAt = r.shortlist.findIndex((c) => c.skill === r.expected);
  if (expectedAt >= SHOWN_ROWS) shown.push(r.shortlist[expectedAt]);
  const mark = (c: Candidate) => (c.skill === r.chosen ? (r.correct ? "✓ chosen" : "✗ chosen") : c.skill === r.expected ? "← expected" : "");
  console.log(shortlistTable(shown, mark).replace(/^/gm, "  "));
  const more = r.shortlist.length - shown.length;
  if (more > 0) console.log(`  … ${more} more in the shortlist`);
  const reason = r.abstention ? `: ${r.abstention.reason}` : "";
  if (r.abstained) console.log(r.expected === null ? `  abstained ✓ (no skill serves it)${reason}` : `  abstained ✗ (expected ${r.expected})${reason}`);
  else {
    if (r.abstention) console.log(`  not abstained${reason}`);
    if (r.expected === null) console.log(`  expected nothing: no skill serves this prompt`);
    else if (!r.correct) console.log(`  expected ${r.expected}${expectedAt < 0 ? " (not shortlisted)" : ""}`);
  }
  const verdict = r.verdict === "ran" ? `${formatMs(r.timings.verdictMs)} verdict` : `verdict ${r.verdict}`;
  console.log(`  ${formatMs(r.timings.glanceMs)} glance, ${verdict}`);
}

/** `gavel demo`'s options. */
const DEMO_OPTIONS = {
  model: { type: "string", short: "m" },
  projections: { type: "string", short: "p" },
  skills: { type: "string" },
  tasks: { type: "string" },
  threads: { type: "string" },
  json: { type: "boolean" },
} as const;

/** `gavel demo`: the example tasks routed over the example skills. */
export const demo: Command = {
  summary: "route the example tasks over examples/skills with the embedded default model (start here)",
  help: `usage: gavel demo [options]

Installs the example skills into a cached bank (the first run only: one forward pass per skill),
routes each example task, and prints the shortlist (g: glance, L: likelihood, V: yes/no verdict,
B: the lexical expert, S = g + αL + γV + βB; "–" where the verdict was skipped) with the chosen
skill, ✓ when it is the skill the task was written for. A task whose expected skill is null is an
off-domain prompt: the right answer is to load nothing, and the demo shows the abstention and why.

  --model, -m M         the agent model     [$GAVEL_MODEL, default: the embedded gavel-mini]
  --projections, -p P   its projections     [$GAVEL_PROJECTIONS, default: the embedded ones]
  --skills DIR          a folder of skill folders   [default: examples/skills]
  --tasks FILE          JSON array of { "task", "expected" } (expected: a skill name, or null when
                        no skill serves the task)   [default: examples/demo-tasks.json]
  --threads N           CPU threads (default: every core)
  --json                print the report as JSON`,
  options: DEMO_OPTIONS,
  async run(args) {
    const { values, positionals } = parseFlags("demo", { args, allowPositionals: true, options: DEMO_OPTIONS });
    if (positionals.length > 0) {
      throw new UsageError("gavel demo takes no positional argument", this.help);
    }
    const t0 = performance.now();
    const inputs = await demoInputs(values);
    const log = (s: string) => {
      if (!values.json) console.log(s);
    };
    const bankDir = await cacheBankDir(inputs.model.path, inputs.projections.path, inputs.skillsDir);
    // Flash attention: llama.cpp's CPU kernel skips the masked cells of other sequences in the shared
    // pool, where the plain path multiplies through all of them; measured 2.5–4× faster verdicts on two
    // cores. It moves S by up to ~0.04 on these tasks (changing the pool size alone moves it ~0.01), so
    // only near-ties can rule differently from `gavel route`, whose defaults keep it off.
    // One pool ("unified"): the demo caches every example skill's render at once in 16K cells, where
    // per-sequence streams of 16K cells each would take 40× the memory.
    const model = await Model.load(inputs.model.path, { contextSize: CONTEXT_SIZE, sequences: SEQUENCES, kvLayout: "unified", flashAttention: true, threads: inputs.threads });
    try {
      checkTaskLengths(model, inputs.tasks, inputs.tasksFile);
      const { router, temporary } = await openBank(model, inputs.projections.path, bankDir);
      try {
        const t1 = performance.now();
        log(`model ${inputs.model.path} (${model.info.architecture}, ${model.info.nLayer} layers), projections ${inputs.projections.path}`);
        const installed = await installExamples(router, inputs.skillsDir);
        const t2 = performance.now();
        const { report, present, removed } = installed;
        log(
          `skills ${inputs.skillsDir}: ${present.size} in the bank (${report.installed.length} installed now, ${report.unchanged.length} unchanged` +
            `${removed ? `, ${removed} removed` : ""}) in ${formatMs(t2 - t1)}`,
        );
        for (const f of report.failed) log(`  failed: ${failureText(f.where, f.error.message)}`);
        for (const w of report.warnings) for (const text of w.warnings) log(`  warning: ${safeText(w.name)}: ${safeText(text)}`);
        for (const t of inputs.tasks) if (t.expected !== null && !present.has(t.expected)) log(`  note: no installed skill is named ${t.expected} (expected by a task)`);

        const results: DemoTaskResult[] = [];
        for (const [i, t] of inputs.tasks.entries()) {
          const res = await router.route(t.task);
          const r: DemoTaskResult = {
            ...t,
            chosen: res.skill,
            // an off-domain prompt (expected null) is right when nothing is loaded; an in-domain task when its skill is
            correct: t.expected === null ? res.abstained : !res.abstained && res.skill === t.expected,
            abstained: res.abstained,
            ...(res.abstention ? { abstention: res.abstention } : {}),
            verdict: res.verdict,
            shortlist: res.shortlist,
            timings: res.timings,
          };
          results.push(r);
          if (!values.json) printTask(i, inputs.tasks.length, r);
        }
        const t3 = performance.now();
        const out = demoReport(inputs, temporary ? "(temporary)" : router.bankDir, installed, results, [t0, t1, t2, t3]);
        if (values.json) console.log(JSON.stringify(out, null, 2));
        else printSummary(out);
        return 0;
      } finally {
        await router.close();
        if (temporary) await rm(router.bankDir, { recursive: true, force: true });
      }
    } finally {
      await model.dispose();
    }
  },
};

/** The demo's inputs, resolved and checked before anything loads. */
interface DemoInputs {
  model: ResolvedPath;
  projections: ResolvedPath;
  skillsDir: string;
  tasksFile: string;
  tasks: DemoTask[];
  threads: number | undefined;
}

async function demoInputs(values: { model?: string; projections?: string; skills?: string; tasks?: string; threads?: string }): Promise<DemoInputs> {
  nonEmptyArgs(values, ["model", "projections", "skills", "tasks"]);
  const model = resolveModelPath(values.model);
  requireFile("model", model, "--model", "GAVEL_MODEL");
  const projections = resolveProjectionsPath(values.projections);
  requireFile("projections", projections, "--projections", "GAVEL_PROJECTIONS");
  const skillsDir = values.skills ?? DEFAULT_SKILLS_DIR;
  const tasksFile = values.tasks ?? DEFAULT_TASKS_FILE;
  if (!existsSync(skillsDir)) throw new GavelError(`skills folder ${clip(skillsDir)} does not exist`, "FILE_NOT_FOUND");
  if (!statSync(skillsDir).isDirectory()) throw new GavelError(`skills folder ${clip(skillsDir)} is not a folder`, "FILE_NOT_FOUND");
  if (!existsSync(tasksFile)) throw new GavelError(`tasks file ${clip(tasksFile)} does not exist`, "FILE_NOT_FOUND");
  if (!statSync(tasksFile).isFile()) throw new GavelError(`tasks file ${clip(tasksFile)} is not a file`, "FILE_NOT_FOUND");
  const tasks = await loadTasks(tasksFile);
  return { model, projections, skillsDir, tasksFile, tasks, threads: intArg(values.threads, "threads", { min: 1 }) };
}

/** The pool is larger than the model's trained context: each verdict sequence must stay inside it. */
function checkTaskLengths(model: Model, tasks: DemoTask[], tasksFile: string): void {
  const taskLimit = model.info.contextLength - SKILL_BUDGET - VERDICT_ROOM;
  for (const [i, t] of tasks.entries()) {
    const n = model.tokenize(t.task).length;
    if (n > taskLimit) throw invalidArgument(`task ${i + 1} of ${clip(tasksFile)} has ${n} tokens; the demo takes at most ${taskLimit}`);
  }
}

/** The example skills installed into the cache bank, which then mirrors the folder. */
interface ExamplesInstalled {
  report: InstallReport;
  /** Skills in the bank now. */
  present: Set<string>;
  /** Skills removed from the bank because they left the folder. */
  removed: number;
}

async function installExamples(router: Router, skillsDir: string): Promise<ExamplesInstalled> {
  // a line rewritten in place on a terminal, nothing elsewhere
  const progress = new Progress(process.stderr, { prefix: "  ", every: 0 });
  let announced = false;
  const report = await router.install(skillsDir, {
    onProgress: (p) => {
      // Only a first run (or edited skills) computes anything; say so once, then show progress.
      if (p.status !== "installed") return;
      if (!announced) {
        process.stderr.write(`installing ${p.total} skills into ${router.bankDir} (once; later runs reuse it)\n`);
        announced = true;
      }
      progress.update(p.done, p.total, p.skill);
    },
  });
  progress.end();
  // The cache bank mirrors the skills folder: a skill deleted from the folder leaves the bank too.
  const present = new Set([...report.installed, ...report.unchanged]);
  let removed = 0;
  for (const s of router.list()) if (!present.has(s.id) && (await router.uninstall(s.id))) removed++;
  return { report, present, removed };
}

/** The `--json` report; `times` are the starts of loading, installing and routing, and the end. */
function demoReport(inputs: DemoInputs, bank: string, installed: ExamplesInstalled, results: DemoTaskResult[], times: number[]): DemoReport {
  const [t0, t1, t2, t3] = times;
  const { report, removed } = installed;
  return {
    model: inputs.model.path,
    projections: inputs.projections.path,
    skills: resolve(inputs.skillsDir),
    bank,
    install: {
      installed: report.installed.length,
      unchanged: report.unchanged.length,
      removed,
      failed: report.failed.map((f) => ({ where: f.where, error: f.error.message })),
      warnings: report.warnings,
      seconds: report.seconds,
    },
    tasks: results,
    correct: results.filter((r) => r.correct).length,
    total: results.length,
    routed: results.filter((r) => r.correct && r.expected !== null).length,
    declined: results.filter((r) => r.correct && r.expected === null).length,
    timings: { loadMs: t1 - t0, installMs: t2 - t1, routeMs: t3 - t2, totalMs: t3 - t0 },
  };
}

function printSummary(out: DemoReport): void {
  const { loadMs, installMs, routeMs, totalMs } = out.timings;
  const wrong = out.total - out.correct;
  const declined = out.tasks.some((t) => t.expected === null) ? `, ${out.declined} declined` : "";
  console.log(`\n${out.correct}/${out.total} right (${out.routed} routed to the skill written for them${declined}${wrong ? `, ${wrong} wrong` : ""})`);
  console.log(
    `load ${formatMs(loadMs)}, install ${formatMs(installMs)}, routing ${formatMs(routeMs)} ` +
      `(${formatMs(routeMs / Math.max(1, out.total))} a task), total ${formatMs(totalMs)}`,
  );
}
