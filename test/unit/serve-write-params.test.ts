// The write ops' optional parameters (docs/serve-protocol.md, "Operations"): a `dryRun`, `progress`
// or `cwd` the server cannot read as asked is refused (INVALID_ARGUMENT naming it) before anything is
// written, never taken as absent (`"dryRun": "true"` taken as absent is a real sync). The server runs in this
// process over a stand-in router (no model) that records every write it is asked for.
import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GavelError } from "../../src/errors.js";
import type { Router } from "../../src/route/index.js";
import { residentFixtures } from "../helpers/resident-fixtures.js";
import { ResidentServer } from "../../src/serve/server.js";
import { connect } from "../../src/serve/client.js";

/** A router stand-in with an empty bank: each install and uninstall is recorded and answered as done. */
function fakeRouter(bankDir: string, installed: { id: string; name: string; source: string }[] = []) {
  const writes: string[] = [];
  const router = {
    bankDir,
    list: () => installed,
    // an installed skill's text: never the same as the project's copy
    get: async (id: string) => ({ id, contentHash: "0".repeat(64) }),
    stats: () => ({ skills: 0 }),
    close: async () => undefined,
    install: async (source: unknown) => {
      writes.push(`install ${Array.isArray(source) ? source.map((s: { id: string }) => s.id).join(",") : String(source)}`);
      return { installed: [], unchanged: [], failed: [], warnings: [], truncated: [], tokens: 0, keys: 0, rawKeys: 0, seconds: 0 };
    },
    uninstall: async (id: string) => (writes.push(`uninstall ${id}`), true),
  };
  return { router: router as unknown as Router, writes };
}

const { model, dirs, servers } = residentFixtures();

/** A server over the stand-in, its client, and a project whose .claude/skills holds one new skill. */
async function setUp(kind: "unix" | "http", installed: (dir: string) => { id: string; name: string; source: string }[] = () => []) {
  const dir = mkdtempSync(join(tmpdir(), "gavel-serve-params-"));
  dirs.push(dir);
  const project = join(dir, "project");
  const home = join(dir, "home");
  mkdirSync(join(project, ".claude", "skills", "pdf-extract"), { recursive: true });
  mkdirSync(home);
  writeFileSync(join(project, ".claude", "skills", "pdf-extract", "SKILL.md"), "---\nname: pdf-extract\ndescription: Extract tables and text from PDF files.\n---\n# pdf-extract\n\nUse pdfplumber.\n");
  const fake = fakeRouter(join(dir, "bank"), installed(dir));
  mkdirSync(fake.router.bankDir); // over HTTP its serve.http.json is written there
  const socket = join(dir, "s.sock");
  servers.push(await ResidentServer.start({ router: fake.router, model, modelPath: "fake.gguf", socket, graceMs: 100, ...(kind === "http" ? { port: 0 } : {}) }));
  const client = await connect(kind === "unix" ? { socket } : { bank: fake.router.bankDir });
  return { client, dir, project, home, writes: fake.writes };
}

/** The error code a request rejects with and its message, or "ok". */
async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "ok";
  } catch (err) {
    return err instanceof GavelError ? `${err.code}: ${err.message}` : `untyped ${String(err)}`;
  }
}

describe("the write ops' optional parameters", () => {
  it("a sync whose dryRun is not a boolean is refused and writes nothing; a dry run writes nothing; a sync writes", async () => {
    for (const kind of ["unix", "http"] as const) {
      const { client, project, home, writes } = await setUp(kind);
      try {
        const where = { host: "claude-code", projectDir: project, home };
        for (const dryRun of ["true", 1, null, {}]) {
          expect(await refusal(client.request("sync", { ...where, dryRun })), `${kind} ${JSON.stringify(dryRun)}`).toMatch(/^INVALID_ARGUMENT: dryRun must be a boolean, got /);
        }
        expect(writes).toEqual([]);
        const dry = await client.request<{ dryRun: boolean; plan: { add: { id: string }[] } }>("sync", { ...where, dryRun: true });
        expect(dry.dryRun).toBe(true);
        expect(dry.plan.add.map((s) => s.id)).toEqual(["pdf-extract"]);
        expect(writes).toEqual([]);
        await client.request("sync", { ...where, dryRun: false });
        expect(writes).toEqual(["install pdf-extract"]);
      } finally {
        client.close();
      }
    }
  });

  it("a host skill whose id is installed from elsewhere is a conflict: neither replaced nor, once deleted on disk, uninstalled", async () => {
    // pdf-extract installed from a folder that is not the host's (an examples folder, say)
    const elsewhere = (dir: string) => [{ id: "pdf-extract", name: "pdf-extract", source: join(dir, "examples", "pdf-extract", "SKILL.md") }];
    for (const kind of ["unix", "http"] as const) {
      const { client, dir, project, home, writes } = await setUp(kind, elsewhere);
      try {
        const where = { host: "claude-code", projectDir: project, home };
        type Answer = { plan: { add: unknown[]; update: unknown[]; remove: unknown[]; conflicts: { id: string; source: string; installed: string }[] } };
        for (const dryRun of [true, false]) {
          const res = await client.request<Answer>("sync", { ...where, dryRun });
          expect([res.plan.add, res.plan.update, res.plan.remove], kind).toEqual([[], [], []]);
          expect(res.plan.conflicts, kind).toEqual([{ id: "pdf-extract", source: join(project, ".claude", "skills", "pdf-extract", "SKILL.md"), installed: elsewhere(dir)[0].source }]);
        }
        rmSync(join(project, ".claude", "skills", "pdf-extract"), { recursive: true });
        const gone = await client.request<Answer>("sync", { ...where, dryRun: false });
        expect([gone.plan.remove, gone.plan.conflicts], kind).toEqual([[], []]);
        expect(writes, kind).toEqual([]);
      } finally {
        client.close();
      }
    }
  });

  it("a cwd that is not an absolute path, and a progress that is not a boolean, are refused before a write", async () => {
    const { client, project, home, writes } = await setUp("unix");
    try {
      const skill = join(".claude", "skills", "pdf-extract");
      for (const cwd of ["project", "", 5, ["/tmp"]]) {
        expect(await refusal(client.request("install", { source: skill, cwd })), JSON.stringify(cwd)).toMatch(/^INVALID_ARGUMENT: cwd must be an absolute path, got /);
        expect(await refusal(client.request("sync", { host: "claude-code", projectDir: project, home, cwd })), JSON.stringify(cwd)).toMatch(/^INVALID_ARGUMENT: cwd must be an absolute path, got /);
      }
      expect(await refusal(client.request("install", { source: skill, cwd: project, progress: "true" }))).toBe("INVALID_ARGUMENT: progress must be a boolean, got string");
      expect(writes).toEqual([]);
      // a relative source is taken from an absolute cwd
      expect(await refusal(client.request("install", { source: skill, cwd: project }))).toBe("ok");
      expect(writes).toEqual([`install ${join(project, skill)}`]);
    } finally {
      client.close();
    }
  });
});
