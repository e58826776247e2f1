import { existsSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { type Command, intArg, invalidArgument, parseFlags, Progress, type RouterArgs, routerOptions, routerOptionsHelp, table, withInterrupt, withRouter, UsageError } from "gavel-router/internal";
import { evaluate, parseMethods, type EvalMethod, type EvalResult, type PerQueryRecord } from "../eval/evaluate.js";
import { appendPerQuery, checkPerQueryOutput, loadLibrary, readPerQuery, writePerQuery } from "../eval/io.js";
import { loadTasks, selectTasks, type EvalTask } from "../eval/tasks.js";
import { GavelError, type Skill } from "gavel-router";

/** Options shared by `gavel eval` and `gavel calibrate` to pick tasks and a library. */
export const taskOptions = {
  tasks: { type: "string" },
  library: { type: "string", multiple: true },
  batches: { type: "string" },
  limit: { type: "string" },
} as const;

/** {@link taskOptions} as a command's help lists them. */
export const taskOptionsHelp = `
  --tasks T             tasks JSONL, one {id, text, gold_skill_ids, batch?} a line
  --library L           a library (folder, .jsonl or .jsonl.gz); repeat to mix several, e.g. a
                        benchmark's gold skills and a public library (the bank must hold them all)
  --batches SPEC        only tasks of these batches, e.g. 1-5 (validation) or 6-10 (test)
  --limit N             only the first N tasks (after --batches)`;

/** Loads the library and the selected tasks, telling on stderr what was read. */
export async function loadTasksAndLibrary(values: { tasks?: string; library?: string[]; batches?: string; limit?: string }, signal?: AbortSignal): Promise<{ tasks: EvalTask[]; library: Skill[] }> {
  if (!values.tasks) throw invalidArgument("no tasks: pass --tasks <tasks.jsonl>");
  // at least one: --limit 0 would select no task
  const limit = intArg(values.limit, "limit", { min: 1 });
  const all = await loadTasks(values.tasks);
  const tasks = selectTasks(all, { batches: values.batches, limit });
  // nothing to score: a table of zeros would read as a result
  if (all.length === 0) throw invalidArgument(`no tasks: ${values.tasks} holds none`);
  if (tasks.length === 0) throw invalidArgument(`no tasks: none of the ${all.length} in ${values.tasks} is in batches ${values.batches}`);
  const lib = await loadLibrary(values.library ?? [], { signal });
  const notes = [`library: ${lib.skills.length} skills`];
  if (lib.failed.length) notes.push(`${lib.failed.length} could not be read (first: ${lib.failed[0].error.message})`);
  if (lib.duplicates.length) notes.push(`${lib.duplicates.length} ids repeated in a later source were ignored`);
  console.error(`${notes.join("; ")}\ntasks: ${tasks.length} of ${all.length}${values.batches ? ` (batches ${values.batches})` : ""}`);
  return { tasks, library: lib.skills };
}

/** Runs evaluate with or without a router (BM25 alone needs no model). */
export async function runEvaluation(
  values: RouterArgs & { tasks?: string; library?: string[]; batches?: string; limit?: string },
  methods: EvalMethod[],
  records: { previous?: readonly PerQueryRecord[]; onRecord?: (r: PerQueryRecord) => Promise<void>; pool?: number; lexicalPool?: number; also?: ReadonlyMap<string, readonly string[]> } = {},
  beforeRun?: () => Promise<void>,
): Promise<EvalResult> {
  return withInterrupt(async (signal) => {
    const { tasks, library } = await loadTasksAndLibrary(values, signal);
    // a line rewritten in place on a terminal; every 10% elsewhere
    const progress = new Progress(process.stderr, { nameWidth: 60, every: 10, logLine: (done, total, pct) => `${done}/${total} tasks (${pct}%)` });
    // beforeRun (e.g. starting the per-query file) runs once the tasks, library and router are ready
    const run = async (router?: Parameters<typeof evaluate>[0]["router"]) => {
      await beforeRun?.();
      return evaluate({ router, tasks, library, methods, ...records, signal, onProgress: (p) => progress.update(p.done, p.total, p.task) });
    };
    const needsModel = methods.some((m) => m !== "bm25");
    const result = needsModel ? await withRouter(values, (router) => run(router), { readOnly: true }) : await run();
    if (result.skipped.length) console.error(`skipped ${result.skipped.length} tasks whose golds are all absent from the library (${result.skipped.slice(0, 3).join(", ")}${result.skipped.length > 3 ? ", …" : ""})`);
    for (const w of result.warnings) console.error(`warning: ${w}`);
    return result;
  });
}

/** `--per-query F` checked before any work: a plain-JSONL name, not a folder, in a folder that exists. */
function checkPerQueryPath(out: string): void {
  checkPerQueryOutput(out);
  if (existsSync(out) && statSync(out).isDirectory()) throw invalidArgument(`--per-query ${out} is a folder: give a file to write the records to`);
  const folder = dirname(resolve(out));
  if (!existsSync(folder)) throw new GavelError(`--per-query ${out}: its folder ${folder} does not exist`, "FILE_NOT_FOUND");
}

/** `--also F`: task id → skill ids (one JSON object a line), refused whole when a line is malformed. */
async function readAlso(path: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  const text = await readFile(path, "utf8").catch((cause: Error) => {
    throw new GavelError(`--also ${path}: ${cause.message}`, "FILE_NOT_FOUND", { cause });
  });
  const lines = text.split("\n");
  for (const [i, line] of lines.entries()) {
    if (!line.trim()) continue;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch {
      throw invalidArgument(`--also ${path}: line ${i + 1} is not JSON`);
    }
    const r = row as { id?: unknown; skills?: unknown };
    if (typeof r.id !== "string" || !Array.isArray(r.skills) || !r.skills.every((s) => typeof s === "string")) {
      throw invalidArgument(`--also ${path}: line ${i + 1} must be { "id": string, "skills": string[] }`);
    }
    out.set(r.id, r.skills as string[]);
  }
  return out;
}

/**
 * A line on the records made with the route's own shortlist: how many tasks the route declined, how
 * many verdict passes it ran (the shortlisted skills) and its median time; null when none was.
 */
export function routeSummary(records: readonly PerQueryRecord[]): string | null {
  const routed = records.filter((r) => r.route);
  if (routed.length === 0) return null;
  const declined = routed.filter((r) => r.route!.abstained).length;
  const ran = routed.filter((r) => r.route!.verdict === "ran");
  const passes = ran.reduce((n, r) => n + r.route!.shortlist.length, 0);
  const ms = routed.map((r) => r.route!.ms).sort((a, b) => a - b);
  const p50 = ms[Math.floor(ms.length / 2)];
  return `route's own shortlist: ${routed.length} tasks, declined ${declined}; the verdict ran on ${ran.length} (${passes} skills in all); route p50 ${p50} ms`;
}

/** `gavel eval`'s options. */
const EVAL_OPTIONS = { ...routerOptions, ...taskOptions, methods: { type: "string" }, "per-query": { type: "string" }, resume: { type: "boolean" }, "lexical-pool": { type: "string" }, also: { type: "string" }, pool: { type: "string" } } as const;

/** `gavel eval`: Hit@1 and R@20 of each method on a benchmark. */
export const evalCommand: Command = {
  summary: "score BM25, the glance, the ruling and its ablations on a benchmark (Hit@1, R@20)",
  help: `usage: gavel eval --tasks T --library L [--library L2 …] [options]
${taskOptionsHelp}
  --methods LIST        comma-separated, of bm25, glance, gB (g+βB, no verdict), ruling, rulingNoB
                        (the ruling at β=0), gL (g+αL), gV (g+γV) (default: all; bm25 alone needs
                        no --model, --projections or --bank)
  --pool N              the wide verdict pool of calibration studies: the glance's top N each get a
                        verdict whatever Δ, and the ruling is replayed from them (gavel calibrate
                        fits Δ on such records). Default: the route's own shortlist: each task is
                        routed as gavel route routes it (first stage, shortlist, verdict only on the
                        shortlisted skills, abstention), so the ruling is the route's choice
  --per-query F         write per-query records (JSONL): the input of gavel calibrate; each is
                        appended as soon as its task is scored, so a stopped run keeps them
                        (plain text: gzip F afterwards if you like, calibrate reads F.gz too);
                        with bm25 and a router method, records also keep the lexical expert's
                        read-outs, from which calibrate fits β and T (S = g + αL + γV + βB)
  --resume              with --per-query: keep F's records and route only the tasks it lacks
  --lexical-pool N      with --pool, bm25 and a router method: BM25's top N also get their g and a
                        verdict, so the records replay a first stage that fuses both experts
                        (default 0)
  --also F              with --pool: JSONL of { "id": task id, "skills": [...] }: these skills get
                        their g and a verdict too (with bm25 and a router method), e.g. BM25's
                        leaders over the full text when the library given here is cut
${routerOptionsHelp}

Hit@1: the committed skill is a gold (or a library entry with a gold's name and description).
R@20: a gold is in the top 20. The ruling and its ablations re-rank the glance's top candidates,
so their R@20 is the glance's. With the route's shortlist, gL, gV and "ruling without B" rule the
route's own shortlist again; each record's "pool" says which pool made it ("route" or N). Install
the library into the bank first (gavel install).`,
  options: EVAL_OPTIONS,
  async run(args) {
    const { values } = parseFlags("eval", { args, options: EVAL_OPTIONS });
    if (!values.tasks || !values.library?.length) {
      throw new UsageError("gavel eval needs --tasks T and at least one --library L", this.help);
    }
    const out = values["per-query"];
    if (values.resume && !out) throw invalidArgument("--resume needs --per-query <file>: the records to go on from");
    if (out) checkPerQueryPath(out);
    const methods = values.methods ? parseMethods(values.methods) : parseMethods("all");
    const pool = intArg(values.pool, "pool", { min: 1, max: 1024 });
    const lexicalPool = intArg(values["lexical-pool"], "lexical-pool", { min: 0, max: 1000 }) ?? 0;
    if (pool === undefined && (lexicalPool > 0 || values.also)) throw invalidArgument("--lexical-pool and --also widen the verdict's pool: give --pool N too (the glance's top N get a verdict)");
    const also = values.also ? await readAlso(values.also) : undefined;
    // Resuming keeps the file's whole records (a torn last line is dropped). F is (re)written only
    // once every argument, the tasks, the library and the router are ready: a bad argument leaves it whole.
    const previous = out && values.resume && existsSync(out) ? await readPerQuery(out, { tornTail: true }) : [];
    // rewritten with the kept records so appends start on a fresh line; otherwise F starts empty
    const startFile = out ? async () => {
      await writePerQuery(out, previous);
      if (previous.length) console.error(`resuming: ${previous.length} records in ${out}`);
    } : undefined;
    const perQuery = out ? { previous, onRecord: (r: PerQueryRecord) => appendPerQuery(out, r) } : {};
    const result = await runEvaluation(values, methods, { ...(pool !== undefined ? { pool } : {}), lexicalPool, ...(also ? { also } : {}), ...perQuery }, startFile);
    // The file ends as the result's records in task order (a resumed run appended out of order, and
    // earlier records of tasks no longer selected are dropped).
    if (out) await writePerQuery(out, result.perQuery);
    if (values.json) {
      console.log(JSON.stringify({ table: result.table, pool: pool ?? "route", skipped: result.skipped, warnings: result.warnings }, null, 2));
    } else {
      console.log(table(["method", "Hit@1", "R@20", "n"], result.table.map((r) => [r.label, r.hitAt1, r.recallAt20, String(r.n)])));
      const routed = routeSummary(result.perQuery);
      if (routed) console.log(`\n${routed}`);
      if (values["per-query"]) console.log(`\nper-query records: ${values["per-query"]}`);
    }
    return 0;
  },
};
