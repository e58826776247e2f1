// `gavel mcp`, spawned as a real server (node dist/cli/gavel.js mcp …) over a bank of the example skills
// with the embedded gavel-mini pair, and driven by the MCP SDK's own Client over stdio.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { runNode } from "../helpers/run.js";
import { repoRoot } from "../helpers/paths.js";

const cli = join(repoRoot, "dist", "cli", "gavel.js");
const skillsDir = join(repoRoot, "examples", "skills");
/** The embedded pair, whatever the caller's environment says. */
const env: Record<string, string> = { ...(process.env as Record<string, string>), GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" };

interface TextContent {
  type: "text";
  text: string;
}
interface ToolResult {
  content: TextContent[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** The SKILL.md's body as the bank keeps it: after the front matter, leading blank lines and trailing whitespace removed. */
function bodyOnDisk(file: string): string {
  const text = readFileSync(file, "utf8").replace(/\r\n?/g, "\n");
  return text.replace(/^---\n[\s\S]*?\n---\n/, "").replace(/^(?:[ \t]*\n)+/, "").trimEnd();
}

describe("gavel mcp", () => {
  let dir: string;
  let bank: string;
  let client: Client;
  let stderr = "";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-mcp-"));
    bank = join(dir, "bank");
    const inst = await runNode([cli, "install", skillsDir, "--bank", bank, "--context", "2048"], { env, cwd: dir });
    expect(inst.code, inst.err).toBe(0);
    expect(inst.out).toMatch(/installed 24, unchanged 0, failed 0/);
    // install's progress is plain lines with the rate and the ETA when stderr is not a terminal
    expect(inst.err).not.toMatch(/\r/);
    expect(inst.err).toMatch(/24\/24 \(100%\) [\d.]+ skills\/s, took \d+ s/);
    const transport = new StdioClientTransport({ command: process.execPath, args: [cli, "mcp", "--bank", bank], env, cwd: dir, stderr: "pipe" });
    transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    client = new Client({ name: "gavel-mcp-test", version: "0.0.0" });
    await client.connect(transport);
  }, 300_000);

  afterAll(async () => {
    await client?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("lists its two tools with input schemas", async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect([...byName.keys()].sort()).toEqual(["load_skill", "search_skills"]);
    expect(byName.get("search_skills")!.inputSchema.required).toEqual(["task"]);
    expect(Object.keys(byName.get("search_skills")!.inputSchema.properties ?? {}).sort()).toEqual(["k", "task"]);
    expect(byName.get("load_skill")!.inputSchema.required).toEqual(["skill"]);
    expect(client.getServerVersion()).toMatchObject({ name: "gavel-router" });
  });

  it("search_skills shortlists the skill a task clearly needs, with scores and reasons", async () => {
    const r = (await client.callTool({ name: "search_skills", arguments: { task: "Extract the tables from report.pdf and save them as CSV", k: 5 } })) as ToolResult;
    expect(r.isError, r.content[0]?.text).toBeFalsy();
    const s = r.structuredContent as { skills: { id: string; rank: number; score: number; reason: string; stage: string }[]; chosen: string | null };
    expect(s.skills.length).toBe(5);
    expect(s.skills.map((h) => h.id)).toContain("pdf-extract");
    expect(s.skills.map((h) => h.rank)).toEqual([1, 2, 3, 4, 5]);
    for (const h of s.skills) {
      expect(Number.isFinite(h.score)).toBe(true);
      expect(h.reason.length).toBeGreaterThan(10);
      expect(h.reason).not.toMatch(/\n/);
    }
    expect(r.content[0].text).toMatch(/pdf-extract/);
    expect(r.content[0].text).toMatch(/load_skill/);
  }, 120_000);

  it("load_skill returns the body, front matter, absolute path and provenance", async () => {
    const file = join(skillsDir, "pdf-extract", "SKILL.md");
    const r = (await client.callTool({ name: "load_skill", arguments: { skill: "pdf-extract" } })) as ToolResult;
    expect(r.isError, r.content[0]?.text).toBeFalsy();
    const s = r.structuredContent as Record<string, unknown>;
    expect(s.body).toBe(bodyOnDisk(file));
    expect(s).toMatchObject({
      id: "pdf-extract",
      name: "pdf-extract",
      path: file,
      dir: join(skillsDir, "pdf-extract"),
      provenance: { kind: "folder", hostFolder: skillsDir, host: null },
      sourceStatus: "current",
      allowedTools: null,
    });
    expect((s.metadata as Record<string, unknown>).name).toBe("pdf-extract");
    expect(String((s.metadata as Record<string, unknown>).description)).toMatch(/PDF/);
    expect(s.contentHash).toMatch(/^[0-9a-f]{64}$/);
    expect(r.content[0].text).toContain(bodyOnDisk(file));
    expect(r.content[0].text).toContain(`Source: ${file}`);
  });

  it("answers an unknown skill with an MCP error result, and keeps serving", async () => {
    const r = (await client.callTool({ name: "load_skill", arguments: { skill: "no-such-skill" } })) as ToolResult;
    expect(r.isError).toBe(true);
    expect(r.content[0].text).toMatch(/no installed skill "no-such-skill".*\[SKILL_NOT_FOUND\]/);
    const bad = (await client.callTool({ name: "search_skills", arguments: { task: "" } })) as ToolResult;
    expect(bad.isError).toBe(true);
    const again = (await client.callTool({ name: "load_skill", arguments: { skill: "dockerfile" } })) as ToolResult;
    expect(again.isError).toBeFalsy();
    expect(stderr).toMatch(/serving 24 skills/);
  });

  it("refuses to start without a bank, creating none", async () => {
    const missing = join(dir, "no-bank");
    const r = await runNode([cli, "mcp", "--bank", missing], { env, cwd: dir, timeoutMs: 120_000 });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/no bank at .*gavel install.*\[FILE_NOT_FOUND\]/);
    expect(r.out).toBe("");
    expect(existsSync(missing)).toBe(false);
  }, 120_000);

  it("gavel --version prints the package's version", async () => {
    const version = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")).version as string;
    for (const flag of ["--version", "-V"]) {
      const r = await runNode([cli, flag], { env });
      expect(r.code).toBe(0);
      expect(r.out).toBe(`gavel-router ${version}\n`);
    }
  });
});
