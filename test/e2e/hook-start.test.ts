// `gavel hook claude-code --start-server` (and GAVEL_START_SERVER=1): with no server for the bank,
// the hook starts a detached `gavel serve --idle-exit-ms` and returns within its budget; the next
// prompt is served; the server exits by itself once idle. Polled with generous deadlines.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, isRunning } from "../../src/serve/client.js";
import { serverRouter } from "../../src/serve/client-router.js";
import { runNode } from "../helpers/run.js";
import { repoRoot } from "../helpers/paths.js";
import { alive, cli, endChildren, hookInput as input, runHook as runHookWith, until } from "../helpers/serve-process.js";
import { expectCode } from "../helpers/gavel-error.js";

const base = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "", CLAUDE_PROJECT_DIR: "", GAVEL_START_SERVER: "" };
const PROMPT = "Our quarterly report came as report.pdf; get the revenue table out of it into a CSV file.";

/** Runs the hook with `stdin`, in this file's environment unless another is given. */
const runHook = (stdin: string, args: string[], env: NodeJS.ProcessEnv = base) => runHookWith(stdin, args, env);

describe("gavel hook claude-code --start-server", () => {
  let project: string;
  let bank: string;
  const pids: number[] = [];

  beforeAll(async () => {
    project = mkdtempSync(join(tmpdir(), "gavel-hook-start-"));
    bank = join(project, ".gavel", "bank");
    const inst = await runNode([cli, "install", join(repoRoot, "examples", "skills"), "--bank", bank, "--context", "2048"], { env: base, timeoutMs: 300_000 });
    expect(inst.code, inst.err).toBe(0);
  }, 300_000);

  afterAll(() => {
    endChildren();
    for (const pid of pids) if (alive(pid)) process.kill(pid, "SIGKILL");
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it("starts a server within the hook's budget, serves the next prompt, and the server exits once idle", async () => {
    const first = await runHook(input(PROMPT, project), ["--start-server", "--idle-exit-ms", "15000"]);
    expect(first.code).toBe(0);
    expect(first.out).toBe(""); // this prompt is not held while the model loads
    const m = /started one \(pid (\d+), log ([^)]+)\)/.exec(first.err);
    expect(m, first.err).not.toBeNull();
    const pid = Number(m![1]);
    pids.push(pid);
    // within the hook's default budget, by its own deadline, not a clock here: its watchdog did not
    // have to give up (a hook that waited for the model to load would print an answer, or that line)
    expect(first.err).not.toMatch(/within \d+ ms/);
    // a prompt right after: no second server (it is still loading, or already serves)
    const second = await runHook(input(PROMPT, project), ["--start-server", "--idle-exit-ms", "15000"]);
    expect(second.code).toBe(0);
    expect(second.err).not.toMatch(/started one/);
    await until(() => isRunning(bank, { timeoutMs: 5000 }));
    // answered within a minute (the default 5 s budget is missed by a route on a loaded machine)
    const served = await runHook(input(PROMPT, project), ["--start-server", "--idle-exit-ms", "15000", "--timeout-ms", "60000"]);
    expect(served.code).toBe(0);
    expect(served.err).toBe("");
    expect(JSON.parse(served.out).hookSpecificOutput.additionalContext).toMatch(/skill "pdf-extract"/);
    expect(readFileSync(m![2], "utf8")).toContain("listening on");
    // idle for 15 s with no client: it exits by itself, releasing the bank
    await until(() => !alive(pid));
    expect(await isRunning(bank)).toBe(false);
    expect(existsSync(join(bank, "serve.sock"))).toBe(false);
  }, 600_000);

  it("GAVEL_START_SERVER=1 does what --start-server does; without either nothing is started", async () => {
    const plain = await runHook(input(PROMPT, project), []);
    expect(plain.err).toMatch(/no gavel server runs for the bank/);
    expect(plain.err).not.toMatch(/started/);
    const r = await runHook(input(PROMPT, project), ["--idle-exit-ms", "600000"], { ...base, GAVEL_START_SERVER: "1" });
    expect(r.code).toBe(0);
    const m = /started one \(pid (\d+)/.exec(r.err);
    expect(m, r.err).not.toBeNull();
    const pid = Number(m![1]);
    pids.push(pid);
    await until(() => isRunning(bank, { timeoutMs: 5000 }));
    process.kill(pid, "SIGTERM");
    await until(() => !alive(pid));
  }, 600_000);

  it("serverRouter({ start }) starts a server for the adapters, waits for it, and it exits once idle", async () => {
    expect(await isRunning(bank)).toBe(false);
    // serveArgs reach the server it starts: its per-request budget is the one given
    const router = serverRouter({ bank, start: { idleExitMs: 15000, serveArgs: ["--max-task-tokens", "4000"] } });
    let pid = 0;
    try {
      const res = await router.route(PROMPT, { abstain: false });
      expect(res.skill).toBe("pdf-extract");
      expect((await router.get("pdf-extract")).name).toBe("pdf-extract");
      const c = await connect({ bank });
      try {
        const status = await c.request<{ pid: number; maxTaskTokens: number }>("status");
        pid = status.pid;
        expect(status.maxTaskTokens).toBe(4000);
      } finally {
        c.close();
      }
      pids.push(pid);
      expect(alive(pid)).toBe(true);
      // the start marker is gone once the server listens
      expect(existsSync(join(bank, "serve.sock.starting"))).toBe(false);
    } finally {
      router.close();
    }
    await until(() => !alive(pid));
    // a missing bank: refused, nothing started
    const none = serverRouter({ bank: join(project, "no-bank"), start: true });
    await expectCode(none.route(PROMPT), "FILE_NOT_FOUND", /none was started: no skill bank/);
    none.close();
  }, 600_000);

  it("refuses to start a server for a missing bank, in one line", async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), "gavel-hook-start-none-"));
    const r = await runHook(input(PROMPT, elsewhere), ["--start-server"]);
    expect(r.code).toBe(0);
    expect(r.out).toBe("");
    expect(r.err.trim().split("\n")).toHaveLength(1);
    expect(r.err).toMatch(/none was started: no skill bank at/);
    rmSync(elsewhere, { recursive: true, force: true });
  }, 60_000);
});
