import { spawn } from "node:child_process";

/** What a finished child process left: its exit code (null when a signal ended it), that signal, and its output. */
export interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
  err: string;
  /** true when the child was killed because it ran past timeoutMs */
  timedOut: boolean;
}

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** written to the child's stdin, which is then closed (stdin is closed at once when there is none, as spawnSync does) */
  input?: string | Buffer;
  /** the child is sent killSignal after this long (default 600 s) */
  timeoutMs?: number;
  /** default SIGTERM, as spawnSync's; a child still alive 10 s later gets SIGKILL */
  killSignal?: NodeJS.Signals;
}

/**
 * Runs `command args` and resolves once it has exited and its output is read, with the fields that
 * tests read from spawnSync (status → code, signal, stdout → out, stderr → err). Asynchronous on
 * purpose: a long spawnSync or execFileSync blocks the vitest worker's event loop, so the worker
 * neither reports progress nor honours the test's timeout or a cancel while the child runs. Rejects
 * only when the child cannot start.
 */
export function run(command: string, args: string[], options: RunOptions = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: "pipe" });
    let out = "";
    let err = "";
    let timedOut = false;
    let hardKill: NodeJS.Timeout | undefined;
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    // a child that exits without reading its input closes the pipe under us: not an error of the run
    child.stdin.on("error", () => {});
    child.stdin.end(options.input);
    const timer = setTimeout(() => {
      timedOut = true;
      const signal = options.killSignal ?? "SIGTERM";
      child.kill(signal);
      if (signal !== "SIGKILL") hardKill = setTimeout(() => child.kill("SIGKILL"), 10_000);
    }, options.timeoutMs ?? 600_000);
    child.on("error", (e) => {
      clearTimeout(timer);
      clearTimeout(hardKill);
      reject(e);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      clearTimeout(hardKill);
      resolve({ code, signal, out, err, timedOut });
    });
  });
}

/** `run` of this node (process.execPath) with args; a child past timeoutMs is killed with SIGKILL. */
export function runNode(args: string[], options: Omit<RunOptions, "killSignal"> = {}): Promise<Ran> {
  return run(process.execPath, args, { ...options, killSignal: "SIGKILL" });
}
