// `gavel mcp` through the resident router, run as a user runs it (node dist/cli/gavel.js mcp) and driven
// by the MCP SDK's own Client over stdio: with a `gavel serve` for the bank its tools answer through
// it (no model file mapped in the MCP process) with the same shortlist and winner as a `gavel mcp` that
// loads its own model; a server killed mid-session is replaced by the local model (the call answers,
// it never hangs); GAVEL_START_SERVER=1 starts a server on demand, which exits once idle.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { connect, isRunning } from "../../src/serve/client.js";
import { runNode } from "../helpers/run.js";
import { repoRoot } from "../helpers/paths.js";
import { alive, cli, startServe, until, type ServeChild } from "../helpers/serve-process.js";

const skillsDir = join(repoRoot, "examples", "skills");
/** The embedded pair, whatever the caller's environment says; no server started unless a test asks. */
const env: Record<string, string> = { ...(process.env as Record<string, string>), GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "", GAVEL_START_SERVER: "" };
const TASKS = [
  "Our quarterly report came as report.pdf; get the revenue table out of it into a CSV file.",
  "This Postgres query on the orders table takes eight seconds; figure out why and make it fast.",
  "Write a haiku about autumn leaves.",
];

interface ToolResult {
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}
interface Hit {
  id: string;
  rank: number;
  stage: string;
  score: number;
  g: number;
}
interface Search {
  chosen: string | null;
  abstained: boolean;
  skills: Hit[];
}

/** A `gavel mcp` child with its SDK client and its stderr so far. */
interface McpSession {
  client: Client;
  pid: number;
  stderr(): string;
  close(): Promise<void>;
}

async function openMcp(bank: string, args: string[] = [], extraEnv: Record<string, string> = {}): Promise<McpSession> {
  let stderr = "";
  const transport = new StdioClientTransport({ command: process.execPath, args: [cli, "mcp", "--bank", bank, ...args], env: { ...env, ...extraEnv }, stderr: "pipe" });
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: "gavel-mcp-serve-test", version: "0.0.0" });
  await client.connect(transport);
  return { client, pid: transport.pid!, stderr: () => stderr, close: () => client.close() };
}

async function search(s: McpSession, task: string): Promise<Search> {
  const r = (await s.client.callTool({ name: "search_skills", arguments: { task, k: 5 } }, undefined, { timeout: 300_000 })) as ToolResult;
  expect(r.isError, r.content[0]?.text).toBeFalsy();
  return r.structuredContent as unknown as Search;
}

/** Whether the process maps a .gguf file (a model loaded in it; the addon maps the model file). */
function mapsModel(pid: number): boolean {
  return /\.gguf\b/.test(readFileSync(`/proc/${pid}/maps`, "utf8"));
}

/** The same shortlist and winner, scores within the batched pass's tolerance. */
function expectSameSearch(got: Search, want: Search): void {
  expect(got.chosen).toBe(want.chosen);
  expect(got.abstained).toBe(want.abstained);
  expect(got.skills.map((h) => [h.rank, h.id, h.stage])).toEqual(want.skills.map((h) => [h.rank, h.id, h.stage]));
  got.skills.forEach((h, i) => expect(Math.abs(h.score - want.skills[i].score)).toBeLessThan(1e-3));
}

describe("gavel mcp through gavel serve", () => {
  let dir: string;
  let bank: string;
  const local: Search[] = [];
  let localSkill: Record<string, unknown>;
  let server: ServeChild | null = null;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-mcp-serve-"));
    bank = join(dir, "bank");
    const inst = await runNode([cli, "install", skillsDir, "--bank", bank, "--context", "2048"], { env, cwd: dir, timeoutMs: 300_000 });
    expect(inst.code, inst.err).toBe(0);
    // the reference: a `gavel mcp` with no server, loading its own model
    const s = await openMcp(bank);
    try {
      expect(s.stderr()).toMatch(/serving 24 skills from .* over stdio/);
      for (const t of TASKS) local.push(await search(s, t));
      localSkill = ((await s.client.callTool({ name: "load_skill", arguments: { skill: "pdf-extract" } })) as ToolResult).structuredContent!;
      expect(mapsModel(s.pid)).toBe(true);
    } finally {
      await s.close();
    }
  }, 600_000);

  afterAll(async () => {
    server?.child.kill("SIGKILL");
    if (server) await server.exited;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("answers through a running server with no model of its own: same shortlist, winner and skill; errors typed", async () => {
    server = await startServe(["--bank", bank], { env, context: null });
    const s = await openMcp(bank);
    try {
      expect(s.stderr()).toMatch(/serving the bank .* through its running gavel serve over stdio/);
      expect(s.stderr()).not.toMatch(/does not read/);
      // a model flag given to a gavel mcp that a running server answers: named on stderr, not read
      const flagged = await openMcp(bank, ["--context", "4096"]);
      try {
        expect(flagged.stderr()).toMatch(/^gavel mcp: answered by the gavel serve running for this bank \(model .+\), which does not read --context: it keeps the model and settings it was started with$/m);
        expectSameSearch(await search(flagged, TASKS[0]), local[0]);
      } finally {
        await flagged.close();
      }
      for (let i = 0; i < TASKS.length; i++) expectSameSearch(await search(s, TASKS[i]), local[i]);
      const skill = ((await s.client.callTool({ name: "load_skill", arguments: { skill: "pdf-extract" } })) as ToolResult).structuredContent!;
      expect(skill).toEqual(localSkill);
      const { resources } = await s.client.listResources();
      expect(resources).toHaveLength(24);
      const { prompts } = await s.client.listPrompts();
      expect(prompts).toHaveLength(24);
      const prompt = await s.client.getPrompt({ name: "pdf-extract" });
      expect(prompt.messages[0].content).toEqual({ type: "text", text: localSkill.body });
      // the server's own error, as the local path answers it
      const missing = (await s.client.callTool({ name: "load_skill", arguments: { skill: "no-such-skill" } })) as ToolResult;
      expect(missing.isError).toBe(true);
      expect(missing.content[0].text).toMatch(/\[SKILL_NOT_FOUND\]/);
      expect(mapsModel(s.pid)).toBe(false);

      // the server dies mid-session: the next calls are answered by a model loaded here, the same way
      server.child.kill("SIGKILL");
      await server.exited;
      server = null;
      expectSameSearch(await search(s, TASKS[0]), local[0]);
      expect(s.stderr()).toMatch(/the gavel server is gone .*\[(INTERNAL|FILE_NOT_FOUND|DISPOSED)\]\); loading the model in this process/);
      expect(mapsModel(s.pid)).toBe(true);
      expectSameSearch(await search(s, TASKS[1]), local[1]);
    } finally {
      await s.close();
    }
  }, 600_000);

  it("with GAVEL_START_SERVER=1 starts a server on demand and answers through it; the server exits once idle", async () => {
    expect(await isRunning(bank)).toBe(false);
    const s = await openMcp(bank, ["--idle-exit-ms", "3000", "--context", "2048"], { GAVEL_START_SERVER: "1" });
    let pid = 0;
    try {
      expect(s.stderr()).toMatch(/through a gavel serve started on demand/);
      expect(s.stderr()).not.toMatch(/does not read/);
      expectSameSearch(await search(s, TASKS[0]), local[0]);
      expect(await isRunning(bank)).toBe(true);
      const c = await connect({ bank });
      try {
        pid = (await c.request<{ pid: number }>("status")).pid;
      } finally {
        c.close();
      }
      expect(alive(pid)).toBe(true);
      // the server started here was given the model flags gavel mcp was given
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      expect(argv.slice(argv.indexOf("--context"), argv.indexOf("--context") + 2)).toEqual(["--context", "2048"]);
      // the start marker is gone once the server listens
      expect(existsSync(`${join(bank, "serve.sock")}.starting`)).toBe(false);
      expect(mapsModel(s.pid)).toBe(false);
      expect(s.stderr()).not.toMatch(/loading the model in this process/);
    } finally {
      await s.close();
    }
    // no client left: the server exits by itself after its idle period
    await until(() => !alive(pid));
    expect(await isRunning(bank)).toBe(false);
  }, 600_000);
});
