// Issue 35, CLI habits, run as a user would (node dist/cli/gavel.js …; `npx tsup` first): -v prints the
// version; with --json a failure is one JSON object on stderr; Ctrl-C exits 130 (it exited 1); a
// failed first install leaves no empty bank (it did); `sync --dry-run` works before any bank exists
// (it failed); an install writes the bank owner-only, and another user's check of it is one typed
// PERMISSION_DENIED line (it was a raw EACCES stack), as are its list, info and uninstall (they said
// CORRUPT_FILE and advised moving the bank aside).
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { othersCanReach, repoRoot } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { run } from "../helpers/run.js";
import { whenIdle } from "../helpers/signal-ready.js";

const cli = join(repoRoot, "dist", "cli", "gavel.js");
const pkg = JSON.parse((await import("node:fs")).readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string };
let root: string;
let home: string;
let proj: string;
const env = () => ({ ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "", HOME: home, XDG_CONFIG_HOME: join(home, ".config") });
const gavel = (...args: string[]) => run(process.execPath, [cli, ...args], { cwd: root, timeoutMs: 300_000, env: env() });
const model = () => ["--model", TINY_LLAMA_PATH, "--projections", proj, "--context", "1024", "--skill-budget", "256"];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "gavel-cli-habits-"));
  chmodSync(root, 0o755);
  home = join(root, "home");
  mkdirSync(home);
  proj = join(root, "p.gguf");
  const p = await gavel("projections", "--model", TINY_LLAMA_PATH, "--out", proj, "--dim", "64");
  expect(p.code, p.err).toBe(0);
}, 300_000);
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

/** A folder of `n` small skills. */
function skillsFolder(name: string, n: number): string {
  const dir = join(root, name);
  for (let i = 0; i < n; i++) {
    const s = `skill-${String(i).padStart(4, "0")}`;
    mkdirSync(join(dir, s), { recursive: true });
    writeFileSync(join(dir, s, "SKILL.md"), `---\nname: ${s}\ndescription: Use for task family ${i} of the demo.\n---\n\nDo step ${i}, then report.\n`);
  }
  return dir;
}

describe("gavel's habits", () => {
  it("-v prints the version like --version and -V", async () => {
    for (const flag of ["-v", "--version", "-V"]) {
      const r = await gavel(flag);
      expect(r.code, flag).toBe(0);
      expect(r.out.trim()).toBe(`gavel-router ${pkg.version}`);
    }
  });

  it("with --json a failure is one JSON object on stderr, stdout empty, the exit code kept", async () => {
    const missing = await gavel("check", "--bank", join(root, "no-such-bank"), "--json");
    expect(missing.code).toBe(1);
    expect(missing.out).toBe("");
    const e = JSON.parse(missing.err) as { error: { code: string; message: string; exitCode: number } };
    expect(e.error).toMatchObject({ code: "FILE_NOT_FOUND", exitCode: 1, message: expect.stringMatching(/no bank at/) });
    const usage = await gavel("check", "--frobnicate", "--json");
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.err).error).toMatchObject({ code: "USAGE", exitCode: 2 });
    // usage errors a command finds itself, and an unknown command: JSON too (they were the help text)
    for (const [args, message] of [
      [["install", "--json"], /gavel install takes one skills folder or library, not 0/],
      [["route", "--json"], /gavel route needs a task/],
      [["nosuch", "--json"], /unknown command 'nosuch'/],
      [["sync", "extra", "--json"], /gavel sync takes no positional argument/],
      // the lab's commands load from another bundle (gavel-router/lab)
      [["eval", "--json"], /gavel eval needs --tasks T and at least one --library L/],
      [["calibrate", "--json"], /gavel calibrate needs --per-query F or --tasks T/],
    ] as const) {
      const r = await gavel(...args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.out, args.join(" ")).toBe("");
      const j = JSON.parse(r.err) as { error: { code: string; message: string; exitCode: number } };
      expect(j.error, args.join(" ")).toMatchObject({ code: "USAGE", exitCode: 2, message: expect.stringMatching(message) });
      expect(j.error.message).not.toMatch(/\n/);
    }
    // without --json, the command's help as before
    const plain = await gavel("install");
    expect(plain.code).toBe(2);
    expect(plain.err).toMatch(/^usage: gavel install /);
    const labPlain = await gavel("eval");
    expect(labPlain.code).toBe(2);
    expect(labPlain.err).toMatch(/^usage: gavel eval /);
    const unknown = (await gavel("nosuch")).err;
    expect(unknown).toMatch(/^gavel: unknown command 'nosuch'\n\nusage: gavel <command>/);
    // it lists the commands --help lists, the lab's among them
    expect(unknown).toMatch(/\n {2}eval {2,}\S/);
    // every summary starts in one column, past the longest name (projections, train-gate)
    const columns = new Set([...unknown.matchAll(/^ {2}([a-z-]+ +)\S/gm)].map((m) => m[1].length));
    expect(columns.size).toBe(1);
    expect([...columns][0]).toBeGreaterThan("projections".length);
    expect(unknown.match(/^ {2}[a-z-]+ /gm)).toEqual((await gavel("--help")).out.match(/^ {2}[a-z-]+ /gm));
    // without --json: the text line as before
    expect((await gavel("check", "--bank", join(root, "no-such-bank"))).err).toMatch(/^gavel: no bank at .* \[FILE_NOT_FOUND\]\n$/);
  });

  it("a failed first install of a missing folder leaves no bank (nor the .gavel folder it made)", async () => {
    const project = join(root, "fresh-project");
    mkdirSync(project);
    const r = await gavel("install", join(project, "no-such-skills"), "--bank", join(project, ".gavel", "bank"), ...model());
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/FILE_NOT_FOUND/);
    expect(readdirSync(project)).toEqual([]);
    // a bank that existed before is never removed by a failed install
    const skills = skillsFolder("few", 2);
    const bank = join(project, ".gavel", "bank");
    expect((await gavel("install", skills, "--bank", bank, ...model())).code).toBe(0);
    expect((await gavel("install", join(project, "no-such-skills"), "--bank", bank, ...model())).code).toBe(1);
    expect(existsSync(join(bank, "manifest.json"))).toBe(true);
  }, 300_000);

  it("two first installs into one bank at once: one installs, the other is BANK_LOCKED, and the bank is whole", async () => {
    // the loser of the race removed the bank it had found missing, winner's lock and keys included,
    // while the winner wrote: the winner reported success over a bank without keys.bin
    const skills = skillsFolder("race", 60);
    for (const [round, delayMs] of [0, 150, 400].entries()) {
      const bank = join(root, `race-${round}`, ".gavel", "bank");
      const first = gavel("install", skills, "--bank", bank, ...model());
      await new Promise((r) => setTimeout(r, delayMs));
      const runs = await Promise.all([first, gavel("install", skills, "--bank", bank, ...model())]);
      expect(runs.some((r) => r.code === 0), `round ${round}: ${runs.map((r) => r.err).join("")}`).toBe(true);
      for (const r of runs) {
        const lines = r.err.split("\n").filter((l) => l !== "" && !l.startsWith("gavel: warning: "));
        if (r.code !== 0) expect(lines, `round ${round}`).toEqual([expect.stringMatching(/^gavel: bank .* is in use by .*\[BANK_LOCKED\]$/)]);
      }
      const check = await gavel("check", "--bank", bank);
      expect(check.code, `round ${round}: ${check.out}${check.err}`).toBe(0);
      const list = await gavel("list", "--bank", bank, "--json");
      expect(list.code, list.err).toBe(0);
      expect((JSON.parse(list.out) as { id: string }[]).map((x) => x.id).sort(), `round ${round}`).toEqual(readdirSync(skills).sort());
    }
  }, 600_000);

  it("install FILE: a file that is not a skill library is one INVALID_ARGUMENT line, exit 1, no bank left; a SKILL.md and a JSONL with a bad line install", async () => {
    const dir = join(root, "files");
    mkdirSync(dir);
    const txt = join(dir, "notes.txt");
    writeFileSync(txt, "hello there\nthis is text\n");
    const pdf = join(dir, "doc.pdf");
    writeFileSync(pdf, Buffer.concat([Buffer.from("%PDF-1.4\n%"), Buffer.from([0xe2, 0xe3, 0xcf, 0xd3, 0x0a]), Buffer.from("1 0 obj\n<< /Type /Catalog >>\n")]));
    for (const [file, start] of [[txt, "hello there"], [pdf, "%PDF-1.4"]] as const) {
      const bank = join(dir, `bank-${basename(file)}`);
      const r = await gavel("install", file, "--bank", bank, ...model());
      expect(r.code, r.err).toBe(1);
      expect(r.out).toBe("");
      expect(r.err).not.toMatch(/not valid JSON|failed:/);
      const refusals = r.err.split("\n").filter((l) => l.startsWith("gavel: ") && !l.startsWith("gavel: warning: "));
      expect(refusals).toEqual([`gavel: ${file} is not a JSONL skill library: its first line begins "${start}", not "{" (a library holds one JSON object a line). A skill source is a folder of skill folders, a skill folder, a SKILL.md file or a .jsonl[.gz] library [INVALID_ARGUMENT]`]);
      expect(existsSync(bank)).toBe(false); // a refused first install leaves no bank
      // with --json: the error object, as any failure's
      const j = await gavel("install", file, "--bank", bank, "--json", ...model());
      expect(j.code).toBe(1);
      expect(JSON.parse(j.err.trimEnd().split("\n").at(-1)!).error).toMatchObject({ code: "INVALID_ARGUMENT", exitCode: 1, message: expect.stringContaining("is not a JSONL skill library") });
    }
    // a lone SKILL.md installs its skill
    const one = join(skillsFolder("lone", 1), "skill-0000", "SKILL.md");
    const lone = await gavel("install", one, "--bank", join(dir, "bank-lone"), ...model());
    expect(lone.code, lone.err).toBe(0);
    expect(lone.out).toMatch(/installed 1, unchanged 0, failed 0/);
    // a JSONL library with a bad line: the good rows install, the bad one is a failed skill, as before
    const lib = join(dir, "lib.txt");
    writeFileSync(lib, `${JSON.stringify({ id: "a", name: "alpha", description: "Use for alpha tasks.", body: "Do alpha." })}\nnot json\n`);
    const jsonl = await gavel("install", lib, "--bank", join(dir, "bank-lib"), ...model());
    expect(jsonl.code, jsonl.err).toBe(0);
    expect(jsonl.out).toMatch(/installed 1, unchanged 0, failed 1/);
    expect(jsonl.out).toContain(`  failed: ${lib}:2: not valid JSON`);
  }, 300_000);

  it("an install's failed skill is one line: its path once, then the reason and its code", async () => {
    const skills = skillsFolder("one-bad", 1);
    mkdirSync(join(skills, "nofm"));
    writeFileSync(join(skills, "nofm", "SKILL.md"), "just text, no front matter\n");
    // an error at a line of the file (`path:3: …`) names the file once too
    mkdirSync(join(skills, "yamlbad"));
    writeFileSync(join(skills, "yamlbad", "SKILL.md"), "---\nname: yamlbad\ndescription: ok\n\tversion: 2\n---\nbody\n");
    const r = await gavel("install", skills, "--bank", join(root, "bad-bank"), ...model());
    expect(r.code, r.err).toBe(0);
    const lines = r.out.split("\n").filter((l) => l.includes("failed: "));
    const where = join(skills, "nofm", "SKILL.md");
    expect(lines[0]).toBe(`  failed: ${where}: no YAML front matter (a SKILL.md starts with a '---' line) [SKILL_INVALID]`);
    expect(lines[1]).toMatch(new RegExp(`^  failed: ${join(skills, "yamlbad", "SKILL.md").replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:4: malformed YAML front matter: [^/]*\\[SKILL_INVALID\\]$`));
    // --json gives each failure as the server's install does: {where, error: {code, message}}
    const j = await gavel("install", skills, "--bank", join(root, "bad-bank"), "--json", ...model());
    expect(j.code, j.err).toBe(0);
    expect(JSON.parse(j.out).failed).toEqual([
      { where, error: { code: "SKILL_INVALID", message: expect.stringContaining("no YAML front matter (a SKILL.md starts with a '---' line)") } },
      { where: join(skills, "yamlbad", "SKILL.md"), error: { code: "SKILL_INVALID", message: expect.stringContaining(":4: malformed YAML front matter: ") } },
    ]);
  }, 300_000);

  it("a task of blanks piped on stdin is refused by name; nothing piped prints the usage", async () => {
    const blank = await run(process.execPath, [cli, "route", "--bank", join(root, "bad-bank"), ...model()], { cwd: root, timeoutMs: 300_000, env: env(), input: "   \n\t\n" });
    expect(blank.code).toBe(1);
    expect(blank.err).toMatch(/the task piped on stdin is only whitespace.*INVALID_ARGUMENT/);
    const none = await run(process.execPath, [cli, "route", "--bank", join(root, "bad-bank"), ...model()], { cwd: root, timeoutMs: 300_000, env: env(), input: "" });
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/gavel route needs a task/);
  }, 300_000);

  it("an option value of the wrong kind is INVALID_ARGUMENT, exit 1, named by its flag", async () => {
    const top = await gavel("glance", "write a dockerfile", "--top", "0", "--bank", join(root, "bad-bank"), ...model());
    expect(top.code).toBe(1);
    expect(top.err).toMatch(/--top must be .*, got 0 \[INVALID_ARGUMENT\]/);
    const flagged = await gavel("route", "write a dockerfile", "--exclude-flagged", "bogus", "--bank", join(root, "bad-bank"), ...model());
    expect(flagged.code).toBe(1);
    expect(flagged.err).toMatch(/--exclude-flagged takes .*, got "bogus" \[INVALID_ARGUMENT\]/);
    const budget = await gavel("route", "write a dockerfile", "--bank", join(root, "bad-bank"), ...model(), "--skill-budget", "abc");
    expect(budget.code).toBe(1);
    expect(budget.err).toMatch(/--skill-budget must be a whole number from 16 to 4194304, got abc \[INVALID_ARGUMENT\]/);
  }, 300_000);

  it("sync --dry-run on a fresh project lists what it would install, creates nothing", async () => {
    const project = join(root, "sync-project");
    const folder = join(project, ".claude", "skills", "pdf-fill");
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, "SKILL.md"), "---\nname: pdf-fill\ndescription: Fill PDF forms.\n---\n\nFill it.\n");
    const bank = join(project, ".gavel", "bank");
    const r = await run(process.execPath, [cli, "sync", "--dry-run", "--host", "claude-code", "--project", project, "--bank", bank], { cwd: project, env: env(), timeoutMs: 120_000 });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/would install pdf-fill \(new\)/);
    expect(r.out).toMatch(/dry run: would install 1 new/);
    const j = await run(process.execPath, [cli, "sync", "--dry-run", "--json", "--host", "claude-code", "--project", project, "--bank", bank], { cwd: project, env: env(), timeoutMs: 120_000 });
    expect(j.code, j.err).toBe(0);
    expect(JSON.parse(j.out)).toMatchObject({ dryRun: true, installed: ["pdf-fill"], uninstalled: [] });
    expect(existsSync(join(project, ".gavel"))).toBe(false);
  });

  it("Ctrl-C exits 130: mid-install (after closing the bank) and while waiting on stdin", async () => {
    const skills = skillsFolder("many", 400);
    const bank = join(root, "sigint-bank");
    const child = spawn(process.execPath, [cli, "install", skills, "--bank", bank, ...model()], { cwd: root, env: env(), stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    const sent = new Promise<void>((resolve) => {
      child.stderr.setEncoding("utf8").on("data", (d: string) => {
        err += d;
        // the first progress line: the install is under way
        if (/\d+\/400/.test(err) && child.signalCode === null && !child.killed) {
          child.kill("SIGINT");
          resolve();
        }
      });
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
    await sent;
    expect(code, err).toBe(130);
    // the bank was closed cleanly: not locked, readable by check
    expect(existsSync(join(bank, "lock"))).toBe(false);
    const chk = await gavel("check", "--bank", bank);
    expect(chk.code, chk.out + chk.err).toBe(0);
    // a command with nothing to cancel (here `route -` waiting on stdin) exits 130 at once
    const waiting = spawn(process.execPath, [cli, "route", "-", "--bank", bank, ...model()], { cwd: root, env: env(), stdio: ["pipe", "pipe", "pipe"] });
    await whenIdle(waiting.pid!); // started and waiting on stdin (a loaded machine starts slowly)
    waiting.kill("SIGINT");
    const code2 = await new Promise<number | null>((resolve) => waiting.on("close", (c) => resolve(c)));
    expect(code2).toBe(130);
  }, 300_000);

  it("an installed bank is the owner's only; another user's check is one PERMISSION_DENIED line", async () => {
    const old = process.umask(0o002);
    const bank = join(root, "owned", ".gavel", "bank");
    try {
      const r = await gavel("install", skillsFolder("two", 2), "--bank", bank, ...model());
      expect(r.code, r.err).toBe(0);
    } finally {
      process.umask(old);
    }
    expect(statSync(bank).mode & 0o777).toBe(0o700);
    for (const f of readdirSync(bank)) {
      const st = statSync(join(bank, f));
      if (st.isFile()) expect(st.mode & 0o777, f).toBe(0o600);
    }
    if (process.getuid?.() !== 0) return; // another user needs root to become
    if (!othersCanReach(repoRoot)) return console.error("[skip] another user cannot reach this checkout (a 0700 folder above it)");
    chmodSync(join(root, "owned"), 0o755);
    chmodSync(join(root, "owned", ".gavel"), 0o755);
    const asNobody = (...args: string[]) => run("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, cli, ...args], { cwd: root, env: env(), timeoutMs: 60_000 });
    const r = await asNobody("check", "--bank", bank);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^gavel: permission denied checking bank .*EACCES.* \[PERMISSION_DENIED\]\n$/);
    // the commands that read only the manifest say the same, not that a healthy bank is corrupt
    for (const args of [["list", "--bank", bank], ["info", bank], ["uninstall", "skill-0000", "--bank", bank], ["list", "--bank", bank, "--json"]]) {
      const x = await asNobody(...args);
      expect(x.code, args.join(" ")).toBe(1);
      expect(x.err, args.join(" ")).toMatch(/PERMISSION_DENIED/);
      expect(x.err, args.join(" ")).not.toMatch(/CORRUPT_FILE|move .* aside/);
    }
  }, 300_000);

  it("`--` ends the flags: a skill named -h is an argument after it, not a call for help", async () => {
    const help = await gavel("uninstall", "-h");
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/usage: gavel uninstall/);
    // past --, -h is the skill to remove: the command runs (here over a bank that does not exist)
    const r = await gavel("uninstall", "--bank", join(root, "no-bank-here"), "--", "-h");
    expect(r.out).not.toMatch(/usage: gavel uninstall/);
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/FILE_NOT_FOUND|no bank/);
  }, 300_000);
});
