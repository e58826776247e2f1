// `gavel install` and `gavel sync` while `gavel serve` runs, as a user runs them (node dist/cli/gavel.js):
// the writes go through the server (no BANK_LOCKED), print what the local commands print, and the new
// skill is routed by the server at once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "../../src/serve/client.js";
import { serverRouter } from "../../src/serve/client-router.js";
import { SkillInjector } from "../../src/adapters/core.js";
import { runNode } from "../helpers/run.js";
import { repoRoot } from "../helpers/paths.js";
import { cli, startServe, type ServeChild } from "../helpers/serve-process.js";

const skillsDir = join(repoRoot, "examples", "skills");
const EXAMPLES = readdirSync(skillsDir).length;

/** One SKILL.md folder. */
function writeSkill(root: string, name: string, description: string, body: string): string {
  const d = join(root, name);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, "SKILL.md"), `---\nname: ${name}\ndescription: ${description}\n---\n# ${name}\n\n${body}\n`);
  return d;
}

const HELM = "helm-rollback";
const HELM_TASK = "The helm upgrade of our payments chart failed halfway on the Kubernetes cluster; roll the Helm release back to its previous revision.";

describe("install and sync through a running gavel serve", () => {
  let dir: string;
  let bank: string;
  let project: string;
  let env: NodeJS.ProcessEnv;
  let server: ServeChild;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-serve-writes-"));
    bank = join(dir, "bank");
    project = join(dir, "project");
    const home = join(dir, "home"); // no user skill folders: the sync sees the project's alone
    mkdirSync(home);
    mkdirSync(join(project, ".claude", "skills"), { recursive: true });
    env = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "", HOME: home };
    server = await startServe(["--bank", bank, "--create"], { env });
  }, 300_000);

  afterAll(() => {
    server?.child.kill("SIGKILL");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("`gavel install` installs through the server, with its progress and the local command's output", async () => {
    const r = await runNode([cli, "install", skillsDir, "--bank", bank], { env, timeoutMs: 300_000 });
    expect(r.err).not.toMatch(/BANK_LOCKED/);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain(`gavel install: through the running gavel serve (${join(bank, "serve.sock")})`);
    expect(r.err).toContain(`${EXAMPLES}/${EXAMPLES} (100%)`); // the server's progress, streamed back
    expect(r.out).toMatch(new RegExp(`^installed ${EXAMPLES}, unchanged 0, failed 0 in [\\d.]+ s \\(\\d+ tokens, \\d+ keys kept of \\d+\\)`));
    expect(r.out).toContain("stages, summed over skills in flight:");
    expect(r.err).not.toContain("does not read");
    // --json: the local command's object; a second install finds every skill unchanged (the server
    // keeps its own skill budget, and a line on stderr says that --skill-budget was not read)
    const j = await runNode([cli, "install", skillsDir, "--bank", bank, "--json", "--skill-budget", "256"], { env, timeoutMs: 300_000 });
    expect(j.code, j.err).toBe(0);
    expect(j.err).toMatch(/^gavel install: answered by the gavel serve running for this bank \(model .+\), which does not read --skill-budget: it keeps the model and settings it was started with$/m);
    const rep = JSON.parse(j.out) as { installed: string[]; unchanged: string[]; failed: unknown[] };
    expect(rep.installed).toEqual([]);
    expect(rep.unchanged).toHaveLength(EXAMPLES);
    expect(rep.failed).toEqual([]);
    const c = await connect({ bank });
    try {
      expect((await c.request<{ name: string }[]>("list")).map((s) => s.name)).toContain("pdf-extract");
    } finally {
      c.close();
    }
  }, 600_000);

  it("a failed install through the server is typed and exits as the local one does", async () => {
    const missing = join(dir, "no-such-folder");
    const r = await runNode([cli, "install", missing, "--bank", bank, "--json"], { env, timeoutMs: 120_000 });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.err.trim().split("\n").at(-1)!)).toMatchObject({ error: { code: "FILE_NOT_FOUND", exitCode: 1 } });
  }, 120_000);

  it("a skill whose render cannot fit the server's skill budget fails naming the option, worded with gavel serve's flags", async () => {
    // a name whose tokens alone overflow gavel-mini's skill budget (its projections' 512 tokens)
    const src = join(dir, "long-name");
    mkdirSync(join(src, "long-name"), { recursive: true });
    const name = Array.from({ length: 400 }, (_, i) => `word${i}`).join("-");
    writeFileSync(join(src, "long-name", "SKILL.md"), `---\nname: ${name}\ndescription: does one thing\n---\nThe body.\n`);
    const c = await connect({ bank });
    try {
      const report = await c.request<{ failed: { where: string; error: { code: string; message: string; option?: string } }[] }>("install", { source: src });
      expect(report.failed).toHaveLength(1);
      const { error } = report.failed[0];
      expect(error).toMatchObject({ code: "SKILL_INVALID", option: "skillBudget" });
      expect(error.message).toMatch(/alone overflow the skill budget of 512 tokens .*; the skill budget is the projections' skill budget: give a larger --skill-budget$/);
    } finally {
      c.close();
    }
  }, 120_000);

  it("`gavel sync` installs a new project skill through the server, which then routes to it", async () => {
    writeSkill(
      join(project, ".claude", "skills"),
      HELM,
      "Roll back a failed Helm release on a Kubernetes cluster to an earlier revision. Use when a helm upgrade broke a deployment.",
      "Run `helm history <release>` to list revisions, then `helm rollback <release> <revision> --wait`. Check the pods with kubectl get pods afterwards.",
    );
    const dry = await runNode([cli, "sync", "--host", "claude-code", "--dry-run", "--bank", bank, "--context", "4096"], { env, cwd: project, timeoutMs: 120_000 });
    expect(dry.code, dry.err).toBe(0);
    expect(dry.err).toMatch(/^gavel sync: answered by the gavel serve running for this bank \(model .+\), which does not read --context: it keeps the model and settings it was started with$/m);
    expect(dry.out).toContain(`would install ${HELM} (new)`);
    expect(dry.out).toMatch(/dry run: would install 1 new, 0 changed; would uninstall 0/);
    const r = await runNode([cli, "sync", "--host", "claude-code", "--bank", bank, "--json"], { env, cwd: project, timeoutMs: 300_000 });
    expect(r.err).not.toMatch(/BANK_LOCKED/);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain("gavel sync: through the running gavel serve");
    expect(r.err).not.toContain("does not read");
    expect(JSON.parse(r.out)).toMatchObject({ host: "claude-code", dryRun: false, installed: [HELM], updated: [], uninstalled: [], unchanged: 0, failed: [] });
    const c = await connect({ bank });
    try {
      const res = await c.request<{ skill: string | null; winner: { path: string | null } | null }>("route", { task: HELM_TASK, abstain: false });
      expect(res.skill).toBe(HELM);
      expect(res.winner?.path).toBe(join(project, ".claude", "skills", HELM, "SKILL.md"));
    } finally {
      c.close();
    }
    // a framework adapter over the server (no model in this process) injects the new skill
    const router = serverRouter({ bank });
    try {
      const routed = await new SkillInjector(router, { abstain: false }).route(HELM_TASK);
      expect(routed.skill?.name).toBe(HELM);
      expect(routed.instructions).toContain("helm rollback <release> <revision> --wait");
    } finally {
      router.close();
    }
    // deleted on disk: the next sync uninstalls it, through the server again (text output this time)
    rmSync(join(project, ".claude", "skills", HELM), { recursive: true });
    const gone = await runNode([cli, "sync", "--host", "claude-code", "--bank", bank], { env, cwd: project, timeoutMs: 120_000 });
    expect(gone.code, gone.err).toBe(0);
    expect(gone.out).toContain(`uninstall ${HELM} (deleted on disk)`);
    expect(gone.out).toMatch(/installed 0 new, 0 changed; uninstalled 1; unchanged 0/);
    const c2 = await connect({ bank });
    try {
      expect((await c2.request<{ name: string }[]>("list")).map((s) => s.name)).not.toContain(HELM);
    } finally {
      c2.close();
    }
  }, 600_000);

  it("Ctrl-C during an install through the server exits 130 and leaves a bank that still serves", async () => {
    const lib = join(dir, "many");
    for (let i = 0; i < 30; i++) writeSkill(lib, `gadget-${i}`, `Tune the gadget ${i} controller and its firmware. Use when gadget ${i} drifts.`, `Step ${i}: read the gadget ${i} log, recalibrate, then restart it.\n`.repeat(15));
    const child = spawn(process.execPath, [cli, "install", lib, "--bank", bank], { env });
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    child.stdout.resume();
    const code = new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
    // once the server has reported some progress, interrupt the client
    const deadline = Date.now() + 240_000;
    while (!/\d+\/30 /.test(err) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    child.kill("SIGINT");
    expect(await code).toBe(130);
    expect(err).toMatch(/ABORTED/);
    const c = await connect({ bank });
    try {
      // the server settled the cancelled write: what it committed is whole, and it serves
      const names = (await c.request<{ name: string }[]>("list")).map((s) => s.name);
      expect(names).toContain("pdf-extract");
      const gadgets = names.filter((n) => n.startsWith("gadget-"));
      expect(gadgets.length).toBeLessThan(30);
      for (const g of gadgets.slice(0, 3)) expect((await c.request<{ name: string }>("get-skill", { skill: g })).name).toBe(g);
      expect(await c.request("ping")).toEqual({ pong: true, v: 1 });
    } finally {
      c.close();
    }
    // and a later install through it completes the library
    const again = await runNode([cli, "install", lib, "--bank", bank, "--json"], { env, timeoutMs: 300_000 });
    expect(again.code, again.err).toBe(0);
    const rep = JSON.parse(again.out) as { installed: string[]; unchanged: string[] };
    expect(rep.installed.length + rep.unchanged.length).toBe(30);
  }, 600_000);

  it("shuts down on SIGTERM after the writes, releasing the bank", async () => {
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    // without a server, install opens the bank itself again
    const r = await runNode([cli, "install", skillsDir, "--bank", bank, "--context", "2048", "--json"], { env, timeoutMs: 300_000 });
    expect(r.code, r.err).toBe(0);
    expect(r.err).not.toContain("through the running gavel serve");
    expect((JSON.parse(r.out) as { unchanged: string[] }).unchanged).toHaveLength(EXAMPLES);
  }, 300_000);
});

describe("install through a gavel serve --port (HTTP)", () => {
  it("shows the server's progress, streamed back as NDJSON", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-serve-writes-http-"));
    const env = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" };
    const bank = join(dir, "bank");
    const server = await startServe(["--bank", bank, "--create", "--port", "0"], { env });
    try {
      const skills = join(dir, "skills");
      writeSkill(skills, HELM, "Roll back a failed Helm release on Kubernetes.", "Run helm history, then helm rollback to the last good revision.");
      writeSkill(skills, "pg-slow-query", "Find why a Postgres query is slow.", "Run EXPLAIN ANALYZE, then add the missing index.");
      const r = await runNode([cli, "install", skills, "--bank", bank], { env, timeoutMs: 300_000 });
      expect(r.code, r.err).toBe(0);
      expect(r.err).toMatch(/gavel install: through the running gavel serve \(http:\/\/127\.0\.0\.1:\d+\)/);
      expect(r.err).toContain("2/2 (100%)"); // printed only from the progress lines the server sent
      expect(r.out).toMatch(/installed 2, unchanged 0, failed 0/);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});
