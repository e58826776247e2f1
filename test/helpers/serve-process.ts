// The e2e tests' set-up around the built CLI (dist/cli/gavel.js, `npx tsup` first): a `gavel serve`
// child that has printed its listening line, a `gavel hook claude-code` run with its stdin, the
// hook's input, and a poll with a generous deadline (the tests must hold on a loaded machine).
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "./paths.js";

/** The built CLI. */
export const cli = join(repoRoot, "dist", "cli", "gavel.js");
/** The `gavel` executable (package.json "bin"): runs `gavel hook claude-code` itself, every other command through {@link cli}. */
export const bin = join(repoRoot, "dist", "cli", "gavel.cjs");

/** A running `gavel serve` child. */
export interface ServeChild {
  child: ChildProcess;
  /** Its stdout and stderr so far. */
  out(): string;
  err(): string;
  /** Its exit code once it has exited. */
  exited: Promise<number | null>;
}

/** Options of {@link startServe}. */
export interface StartServeOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** The --context flag (default "2048"; null: none, the model's own up to 8192). */
  context?: string | null;
}

/**
 * Starts `gavel serve [--context 2048] ...args`; resolves once it prints "listening on", rejects when
 * it exits before.
 */
export function startServe(args: string[], options: StartServeOptions = {}): Promise<ServeChild> {
  const context = options.context === undefined ? "2048" : options.context;
  const child = spawn(process.execPath, [cli, "serve", ...(context === null ? [] : ["--context", context]), ...args], { env: options.env ?? process.env, cwd: options.cwd });
  let out = "";
  let err = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  const server: ServeChild = { child, out: () => out, err: () => err, exited };
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      if (out.includes("listening on")) {
        clearInterval(timer);
        resolve(server);
      }
    }, 20);
    void exited.then((code) => {
      clearInterval(timer);
      reject(new Error(`gavel serve exited ${code} before listening: ${err}`));
    });
  });
}

/** What a child run left: its exit code, output and wall time. */
export interface HookRun {
  code: number | null;
  out: string;
  err: string;
  ms: number;
}

/** Runs `command args` with `stdin` (a closed pipe on the child's side is not an error) and collects what it left. */
export function runChild(command: string, args: string[], stdin: string, env: NodeJS.ProcessEnv, cwd?: string): Promise<HookRun> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(command, args, { env, cwd });
    running.add(child);
    child.on("close", () => running.delete(child));
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out, err, ms: performance.now() - t0 }));
    child.stdin.on("error", () => undefined);
    child.stdin.end(stdin);
  });
}

/** Children {@link runChild} started that have not closed: a test that failed or timed out leaves them. */
const running = new Set<ChildProcess>();

/** Kills every child {@link runChild} started that is still running (for a file's afterEach/afterAll). */
export function endChildren(): void {
  for (const c of running) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  running.clear();
}

/** Runs `gavel hook claude-code ...args` with `stdin`, as Claude Code runs it (through the `gavel` executable). */
export function runHook(stdin: string, args: string[], env: NodeJS.ProcessEnv): Promise<HookRun> {
  return runChild(process.execPath, [bin, "hook", "claude-code", ...args], stdin, env);
}

/** Claude Code's UserPromptSubmit input for a prompt typed in `cwd`. */
export function hookInput(prompt: string, cwd: string, session = "abc123"): string {
  return JSON.stringify({ session_id: session, transcript_path: join(cwd, "t.jsonl"), cwd, permission_mode: "default", hook_event_name: "UserPromptSubmit", prompt });
}

/** Whether process `pid` exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls `check` every 250 ms until it returns a value other than undefined and false, or `ms` pass (then throws). */
export async function until<T>(check: () => Promise<T | undefined | false> | T | undefined | false, ms = 240_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`not reached within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
