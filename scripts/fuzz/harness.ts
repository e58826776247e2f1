/**
 * The fuzz harness's parent side: deals trials (target, seed) to a worker process (worker.ts), one at
 * a time, each under a timeout and a memory cap, and classifies every trial:
 * - ok: the entry point returned; typed: it threw a GavelError (a refusal, which is fine);
 * - crash: the worker died during the trial (a signal such as SIGABRT or SIGSEGV, an exit, an
 *   unhandled rejection) or the entry point threw something that is not a GavelError ("error");
 * - hang: the trial outlived its timeout; memory: the worker's RSS passed the cap;
 * - silent: an oracle caught a wrong result (see targets.ts).
 * A crashed, hung or bloated worker is killed and replaced; the run goes on. Trial j of target t has
 * seed trialSeed(base, t, j), so every failure is replayed by `run.ts --replay t:seed`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { trialSeed } from "./mutate.js";
import { REPO } from "./targets.js";
import { viteNodeCli as viteNode } from "../../test/helpers/paths.js";

export const CLASSES = ["ok", "typed", "crash", "error", "hang", "memory", "silent"] as const;
export type TrialClass = (typeof CLASSES)[number];
/** The classes that fail a run. */
export const FAILING: ReadonlySet<TrialClass> = new Set(["crash", "error", "hang", "memory", "silent"]);

export interface TrialResult {
  target: string;
  seed: number;
  class: TrialClass;
  code?: string;
  what: string;
  detail?: string;
  ms: number;
}

export interface FuzzOptions {
  /** Trials in all, dealt over the targets by weight. */
  inputs: number;
  seed: number;
  /** Target names → weights (default: every target, equal weights). */
  weights: Record<string, number>;
  /** Per-trial timeout (default 20 s). */
  timeoutMs?: number;
  /** Worker RSS cap in MiB (default 3072). */
  rssMb?: number;
  /** Called with each trial's result. */
  onResult?: (r: TrialResult, i: number) => void;
  /** Explicit trials instead of dealt ones (replays). */
  trials?: { target: string; seed: number }[];
}

export interface FuzzReport {
  seed: number;
  counts: Record<string, Record<TrialClass, number>>;
  failures: TrialResult[];
  seconds: number;
}

/** The trials of a run: `inputs` dealt over the targets in proportion to their weights, interleaved. */
export function dealTrials(inputs: number, seed: number, weights: Record<string, number>): { target: string; seed: number }[] {
  const names = Object.keys(weights);
  const total = names.reduce((a, n) => a + weights[n], 0);
  const credit = new Map(names.map((n) => [n, 0]));
  const used = new Map(names.map((n) => [n, 0]));
  const out: { target: string; seed: number }[] = [];
  for (let i = 0; i < inputs; i++) {
    for (const n of names) credit.set(n, credit.get(n)! + weights[n] / total);
    const n = names.reduce((a, b) => (credit.get(b)! > credit.get(a)! ? b : a));
    credit.set(n, credit.get(n)! - 1);
    const j = used.get(n)!;
    used.set(n, j + 1);
    out.push({ target: n, seed: trialSeed(seed, n, j) });
  }
  return out;
}

interface Worker {
  proc: ChildProcess;
  lines: AsyncIterator<string>;
  stderr: string[];
  /** The last mutation the worker announced (what a crashing trial was fed). */
  note: string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

async function startWorker(scratch: string, cache: string): Promise<Worker> {
  const proc = spawn(process.execPath, [viteNode, join(REPO, "scripts", "fuzz", "worker.ts"), scratch, cache], { cwd: REPO, stdio: ["pipe", "pipe", "pipe"] });
  const stderr: string[] = [];
  proc.stderr!.setEncoding("utf8").on("data", (d: string) => {
    stderr.push(d);
    if (stderr.length > 50) stderr.shift();
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
  const rl = createInterface({ input: proc.stdout! });
  const w: Worker = { proc, lines: undefined as unknown as AsyncIterator<string>, stderr, exit, note: "" };
  w.lines = (async function* () {
    for await (const l of rl) {
      if (l.startsWith("\u0001FUZZ ")) yield l.slice(6);
      else if (l.startsWith("\u0001NOTE ")) w.note = l.slice(6);
    }
  })();
  return w;
}

async function rssMb(pid: number): Promise<number> {
  const s = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const m = /VmRSS:\s+(\d+)/.exec(s);
  return m ? Number(m[1]) / 1024 : 0;
}

type Ended = { kind: "line"; line: string } | { kind: "exit"; code: number | null; signal: NodeJS.Signals | null } | { kind: "timeout" } | { kind: "memory"; mb: number };

/** Waits for the worker's next answer, its death, the timeout or the memory cap. */
async function next(w: Worker, timeoutMs: number, capMb: number): Promise<Ended> {
  let timer: NodeJS.Timeout | undefined;
  let poll: NodeJS.Timeout | undefined;
  try {
    return await Promise.race<Ended>([
      w.lines.next().then((r) => (r.done ? w.exit.then((e) => ({ kind: "exit" as const, ...e })) : { kind: "line" as const, line: r.value })),
      w.exit.then((e) => ({ kind: "exit" as const, ...e })),
      new Promise<Ended>((resolve) => (timer = setTimeout(() => resolve({ kind: "timeout" }), timeoutMs))),
      new Promise<Ended>((resolve) => {
        poll = setInterval(() => {
          void rssMb(w.proc.pid!).then((mb) => mb > capMb && resolve({ kind: "memory", mb }));
        }, 250);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    clearInterval(poll);
  }
}

async function kill(w: Worker): Promise<void> {
  w.proc.kill("SIGKILL");
  await w.exit;
}

/** Runs a fuzz campaign; see the module comment. */
// long function: the dispatch loop, with a worker's start, setup and replacement in line
export async function runFuzz(o: FuzzOptions): Promise<FuzzReport> {
  const t0 = performance.now();
  const timeoutMs = o.timeoutMs ?? 20_000;
  const capMb = o.rssMb ?? 3072;
  const trials = o.trials ?? dealTrials(o.inputs, o.seed, o.weights);
  const counts: FuzzReport["counts"] = {};
  for (const t of new Set(trials.map((x) => x.target))) counts[t] = Object.fromEntries(CLASSES.map((c) => [c, 0])) as Record<TrialClass, number>;
  const failures: TrialResult[] = [];
  const scratch = await mkdtemp(join(tmpdir(), "gavel-fuzz-"));
  const cache = join(scratch, "cache");
  const needsSetup = trials.some((t) => t.target === "bank" || t.target === "projections");
  let w: Worker | undefined;
  let id = 0;
  const ready = async (): Promise<Worker> => {
    if (w) return w;
    const nw = await startWorker(join(scratch, `w${id}`), cache);
    const first = await next(nw, 120_000, capMb);
    if (first.kind !== "line") throw new Error(`the fuzz worker did not start: ${JSON.stringify(first)} ${nw.stderr.join("")}`);
    if (needsSetup) {
      nw.proc.stdin!.write(JSON.stringify({ id: id++, target: "@setup", seed: 0 }) + "\n");
      const s = await next(nw, 600_000, capMb);
      if (s.kind !== "line") throw new Error(`the fuzz worker's setup failed: ${JSON.stringify(s)} ${nw.stderr.join("")}`);
    }
    return (w = nw);
  };
  try {
    for (let i = 0; i < trials.length; i++) {
      const { target, seed } = trials[i];
      const worker = await ready();
      const ts = performance.now();
      worker.note = "";
      worker.proc.stdin!.write(JSON.stringify({ id: id++, target, seed }) + "\n");
      const ended = await next(worker, timeoutMs, capMb);
      let res: TrialResult;
      const ms = performance.now() - ts;
      if (ended.kind === "line") {
        const o = JSON.parse(ended.line) as { class: TrialClass; code?: string; what: string; detail?: string };
        res = { target, seed, class: o.class, code: o.code, what: o.what, detail: o.detail, ms };
      } else {
        const detail =
          ended.kind === "exit" ? `exit code ${ended.code}, signal ${ended.signal}: ${worker.stderr.join("").slice(-2000)}` : ended.kind === "memory" ? `RSS ${ended.mb.toFixed(0)} MiB > ${capMb}` : `no answer in ${timeoutMs} ms`;
        res = { target, seed, class: ended.kind === "exit" ? "crash" : ended.kind === "timeout" ? "hang" : "memory", what: worker.note || "(see replay)", detail, ms };
        if (ended.kind !== "exit") await kill(worker);
        w = undefined;
      }
      counts[target][res.class]++;
      if (FAILING.has(res.class)) failures.push(res);
      o.onResult?.(res, i);
    }
  } finally {
    if (w) {
      w.proc.stdin!.end();
      await kill(w);
    }
    await rm(scratch, { recursive: true, force: true }).catch(() => undefined);
  }
  return { seed: o.seed, counts, failures, seconds: (performance.now() - t0) / 1000 };
}

/** Counts as a table: one row per target, one column per class. */
export function formatCounts(r: FuzzReport): string {
  const rows = [["target", "inputs", ...CLASSES].join("\t")];
  const total = Object.fromEntries(CLASSES.map((c) => [c, 0])) as Record<TrialClass, number>;
  let all = 0;
  for (const [t, c] of Object.entries(r.counts)) {
    const n = CLASSES.reduce((a, k) => a + c[k], 0);
    all += n;
    for (const k of CLASSES) total[k] += c[k];
    rows.push([t, n, ...CLASSES.map((k) => c[k])].join("\t"));
  }
  rows.push(["all", all, ...CLASSES.map((k) => total[k])].join("\t"));
  return rows.join("\n");
}
