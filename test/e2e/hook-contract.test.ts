// The Claude Code hook's contract, without a model: `gavel hook …` run as Claude Code runs it (a
// command line, the hook's JSON on stdin, CLAUDE_PROJECT_DIR in the environment), against a stand-in
// server that speaks the serve protocol on the bank's socket (answering, or busy: never answering), or
// none but the serve.http.json a killed server left (a server started on demand then has no model:
// it fails at once, and what is tested is that it was started).
// Claude Code reads exit 2 of a UserPromptSubmit hook as "block the prompt"; the hook must exit 0.
import { afterEach, describe, expect, it } from "vitest";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createServer, type Server, type Socket } from "node:net";
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultSocketPath } from "../../src/serve/protocol.js";
import { runNode } from "../helpers/run.js";
import { alive, bin, cli, endChildren, runChild, until, type HookRun } from "../helpers/serve-process.js";
import { writeStaleEndpoint } from "../helpers/stale-endpoint.js";
import { serverRouter } from "../../src/serve/client-router.js";

const baseEnv = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "", CLAUDE_PROJECT_DIR: "" };

/** Runs `command` through sh, as Claude Code runs a hook command, with `stdin`. */
function runShell(command: string, stdin: string, env: NodeJS.ProcessEnv, cwd?: string): Promise<HookRun> {
  return runChild("sh", ["-c", command], stdin, env, cwd);
}

const q = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
/** `gavel hook ARGS` as a shell command over the `gavel` executable (package.json "bin"), or over `entry`. */
const gavel = (args: string, entry = bin) => `${q(process.execPath)} ${q(entry)} hook ${args}`;
/** The two ways in: the `gavel` executable (which runs the hook itself) and the CLI's own module. */
const ENTRIES = [bin, cli];

/** Claude Code's UserPromptSubmit input for a prompt typed in `cwd`. */
const input = (prompt: string, cwd: string) => JSON.stringify({ session_id: "s1", transcript_path: join(cwd, "t.jsonl"), cwd, permission_mode: "default", hook_event_name: "UserPromptSubmit", prompt });

/** A glance answer naming `name` (what a real server sends for a confident first stage). */
function answer(name: string) {
  return {
    skill: name,
    abstained: false,
    verdict: "skipped",
    shortlist: [
      { skill: name, name, g: 0.9, S: 0.9, V: null },
      { skill: "other", name: "other", g: 0.2, S: 0.2, V: null },
    ],
    winner: { name, description: `the ${name} skill`, source: `/skills/${name}/SKILL.md`, path: `/skills/${name}/SKILL.md` },
  };
}

const servers: Server[] = [];
const dirs: string[] = [];
/** Connections the stand-in servers accepted (never closed by them), and hook children to end: gone after each test, also one that timed out. */
const held: Socket[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  endChildren();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  for (const s of held.splice(0)) s.destroy();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/**
 * A stand-in server on the socket of `bank`: answers each request with `reply(op)`, or never when
 * `reply` returns undefined (busy). Records the ops and tasks it received.
 */
async function standIn(bank: string, reply: (op: string) => unknown): Promise<{ seen: { op: string; task?: string }[]; sockets: Socket[] }> {
  mkdirSync(bank, { recursive: true });
  const seen: { op: string; task?: string }[] = [];
  const sockets: Socket[] = [];
  const server = createServer((sock) => {
    sockets.push(sock);
    held.push(sock);
    let buf = "";
    sock.setEncoding("utf8").on("data", (d: string) => {
      buf += d;
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const msg = JSON.parse(buf.slice(0, nl)) as { id: number; op: string; task?: string };
        buf = buf.slice(nl + 1);
        seen.push({ op: msg.op, task: msg.task });
        const result = reply(msg.op);
        if (result !== undefined) sock.write(JSON.stringify({ v: 1, id: msg.id, ok: true, result }) + "\n");
      }
    });
    sock.on("error", () => undefined);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(defaultSocketPath(bank), resolve));
  return { seen, sockets };
}

describe("gavel hook: exit codes", () => {
  it("a misspelt or missing hook name exits 0 with one line on stderr (exit 2 would block the prompt)", async () => {
    const dir = tempDir("gavel-hook-usage-");
    for (const [entry, args] of ENTRIES.flatMap((e) => ["claude_code", "", "claude"].map((a) => [e, a]))) {
      const r = await runShell(gavel(args, entry), input("Extract the tables from report.pdf", dir), baseEnv, dir);
      expect(r.code, `${entry} hook ${args}`).toBe(0);
      expect(r.out).toBe("");
      const lines = r.err.trim().split("\n");
      expect(lines, r.err).toHaveLength(1);
      expect(lines[0]).toMatch(/^gavel hook: .*claude-code.*nothing added to the prompt$/);
    }
  });

  it("a malformed option, stdin or environment exits 0 with one line on stderr", async () => {
    const dir = tempDir("gavel-hook-bad-");
    const cases: [string, string, NodeJS.ProcessEnv][] = [
      ["claude-code --no-such-flag", input("x y z", dir), baseEnv],
      ["claude-code --timeout-ms soon", input("x y z", dir), baseEnv],
      ["claude-code --timeout-ms 3000000000", input("x y z", dir), baseEnv], // past a timer's range
      ["claude-code", `{"prompt":"${"a".repeat(64 * 1024 * 1024)}"}`, baseEnv], // over the 64 MiB it reads
      ["claude-code --min-score high", input("x y z", dir), baseEnv],
      ["claude-code", "not json", baseEnv],
      ["claude-code", "[1,2]", baseEnv],
      ["claude-code", input("x y z", dir), { ...baseEnv, GAVEL_LOG: "maybe" }],
    ];
    for (const [entry, [args, stdin, env]] of ENTRIES.flatMap((e) => cases.map((c) => [e, c] as const))) {
      const r = await runShell(gavel(args, entry), stdin, env, dir);
      expect(r.code, `${entry} ${args}`).toBe(0);
      expect(r.out).toBe("");
      expect(r.err.trim().split("\n"), r.err).toHaveLength(1);
      expect(r.err.match(/nothing added to the prompt/g), r.err).toHaveLength(1);
    }
  });
});

describe("gavel hook claude-code: what a warm run loads", () => {
  it("the `gavel` executable answers from one file: no CLI chunk, no ES module run, no addon, no crypto, http or child_process", async () => {
    const project = tempDir("gavel-hook-lean-");
    const bank = join(project, ".gavel", "bank");
    await standIn(bank, () => answer("pdf-extract"));
    // a preload that reports, at exit, the built-in modules and the files the run loaded
    const probe = join(project, "probe.cjs");
    writeFileSync(probe, `process.on("exit", () => process.stderr.write("LOADED " + JSON.stringify({ builtins: process.moduleLoadList, files: Object.keys(require.cache) }) + "\\n"));\n`);
    const r = await runShell(`${q(process.execPath)} -r ${q(probe)} ${q(bin)} hook claude-code`, input("Extract the tables from report.pdf", project), { ...baseEnv, CLAUDE_PROJECT_DIR: project }, project);
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out).hookSpecificOutput.additionalContext).toMatch(/skill "pdf-extract"/);
    const loaded = JSON.parse(r.err.split("LOADED ")[1]) as { builtins: string[]; files: string[] };
    expect(loaded.files.sort()).toEqual([bin, probe].sort());
    const builtins = loaded.builtins.filter((m) => m.startsWith("NativeModule ")).map((m) => m.slice("NativeModule ".length));
    expect(builtins).toContain("net"); // the socket: the module that proves the list is the run's
    for (const heavy of ["crypto", "http", "child_process", "fs/promises", "internal/modules/esm/module_job"]) expect(builtins, heavy).not.toContain(heavy);
    expect(loaded.builtins.some((m) => /gavel.*\.node/.test(m))).toBe(false);
  });
});

describe("gavel hook claude-code against a server", () => {
  it("exits 0 when the socket answers what is not the gavel protocol, and when its stdout reader has gone", async () => {
    const project = tempDir("gavel-hook-garbage-");
    const bank = join(project, ".gavel", "bank");
    mkdirSync(bank, { recursive: true });
    for (const line of ["garbage", "null"]) {
      const server = createServer((sock) => {
        sock.on("error", () => undefined);
        sock.once("data", () => sock.write(line + "\n"));
      });
      await new Promise<void>((resolve) => server.listen(defaultSocketPath(bank), resolve));
      const r = await runShell(gavel("claude-code"), input("Extract the tables from report.pdf", project), { ...baseEnv, CLAUDE_PROJECT_DIR: project }, project);
      await new Promise((resolve) => server.close(resolve));
      expect(r.code, line).toBe(0);
      expect(r.out).toBe("");
      expect(r.err.trim(), line).toMatch(/^gavel hook: .*not a gavel answer/);
    }
    // a reader that closed its end before the answer (EPIPE on the write)
    await standIn(bank, () => answer("pdf-extract"));
    const child = spawn(process.execPath, [bin, "hook", "claude-code"], { env: { ...baseEnv, CLAUDE_PROJECT_DIR: project }, cwd: project });
    child.stdout.destroy();
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    child.stdin.end(input("Extract the tables from report.pdf", project));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(code, err).toBe(0);
    expect(err).not.toMatch(/EPIPE|Unhandled/);
  });

  it("reads a relative CLAUDE_PROJECT_DIR once, from where it runs", async () => {
    const root = tempDir("gavel-hook-rel-");
    await standIn(join(root, "proj", ".gavel", "bank"), () => answer("pdf-extract"));
    const r = await runShell(gavel("claude-code"), input("Extract the tables from report.pdf", root), { ...baseEnv, CLAUDE_PROJECT_DIR: "proj" }, root);
    expect(r.code).toBe(0);
    expect(r.err).toBe("");
    expect(JSON.parse(r.out).hookSpecificOutput.additionalContext).toMatch(/skill "pdf-extract"/);
  });

  it("finds the bank under CLAUDE_PROJECT_DIR when the prompt's cwd is a subfolder", async () => {
    const project = tempDir("gavel-hook-proj-");
    const sub = join(project, "src", "deep");
    mkdirSync(sub, { recursive: true });
    const { seen } = await standIn(join(project, ".gavel", "bank"), () => answer("pdf-extract"));
    const prompt = "Pull the revenue table out of report.pdf into a CSV";
    const r = await runShell(gavel("claude-code"), input(prompt, sub), { ...baseEnv, CLAUDE_PROJECT_DIR: project }, sub);
    expect(r.code).toBe(0);
    expect(r.err).toBe("");
    const out = JSON.parse(r.out) as { hookSpecificOutput: { hookEventName: string; additionalContext: string } };
    expect(out.hookSpecificOutput.hookEventName).toBe("UserPromptSubmit");
    expect(out.hookSpecificOutput.additionalContext).toMatch(/skill "pdf-extract"/);
    expect(out.hookSpecificOutput.additionalContext).toContain("/skills/pdf-extract/SKILL.md");
    expect(seen).toEqual([{ op: "glance", task: prompt }]);
    // a relative --bank is taken from the project root too
    const other = await standIn(join(project, "banks", "b2"), () => answer("dockerfile"));
    const r2 = await runShell(gavel("claude-code --bank banks/b2 --verdict"), input("Write a Dockerfile", sub), { ...baseEnv, CLAUDE_PROJECT_DIR: project }, sub);
    expect(JSON.parse(r2.out).hookSpecificOutput.additionalContext).toMatch(/skill "dockerfile"/);
    expect(other.seen.map((s) => s.op)).toEqual(["route"]);
    // without CLAUDE_PROJECT_DIR the subfolder has no bank: nothing added, and it says why
    const r3 = await runShell(gavel("claude-code"), input(prompt, sub), baseEnv, sub);
    expect(r3.code).toBe(0);
    expect(r3.out).toBe("");
    expect(r3.err.trim()).toBe(`gavel hook: no gavel server runs for the bank ${join(sub, ".gavel", "bank")} (start one with \`gavel serve\`); nothing added to the prompt`);
  });

  it("an empty --bank or --socket routes nothing (never the default bank) and says why on stderr; a blank or hex --min-score is not a number", async () => {
    const project = tempDir("gavel-hook-empty-bank-");
    // a server on the default bank, which an empty --bank must not reach
    const { seen } = await standIn(join(project, ".gavel", "bank"), () => answer("pdf-extract"));
    const empty = (name: string) => `--${name} needs a value, got "" (leave the flag out for its default)`;
    const cases: [string, string][] = [
      ['--bank ""', empty("bank")],
      ["--bank=", empty("bank")],
      ["-b ''", empty("bank")],
      ['--socket ""', empty("socket")],
      ["--min-score ' '", '--min-score must be a number, not " "'],
      ["--min-score 0x10", '--min-score must be a number, not "0x10"'], // not 16
      ["--min-score=-Infinity", '--min-score must be a number, not "-Infinity"'],
    ];
    for (const [entry, [flags, why]] of ENTRIES.flatMap((e) => cases.map((c) => [e, c] as const))) {
      const r = await runShell(gavel(`claude-code ${flags}`, entry), input("Extract the tables from report.pdf", project), { ...baseEnv, CLAUDE_PROJECT_DIR: project }, project);
      expect(r.code, `${entry} ${flags}`).toBe(0);
      expect(r.out, `${entry} ${flags}`).toBe("");
      expect(r.err.trim(), `${entry} ${flags}`).toBe(`gavel hook: ${why}; nothing added to the prompt`); // one line
    }
    expect(seen).toEqual([]); // the default bank's server was never asked
    // the same server, with the flag left out: routed
    const ok = await runShell(gavel("claude-code"), input("Extract the tables from report.pdf", project), { ...baseEnv, CLAUDE_PROJECT_DIR: project }, project);
    expect(JSON.parse(ok.out).hookSpecificOutput.additionalContext).toMatch(/skill "pdf-extract"/);
  });

  it("gives up at its budget when the server is busy, abstaining with a reason on stderr", async () => {
    const project = tempDir("gavel-hook-busy-");
    const { seen } = await standIn(join(project, ".gavel", "bank"), (op) => (op === "cancel" ? undefined : undefined));
    const r = await runShell(gavel("claude-code --timeout-ms 400"), input("Extract the tables from report.pdf", project), { ...baseEnv, CLAUDE_PROJECT_DIR: project }, project);
    expect(r.code).toBe(0);
    expect(r.out).toBe("");
    // its own deadline, not a clock here: the message names the 400 ms it gave up at; a hook that
    // waited for the stand-in (which never answers nor closes) would hang into this test's timeout
    expect(r.err.trim()).toBe("gavel hook: no answer within 400 ms (the gavel server is busy); nothing added to the prompt");
    // it asked, then cancelled what it gave up on
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen.map((s) => s.op)).toEqual(["glance", "cancel"]);
  });

  it("exits at its budget when the busy server does not close the connection it gave up on", async () => {
    // A server whose JavaScript thread is busy reads neither the cancel nor the end of the connection:
    // the hook must not wait for it to close (it waited until Claude Code's timeout killed it).
    const project = tempDir("gavel-hook-wedged-");
    const bank = join(project, ".gavel", "bank");
    mkdirSync(bank, { recursive: true });
    const server = createServer({ allowHalfOpen: true }, (sock) => {
      held.push(sock); // held until the test ends (afterEach): a hook that waits for the close hangs into the timeout
      sock.on("error", () => undefined);
      sock.resume(); // reads, never answers, never ends its side
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(defaultSocketPath(bank), resolve));
    for (const entry of ENTRIES) {
      // no clock: that it exits at all, the server holding the connection, is the contract
      const r = await runShell(gavel("claude-code --timeout-ms 400", entry), input("Extract the tables from report.pdf", project), { ...baseEnv, CLAUDE_PROJECT_DIR: project }, project);
      expect(r.code, entry).toBe(0);
      expect(r.out).toBe("");
      expect(r.err.trim()).toBe("gavel hook: no answer within 400 ms (the gavel server is busy); nothing added to the prompt");
    }
  }, 60_000);

  it("gives up at its budget on stdin that is never closed", async () => {
    const project = tempDir("gavel-hook-stdin-");
    // no clock: its message names the 300 ms it gave up at; a hook that waited for the end of stdin
    // would hang into this test's timeout (then afterEach ends it)
    const r = await new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, [cli, "hook", "claude-code", "--timeout-ms", "300"], { env: { ...baseEnv, CLAUDE_PROJECT_DIR: project }, cwd: project });
      children.push(child);
      let out = "";
      let err = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
      child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
      child.stdin.write('{"prompt": "Extract the tables'); // and never closed
      child.on("close", (code) => resolve({ code, out, err }));
    });
    expect(r.code).toBe(0);
    expect(r.out).toBe("");
    expect(r.err.trim()).toBe("gavel hook: stdin was not closed within 300 ms; nothing added to the prompt");
  });

  it("names the missing server on stderr when none runs, and ignores a stale socket file", async () => {
    const project = tempDir("gavel-hook-none-");
    const bank = join(project, ".gavel", "bank");
    const r = await runShell(gavel("claude-code"), input("Extract the tables from report.pdf", project), { ...baseEnv, CLAUDE_PROJECT_DIR: project }, project);
    expect(r.code).toBe(0);
    expect(r.out).toBe("");
    expect(r.err.trim()).toBe(`gavel hook: no gavel server runs for the bank ${bank} (start one with \`gavel serve\`); nothing added to the prompt`);
    // a socket left by a server that died: connect is refused
    const server = createServer();
    await new Promise<void>((resolve) => (mkdirSync(bank, { recursive: true }), server.listen(defaultSocketPath(bank), resolve)));
    // close without unlinking the socket file (as a killed server leaves it)
    const handle = (server as unknown as { _handle: { close(): void } | null })._handle;
    handle?.close();
    const r2 = await runShell(gavel("claude-code"), input("Extract the tables from report.pdf", project), { ...baseEnv, CLAUDE_PROJECT_DIR: project }, project);
    expect(r2.code).toBe(0);
    expect(r2.out).toBe("");
    expect(r2.err.trim().split("\n")).toHaveLength(1);
    expect(r2.err).toMatch(/no gavel server runs for the bank/);
  });
});

describe("a serve.http.json left by a killed server", () => {
  /** The pid in the start marker the on-demand start left beside the bank's socket; waits for that server (no model) to exit. */
  async function startedServerExits(bank: string): Promise<void> {
    const pid = Number(readFileSync(`${defaultSocketPath(bank)}.starting`, "utf8").trim());
    expect(pid).toBeGreaterThan(0);
    await until(() => !alive(pid), 60_000);
  }

  it("the hook says no server runs (and removes the file), and with --start-server starts one", async () => {
    const project = tempDir("gavel-hook-stale-http-");
    const bank = join(project, ".gavel", "bank");
    mkdirSync(bank, { recursive: true });
    // a server started on demand has no model here: it exits at once (what matters is that it was started)
    const env = { ...baseEnv, CLAUDE_PROJECT_DIR: project, GAVEL_MODEL: join(project, "no-model.gguf") };
    const { file } = await writeStaleEndpoint(bank);
    const r = await runShell(gavel("claude-code"), input("Extract the tables from report.pdf", project), env, project);
    expect(r.code).toBe(0);
    expect(r.out).toBe("");
    expect(r.err.trim()).toBe(`gavel hook: no gavel server runs for the bank ${bank} (a stale serve.http.json; start one with \`gavel serve\`); nothing added to the prompt`);
    expect(existsSync(file)).toBe(false); // its pid is gone and its port refuses: the killed server's, removed
    await writeStaleEndpoint(bank);
    const s = await runShell(gavel("claude-code --start-server --idle-exit-ms 1000"), input("Extract the tables from report.pdf", project), env, project);
    expect(s.code).toBe(0);
    expect(s.out).toBe("");
    expect(s.err.trim()).toMatch(new RegExp(`^gavel hook: no gavel server ran for the bank ${bank.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}; started one \\(pid \\d+, log [^)]+\\) for the next prompts; nothing added to the prompt$`));
    await startedServerExits(bank);
  }, 120_000);

  it("serverRouter({ start }) starts a server instead of failing on the file", async () => {
    const bank = join(tempDir("gavel-router-stale-http-"), "bank");
    mkdirSync(bank);
    await writeStaleEndpoint(bank);
    const model = process.env.GAVEL_MODEL;
    process.env.GAVEL_MODEL = join(bank, "no-model.gguf"); // the server it starts inherits this process's environment
    const router = serverRouter({ bank, start: { idleExitMs: 1000, waitMs: 1500 } });
    try {
      // no model: the server it started exits without listening, and the wait says so, naming its log
      await expect(router.route("Extract the tables from report.pdf")).rejects.toMatchObject({
        code: "FILE_NOT_FOUND",
        message: expect.stringMatching(/^the gavel server started for the bank .* did not listen within 1500 ms \(see .*serve\.sock\.log\)$/),
      });
    } finally {
      router.close();
      if (model === undefined) delete process.env.GAVEL_MODEL;
      else process.env.GAVEL_MODEL = model;
    }
    await startedServerExits(bank);
    expect(readFileSync(`${defaultSocketPath(bank)}.log`, "utf8")).toMatch(/model file not found/);
  }, 120_000);
});

describe("gavel hook install claude-code: portable commands", () => {
  /** The one gavel command in a settings file. */
  function installedCommand(file: string): string {
    const s = JSON.parse(readFileSync(file, "utf8")) as { hooks: { UserPromptSubmit: { hooks: { command: string; timeout: number }[] }[] } };
    const ours = s.hooks.UserPromptSubmit.flatMap((g) => g.hooks).filter((h) => h.command.includes("hook claude-code"));
    expect(ours).toHaveLength(1);
    expect(ours[0].timeout).toBe(10);
    return ours[0].command;
  }

  it("writes no absolute path into a project's settings, and the command it writes runs the hook", async () => {
    const project = tempDir("gavel-hook-portable-");
    // without a project install: npx, which never downloads (--no); the bank relative to the project
    const r = await runNode([cli, "hook", "install", "claude-code", "--dir", project, "--bank", join(project, "var", "bank")], { env: baseEnv, cwd: project });
    expect(r.code, r.err).toBe(0);
    const file = join(project, ".claude", "settings.json");
    expect(installedCommand(file)).toBe("npx --no gavel hook claude-code --bank var/bank");
    // with the project's own install (node_modules/.bin/gavel): that, through CLAUDE_PROJECT_DIR
    mkdirSync(join(project, "node_modules", ".bin"), { recursive: true });
    symlinkSync(bin, join(project, "node_modules", ".bin", "gavel")); // as npm links package.json's "bin"
    expect((await runNode([cli, "hook", "install", "claude-code", "--dir", project, "--bank", "var/bank", "--timeout-ms", "3000"], { env: baseEnv, cwd: project })).code).toBe(0);
    // a value the hook would refuse at every prompt is not written: INVALID_ARGUMENT (exit 1), the file untouched
    const before = readFileSync(join(project, ".claude", "settings.json"), "utf8");
    const refused: [string[], RegExp][] = [
      [["--timeout-ms", "3000000000"], /--timeout-ms must be a number of milliseconds from 1 to 600000/],
      [["--min-score", "abc"], /--min-score must be a number, not "abc"/],
      [["--min-score", ""], /--min-score must be a number, not ""/], // blank is not 0
      // a number written in decimal only, as every number flag takes: not hex (16), not Infinity
      [["--min-score", "0x10"], /--min-score must be a number, not "0x10"/],
      [["--min-score", "Infinity"], /--min-score must be a number, not "Infinity"/],
      [["--timeout-ms", "0x10"], /--timeout-ms must be a number of milliseconds from 1 to 600000, not "0x10"/],
      [["--idle-exit-ms", "0x10"], /--idle-exit-ms must be a positive integer of at most 2147483647, not "0x10"/],
      // an empty bank or socket would be dropped, and the hook would then use the default bank
      [["--bank", ""], /--bank needs a value, got "" \(leave the flag out for its default\)/],
      [["--socket", ""], /--socket needs a value, got "" \(leave the flag out for its default\)/],
      [["--socket="], /--socket needs a value, got ""/],
      // an empty folder is not the current one (which here is the project: its file would be rewritten)
      [["--dir", ""], /--dir needs a value, got "" \(leave the flag out for the current folder\)/],
      [["--dir="], /--dir needs a value, got ""/],
      [["--idle-exit-ms=nope", "--start-server"], /--idle-exit-ms must be a positive integer of at most 2147483647, not "nope"/],
      [["--idle-exit-ms", "0"], /--idle-exit-ms must be a positive integer of at most 2147483647, not "0"/],
      // past node's timers: the server it starts would refuse it
      [["--idle-exit-ms", "3000000000", "--start-server"], /--idle-exit-ms must be a positive integer of at most 2147483647, not "3000000000"/],
    ];
    for (const [flags, message] of refused) {
      const bad = await runNode([cli, "hook", "install", "claude-code", "--dir", project, ...flags], { env: baseEnv, cwd: project });
      expect(bad.code, flags.join(" ")).toBe(1);
      expect(bad.err).toMatch(message);
      expect(bad.err).toMatch(/\[INVALID_ARGUMENT\]/);
      expect(readFileSync(join(project, ".claude", "settings.json"), "utf8")).toBe(before);
    }
    const command = installedCommand(file);
    expect(command).toBe('"$CLAUDE_PROJECT_DIR"/node_modules/.bin/gavel hook claude-code --bank var/bank --timeout-ms 3000');
    expect(readFileSync(file, "utf8")).not.toContain(process.execPath);
    expect(readFileSync(file, "utf8")).not.toContain(project);
    const timeoutOf = () => (JSON.parse(readFileSync(file, "utf8")) as { hooks: { UserPromptSubmit: { hooks: { timeout: number }[] }[] } }).hooks.UserPromptSubmit[0].hooks[0].timeout;
    expect(timeoutOf()).toBe(10); // Claude Code's kill, above the 3 s budget
    // a budget past it raises Claude Code's timeout with it, so the hook gives up first
    expect((await runNode([cli, "hook", "install", "claude-code", "--dir", project, "--timeout-ms", "30000"], { env: baseEnv, cwd: project })).code).toBe(0);
    expect(timeoutOf()).toBe(35);
    expect((await runNode([cli, "hook", "install", "claude-code", "--dir", project, "--bank", "var/bank", "--timeout-ms", "3000"], { env: baseEnv, cwd: project })).code).toBe(0);
    // run it as Claude Code does, from a subfolder, against a server on the project's bank
    const sub = join(project, "app");
    mkdirSync(sub);
    await standIn(join(project, "var", "bank"), () => answer("csv-clean"));
    const env = { ...baseEnv, CLAUDE_PROJECT_DIR: project, PATH: `${join(process.execPath, "..")}:${process.env.PATH ?? ""}` };
    const ran = await runShell(command, input("Clean up this CSV file", sub), env, sub);
    expect(ran.code, ran.err).toBe(0);
    expect(JSON.parse(ran.out).hookSpecificOutput.additionalContext).toMatch(/skill "csv-clean"/);
    // --runner absolute keeps the old one-machine form
    expect((await runNode([cli, "hook", "install", "claude-code", "--dir", project, "--runner", "absolute"], { env: baseEnv, cwd: project })).code).toBe(0);
    expect(installedCommand(file)).toMatch(/^\S*node\S* \S*gavel\.js hook claude-code$/);
  });

  it("keeps a relative --bank relative in the user's settings, and refuses runners that cannot work there", async () => {
    const home = tempDir("gavel-hook-home-");
    const env = { ...baseEnv, HOME: home };
    const r = await runNode([cli, "hook", "install", "claude-code", "--user", "--bank", "banks/main"], { env, cwd: home });
    expect(r.code, r.err).toBe(0);
    expect(installedCommand(join(home, ".claude", "settings.json"))).toBe("npx --no gavel hook claude-code --bank banks/main");
    // a global install on PATH: the executable by name, no npm in the way
    expect((await runNode([cli, "hook", "install", "claude-code", "--user", "--runner", "path", "--bank", "banks/main"], { env, cwd: home })).code).toBe(0);
    expect(installedCommand(join(home, ".claude", "settings.json"))).toBe("gavel hook claude-code --bank banks/main");
    // a leading ~/ the shell left as it is (--bank=~/…) is the home folder, not a folder named ~
    expect((await runNode([cli, "hook", "install", "claude-code", "--user", "--bank=~/banks/main"], { env, cwd: home })).code).toBe(0);
    expect(installedCommand(join(home, ".claude", "settings.json"))).toBe(`npx --no gavel hook claude-code --bank ${join(home, "banks", "main")}`);
    const before = readFileSync(join(home, ".claude", "settings.json"), "utf8");
    for (const bad of [["--user", "--runner", "project"], ["--runner", "bun"], ["--user", "--local"], ["--user", "--dir", home]]) {
      const u = await runNode([cli, "hook", "install", "claude-code", ...bad], { env, cwd: home });
      expect(u.code, bad.join(" ")).toBe(2);
      expect(u.err).toMatch(/^usage: gavel hook/);
    }
    expect(readFileSync(join(home, ".claude", "settings.json"), "utf8")).toBe(before);
    expect((await runNode([cli, "hook", "install", "claude-code", "--user", "--dir", home], { env, cwd: home })).err).toMatch(/--dir names a project's folder: not with --user/);
  });

  it("refuses a malformed settings file with one typed line, leaving it untouched", async () => {
    const project = tempDir("gavel-hook-malformed-");
    mkdirSync(join(project, ".claude"));
    const file = join(project, ".claude", "settings.json");
    for (const bad of ["{ not json", "[1, 2]", '{"hooks": {"UserPromptSubmit": [}'] ) {
      writeFileSync(file, bad);
      const r = await runNode([cli, "hook", "install", "claude-code", "--dir", project], { env: baseEnv, cwd: project });
      expect(r.code).toBe(1);
      const lines = r.err.trim().split("\n");
      expect(lines, r.err).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^gavel: ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is not (valid JSON|a JSON object).*\\[INVALID_ARGUMENT\\]$`));
      expect(readFileSync(file, "utf8")).toBe(bad);
    }
  });
});

describe("gavel hook install claude-code: the settings file and its folder", () => {
  const install = (dir: string, ...flags: string[]) => runNode([cli, "hook", "install", "claude-code", "--dir", dir, ...flags], { env: baseEnv, cwd: tmpdir(), timeoutMs: 60_000 });
  /** The one line a refusal prints, checked: exit 1, the code, nothing left behind but what was there. */
  async function refused(dir: string, code: string, message: RegExp): Promise<void> {
    const r = await install(dir);
    expect(r.timedOut, r.err).toBe(false);
    expect(r.code, r.err).toBe(1);
    const lines = r.err.trim().split("\n");
    expect(lines, r.err).toHaveLength(1);
    expect(lines[0]).toMatch(message);
    expect(lines[0]).toMatch(new RegExp(`^gavel: .*\\[${code}\\]$`));
  }
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

  it("refuses a hooks setting of another shape than Claude Code's, or a number it would change, naming the place; the file untouched", async () => {
    const project = tempDir("gavel-hook-shape-");
    mkdirSync(join(project, ".claude"));
    const file = join(project, ".claude", "settings.json");
    const cases: [string, string][] = [
      ['{"hooks":{"UserPromptSubmit":[null]}}', "hooks.UserPromptSubmit[0] is null, not a matcher group"],
      ['{"hooks":{"UserPromptSubmit":[{"hooks":{}}]}}', "hooks.UserPromptSubmit[0].hooks is an object, not an array of hooks"],
      ['{"hooks":{"UserPromptSubmit":[{"matcher":""}]}}', "hooks.UserPromptSubmit[0].hooks is missing, not an array of hooks"],
      ['{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"echo a"},null]}]}}', "hooks.UserPromptSubmit[0].hooks[1] is null, not a hook"],
      ['{"hooks":{"UserPromptSubmit":{"hooks":[{"type":"command","command":"echo keepme"}]}}}', "hooks.UserPromptSubmit is an object, not an array of matcher groups"],
      ['{"hooks":{"PreToolUse":"x","UserPromptSubmit":[]}}', "hooks.PreToolUse is a string, not an array of matcher groups"],
      ['{"hooks":"x"}', "hooks is a string, not an object of hook events"],
      ['{"hooks":[]}', "hooks is an array, not an object of hook events"],
      ['{"hooks":null}', "hooks is null, not an object of hook events"],
      ['{"big": 9007199254740993, "f": 1}', "the value of big (9007199254740993) would be written back as 9007199254740992"],
      ['{"ok": 1.50, "f": [1e2, {"x y": 1e400}]}', 'the value of f[1]["x y"] (1e400) would be written back as null'],
    ];
    for (const [bad, place] of cases) {
      writeFileSync(file, bad);
      await refused(project, "INVALID_ARGUMENT", new RegExp(`^gavel: ${esc(file)}: ${esc(place)}.*\\[INVALID_ARGUMENT\\]$`));
      expect(readFileSync(file, "utf8")).toBe(bad);
    }
    // numbers written back as the same value are no reason to refuse
    writeFileSync(file, '{"n": [1.0, 1E2, 0.1, -0, 1.5e-3, 123456789, 1e21], "s": "9007199254740993"}');
    expect((await install(project)).code).toBe(0);
    expect(JSON.parse(readFileSync(file, "utf8")).n).toEqual([1, 100, 0.1, 0, 0.0015, 123456789, 1e21]);
  });

  it("leaves exactly one gavel hook where the file held two, keeping every other hook", async () => {
    const project = tempDir("gavel-hook-two-");
    mkdirSync(join(project, ".claude"));
    const file = join(project, ".claude", "settings.json");
    const theirs = { type: "command", command: "echo keep-me" };
    const old = (flags: string) => ({ type: "command", command: `npx --no gavel hook claude-code${flags}`, timeout: 10 });
    writeFileSync(file, JSON.stringify({ hooks: { UserPromptSubmit: [{ hooks: [old(" --verdict"), theirs] }, { matcher: "", hooks: [old(" --bank b")] }, { hooks: [{ type: "command", command: "echo other" }] }] } }));
    const r = await install(project);
    expect(r.code, r.err).toBe(0);
    const groups = (JSON.parse(readFileSync(file, "utf8")) as { hooks: { UserPromptSubmit: { hooks: { command: string }[] }[] } }).hooks.UserPromptSubmit;
    // the first replaced in place, the second gone with the group it leaves empty
    expect(groups).toEqual([{ hooks: [{ type: "command", command: "npx --no gavel hook claude-code", timeout: 10 }, theirs] }, { hooks: [{ type: "command", command: "echo other" }] }]);
  });

  it("writes through a symbolic link, keeping the file's mode; a link to nothing is refused", async () => {
    const project = tempDir("gavel-hook-link-");
    mkdirSync(join(project, ".claude"));
    mkdirSync(join(project, "dotfiles"));
    const real = join(project, "dotfiles", "claude-settings.json");
    writeFileSync(real, JSON.stringify({ model: "opus" }));
    chmodSync(real, 0o600);
    const file = join(project, ".claude", "settings.json");
    symlinkSync(join("..", "dotfiles", "claude-settings.json"), file);
    const r = await install(project);
    expect(r.code, r.err).toBe(0);
    expect(lstatSync(file).isSymbolicLink()).toBe(true);
    expect(statSync(real).mode & 0o777).toBe(0o600);
    const s = JSON.parse(readFileSync(real, "utf8")) as { model: string; hooks: { UserPromptSubmit: unknown[] } };
    expect(s.model).toBe("opus");
    expect(s.hooks.UserPromptSubmit).toHaveLength(1);
    expect(readdirSync(join(project, "dotfiles"))).toEqual(["claude-settings.json"]); // no temporary file left
    // a plain file keeps its mode too
    rmSync(file);
    writeFileSync(file, "{}");
    chmodSync(file, 0o640);
    expect((await install(project)).code).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o640);
    // a link to a missing file: FILE_NOT_FOUND, the link as it was, nothing created where it points
    rmSync(file);
    symlinkSync(join(project, "gone.json"), file);
    await refused(project, "FILE_NOT_FOUND", /is a symbolic link to a missing file/);
    expect(lstatSync(file).isSymbolicLink()).toBe(true);
    expect(existsSync(join(project, "gone.json"))).toBe(false);
  });

  it("refuses a --dir that is not an existing folder, and a .claude or settings file it cannot use, typed and untouched", async () => {
    // a mistyped --dir is not created
    const missing = join(tempDir("gavel-hook-nodir-"), "typo", "x");
    await refused(missing, "FILE_NOT_FOUND", new RegExp(`--dir ${esc(missing)}: no such file or folder`));
    expect(existsSync(join(missing, ".."))).toBe(false);
    await refused("/dev/null", "INVALID_ARGUMENT", /--dir \/dev\/null is not a folder/);
    // /proc/self: once a recursive mkdir that never returned; now only .claude is created, and that fails typed
    if (existsSync("/proc/self")) await refused("/proc/self", "FILE_NOT_FOUND", /cannot create \/proc\/self\/\.claude: /);
    // .claude: a regular file, a link to a missing folder
    const asFile = tempDir("gavel-hook-claudefile-");
    writeFileSync(join(asFile, ".claude"), "x");
    await refused(asFile, "INVALID_ARGUMENT", /\.claude is not a folder/);
    expect(readFileSync(join(asFile, ".claude"), "utf8")).toBe("x");
    const dangling = tempDir("gavel-hook-claudelink-");
    symlinkSync(join(dangling, "nowhere"), join(dangling, ".claude"));
    await refused(dangling, "FILE_NOT_FOUND", /\.claude is a symbolic link to a missing folder/);
    expect(existsSync(join(dangling, "nowhere"))).toBe(false);
    // the settings file: a folder, a FIFO (never blocks), past 16 MiB
    const project = tempDir("gavel-hook-notfile-");
    const file = join(project, ".claude", "settings.json");
    mkdirSync(file, { recursive: true });
    await refused(project, "INVALID_ARGUMENT", /settings\.json is a directory, not a regular file.*so it is left as it is/);
    rmSync(file, { recursive: true });
    if (spawnSync("mkfifo", [file]).status === 0) {
      await refused(project, "INVALID_ARGUMENT", /settings\.json is a FIFO \(named pipe\), not a regular file/);
      rmSync(file);
    }
    const big = `{"pad": "${"x".repeat(17 * 1024 * 1024)}"}`;
    writeFileSync(file, big);
    await refused(project, "INVALID_ARGUMENT", /settings\.json is \d+ bytes, above the cap of 16777216/);
    expect(statSync(file).size).toBe(big.length);
  });

  it("writes a folder named ..bank inside the project relative to it, and ../bank absolute", async () => {
    const project = tempDir("gavel-hook-dotdot-");
    const file = join(project, ".claude", "settings.json");
    const command = () => (JSON.parse(readFileSync(file, "utf8")) as { hooks: { UserPromptSubmit: { hooks: { command: string }[] }[] } }).hooks.UserPromptSubmit[0].hooks[0].command;
    expect((await install(project, "--bank", join(project, "..bank"))).code).toBe(0);
    expect(command()).toBe("npx --no gavel hook claude-code --bank ..bank");
    expect((await install(project, "--bank", join(project, "..", "bank"))).code).toBe(0);
    expect(command()).toBe(`npx --no gavel hook claude-code --bank ${join(project, "..", "bank")}`);
  });
});
