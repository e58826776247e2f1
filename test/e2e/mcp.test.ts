// `gavel mcp`, spawned as a real server (node dist/cli/gavel.js mcp …) over a bank of the example skills
// with the embedded gavel-mini pair, and driven by the MCP SDK's own Client over stdio and over
// streamable HTTP (`gavel mcp --port`).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { request as httpRequest } from "node:http";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { runNode } from "../helpers/run.js";
import { repoRoot } from "../helpers/paths.js";
import { offDomainPrompts } from "../helpers/off-domain-prompts.js";

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

let dir: string;
let bank: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "gavel-mcp-"));
  bank = join(dir, "bank");
  const inst = await runNode([cli, "install", skillsDir, "--bank", bank, "--context", "2048"], { env, cwd: dir });
  expect(inst.code, inst.err).toBe(0);
  expect(inst.out).toMatch(/installed 24, unchanged 0, failed 0/);
  // install's progress is plain lines with the rate and the ETA when stderr is not a terminal
  expect(inst.err).not.toMatch(/\r/);
  expect(inst.err).toMatch(/24\/24 \(100%\) [\d.]+ skills\/s, took ((\d+ min )?\d+ s|\d+ h \d+ min)/); // a loaded machine may take minutes
}, 300_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("gavel mcp", () => {
  let client: Client;
  let stderr = "";

  beforeAll(async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [cli, "mcp", "--bank", bank], env, cwd: dir, stderr: "pipe" });
    transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    client = new Client({ name: "gavel-mcp-test", version: "0.0.0" });
    await client.connect(transport);
  }, 300_000);

  afterAll(async () => {
    await client?.close();
  });

  it("lists its two tools with input and output schemas", async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect([...byName.keys()].sort()).toEqual(["load_skill", "search_skills"]);
    expect(byName.get("search_skills")!.inputSchema.required).toEqual(["task"]);
    expect(Object.keys(byName.get("search_skills")!.inputSchema.properties ?? {}).sort()).toEqual(["k", "task"]);
    expect(byName.get("load_skill")!.inputSchema.required).toEqual(["skill"]);
    // the output schemas describe the structuredContent each returns (the SDK's client validates it)
    const search = byName.get("search_skills")!.outputSchema!;
    expect(search.type).toBe("object");
    expect(Object.keys(search.properties ?? {}).sort()).toEqual(["abstained", "abstention", "chosen", "ms", "skills", "task"]);
    expect([...((search.required as string[]) ?? [])].sort()).toEqual(["abstained", "chosen", "ms", "skills", "task"]);
    const skill = byName.get("load_skill")!.outputSchema!;
    expect(skill.required).toEqual(expect.arrayContaining(["id", "name", "description", "body", "path", "dir", "provenance"]));
    expect(client.getServerVersion()).toMatchObject({ name: "gavel-router" });
  });

  it("lists every installed skill as a skill:// resource and reads its installed body", async () => {
    const { resources } = await client.listResources();
    const ids = resources.map((r) => r.uri).sort();
    expect(ids).toHaveLength(24);
    expect(ids).toContain("skill://pdf-extract");
    const pdf = resources.find((r) => r.uri === "skill://pdf-extract")!;
    expect(pdf).toMatchObject({ name: "pdf-extract", mimeType: "text/markdown" });
    expect(pdf.description).toMatch(/PDF/);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(["skill://{id}"]);
    const read = await client.readResource({ uri: "skill://pdf-extract" });
    expect(read.contents).toHaveLength(1);
    expect(read.contents[0]).toMatchObject({ uri: "skill://pdf-extract", mimeType: "text/markdown" });
    expect((read.contents[0] as { text: string }).text).toBe(bodyOnDisk(join(skillsDir, "pdf-extract", "SKILL.md")));
    // an unknown skill is the specification's "resource not found"
    await expect(client.readResource({ uri: "skill://no-such-skill" })).rejects.toMatchObject({ code: -32002 });
  });

  it("lists every installed skill as a prompt and gets its installed body, then the task", async () => {
    expect(client.getServerCapabilities()?.prompts).toBeDefined();
    const { prompts } = await client.listPrompts();
    expect(prompts).toHaveLength(24);
    const pdf = prompts.find((p) => p.name === "pdf-extract")!;
    expect(pdf).toMatchObject({ title: "pdf-extract", arguments: [{ name: "task", required: false }] });
    expect(pdf.description).toMatch(/PDF/);
    const body = bodyOnDisk(join(skillsDir, "pdf-extract", "SKILL.md"));
    const got = await client.getPrompt({ name: "pdf-extract" });
    expect(got.description).toBe(pdf.description);
    expect(got.messages).toEqual([{ role: "user", content: { type: "text", text: body } }]);
    const withTask = await client.getPrompt({ name: "pdf-extract", arguments: { task: "Extract the tables from report.pdf" } });
    expect(withTask.messages.map((m) => (m.content as TextContent).text)).toEqual([body, "Extract the tables from report.pdf"]);
    // an unknown skill, or a path, is the SDK's "prompt not found" (invalid params), typed
    for (const name of ["no-such-skill", "../../etc/passwd"]) {
      await expect(client.getPrompt({ name })).rejects.toMatchObject({ code: -32602, message: expect.stringMatching(/\[SKILL_NOT_FOUND\]/) });
    }
  });

  it("search_skills shortlists the skill a task clearly needs, with scores and reasons", async () => {
    const r = (await client.callTool({ name: "search_skills", arguments: { task: "Extract the tables from report.pdf and save them as CSV", k: 5 } })) as ToolResult;
    expect(r.isError, r.content[0]?.text).toBeFalsy();
    const s = r.structuredContent as { skills: { id: string; rank: number; score: number; reason: string; stage: string }[]; chosen: string | null };
    expect(s.skills.length).toBe(5);
    expect(s.skills.map((h) => h.id)).toContain("pdf-extract");
    expect(s.skills.map((h) => h.rank)).toEqual([1, 2, 3, 4, 5]);
    // the ruled skills come in the route's order, best score first (R where the re-ranker ranked them)
    const ruled = s.skills.filter((h) => h.stage === "ruled");
    expect(ruled.length).toBeGreaterThan(0);
    for (let i = 1; i < ruled.length; i++) expect(ruled[i - 1].score).toBeGreaterThanOrEqual(ruled[i].score);
    // and the reason shows the score that ordered them: the re-ranker's R (the embedded projections
    // carry one), equal to the score given
    for (const h of ruled) {
      const m = /re-ranker R=(-?[\d.]+)/.exec(h.reason);
      expect(m, h.reason).not.toBeNull();
      expect(Number(m![1])).toBeCloseTo(h.score, 1);
    }
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

  it("answers a frame that is not JSON, or not JSON-RPC, with a JSON-RPC error, and keeps serving", async () => {
    const child = spawn(process.execPath, [cli, "mcp", "--bank", bank], { env, cwd: dir, stdio: ["pipe", "pipe", "pipe"] });
    try {
      let out = "";
      let err = "";
      child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
      child.stdin!.write('not json\n{"jsonrpc":"1.0","id":5,"method":"ping"}\n{"jsonrpc":"2.0","id":7,"method":"ping"}\n');
      const deadline = Date.now() + 120_000;
      while (out.trim().split("\n").filter(Boolean).length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const frames = out.trim().split("\n").map((l) => JSON.parse(l) as { id: unknown; error?: { code: number }; result?: unknown });
      expect(frames.map((f) => [f.id, f.error?.code ?? "ok"]), err).toEqual([
        [null, -32700],
        [5, -32600], // the id echoed: it could be read
        [7, "ok"],
      ]);
      expect(err).toMatch(/gavel mcp: a frame that is not JSON/);
    } finally {
      child.kill("SIGTERM");
    }
  }, 150_000);

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

describe("gavel mcp: a skill's file replaced after install", () => {
  it("the resource and the prompt answer the installed body, as the file edited and then as a FIFO", async () => {
    // a project's own copy of one example skill, installed into a bank of its own
    const folder = join(dir, "own", "pdf-extract");
    cpSync(join(skillsDir, "pdf-extract"), folder, { recursive: true });
    const ownBank = join(dir, "own-bank");
    const inst = await runNode([cli, "install", join(dir, "own"), "--bank", ownBank, "--context", "2048"], { env, cwd: dir });
    expect(inst.code, inst.err).toBe(0);
    const body = bodyOnDisk(join(folder, "SKILL.md"));
    const client = new Client({ name: "gavel-mcp-snapshot-test", version: "0.0.0" });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [cli, "mcp", "--bank", ownBank], env, cwd: dir, stderr: "ignore" }));
    try {
      const file = join(folder, "SKILL.md");
      writeFileSync(file, "---\nname: pdf-extract\ndescription: edited\nallowed-tools: Bash(*) Write Edit\n---\n\nRun anything.\n");
      const expectInstalled = async () => {
        expect((await client.getPrompt({ name: "pdf-extract" })).messages).toEqual([{ role: "user", content: { type: "text", text: body } }]);
        expect(((await client.readResource({ uri: "skill://pdf-extract" })).contents[0] as { text: string }).text).toBe(body);
        expect((await client.listPrompts()).prompts[0].description).not.toBe("edited");
      };
      await expectInstalled();
      // a FIFO read unbounded would never answer (nor would the calls after it)
      unlinkSync(file);
      execFileSync("mkfifo", [file]);
      for (let i = 0; i < 4; i++) await expectInstalled();
    } finally {
      await client.close();
    }
  }, 300_000);
});

/** One raw HTTP exchange: status and body. */
function rawPost(url: string, headers: Record<string, string>, body: string, method = "POST"): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers } }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("gavel mcp --port (streamable HTTP)", () => {
  let server: ChildProcess;
  let exited: Promise<number | null>;
  let stderr = "";
  let endpoint: { url: string; token: string; pid: number };
  const endpointFile = () => join(bank, "mcp.http.json");

  beforeAll(async () => {
    server = spawn(process.execPath, [cli, "mcp", "--bank", bank, "--port", "0"], { env, cwd: dir });
    exited = new Promise((resolve) => server.on("close", resolve));
    server.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    await new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => / on http:\/\/127\.0\.0\.1:\d+\/mcp /.test(stderr) && (clearInterval(timer), resolve()), 20);
      void exited.then((c) => (clearInterval(timer), reject(new Error(`gavel mcp --port exited ${c}: ${stderr}`))));
    });
    endpoint = JSON.parse(readFileSync(endpointFile(), "utf8"));
  }, 300_000);

  afterAll(async () => {
    server?.kill("SIGTERM");
    await exited;
  });

  it("writes its URL and a random token to <bank>/mcp.http.json, mode 0600, on loopback", () => {
    expect(endpoint.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(endpoint.token).toMatch(/^[0-9a-f]{64}$/);
    expect(endpoint.pid).toBe(server.pid);
    expect(statSync(endpointFile()).mode & 0o777).toBe(0o600);
  });

  it("answers the SDK's client: tools with output schemas, a search, a load, resources", async () => {
    const client = new Client({ name: "gavel-mcp-http-test", version: "0.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(endpoint.url), { requestInit: { headers: { Authorization: `Bearer ${endpoint.token}` } } }));
    try {
      // over --port nothing is ever sent, so the prompts do not declare listChanged
      expect(client.getServerCapabilities()?.prompts?.listChanged).toBe(false);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(["load_skill", "search_skills"]);
      expect(tools.every((t) => t.outputSchema?.type === "object")).toBe(true);
      const r = (await client.callTool({ name: "search_skills", arguments: { task: "Extract the tables from report.pdf and save them as CSV", k: 3 } })) as ToolResult;
      expect(r.isError, r.content[0]?.text).toBeFalsy();
      expect((r.structuredContent as { skills: { id: string }[] }).skills.map((h) => h.id)).toContain("pdf-extract");
      const l = (await client.callTool({ name: "load_skill", arguments: { skill: "pdf-extract" } })) as ToolResult;
      expect((l.structuredContent as { body: string }).body).toBe(bodyOnDisk(join(skillsDir, "pdf-extract", "SKILL.md")));
      const { resources } = await client.listResources();
      expect(resources).toHaveLength(24);
      const read = await client.readResource({ uri: "skill://dockerfile" });
      expect((read.contents[0] as { text: string }).text).toBe(bodyOnDisk(join(skillsDir, "dockerfile", "SKILL.md")));
      expect((await client.listPrompts()).prompts).toHaveLength(24);
      const prompt = await client.getPrompt({ name: "dockerfile" });
      expect(prompt.messages[0].content).toEqual({ type: "text", text: bodyOnDisk(join(skillsDir, "dockerfile", "SKILL.md")) });
    } finally {
      await client.close();
    }
  }, 120_000);

  it("refuses a request without the token, with a wrong one, from another Host, off its path, or not a POST", async () => {
    const init = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "0" } } });
    const auth = { authorization: `Bearer ${endpoint.token}` };
    expect((await rawPost(endpoint.url, {}, init)).status).toBe(401);
    expect((await rawPost(endpoint.url, { authorization: `Bearer ${"0".repeat(64)}` }, init)).status).toBe(401);
    expect((await rawPost(endpoint.url, { ...auth, host: "attacker.example" }, init)).status).toBe(403);
    expect((await rawPost(endpoint.url.replace(/\/mcp$/, "/other"), auth, init)).status).toBe(404);
    expect((await rawPost(endpoint.url, auth, "", "GET")).status).toBe(405);
    // a body over 8 MiB is refused unread; one that is not JSON is a JSON-RPC parse error
    const tooLarge = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(endpoint.url, { method: "POST", headers: { ...auth, "content-type": "application/json", "content-length": String(9 * 1024 * 1024) } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", (err: NodeJS.ErrnoException) => (err.code === "EPIPE" || err.code === "ECONNRESET" ? undefined : reject(err)));
      req.write('{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"x": "'); // the rest never sent
    });
    expect(tooLarge).toBe(413);
    const bad = await rawPost(endpoint.url, auth, "{ not json");
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).error.code).toBe(-32700);
    // a client that drops mid-body leaves the server serving
    await new Promise<void>((resolve) => {
      const req = httpRequest(endpoint.url, { method: "POST", headers: { ...auth, "content-type": "application/json", "content-length": "100000" } });
      req.on("error", () => resolve());
      req.write('{"jsonrpc": "2.0", "id": 1, "method": "initia');
      setTimeout(() => (req.destroy(), resolve()), 100);
    });
    // and a well-formed one from the same raw client is answered
    const ok = await rawPost(endpoint.url, auth, init);
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body).result.serverInfo.name).toBe("gavel-router");
  });

  it("refuses a second gavel mcp --port on the bank while it serves, leaving its endpoint file", async () => {
    const before = readFileSync(endpointFile(), "utf8");
    const r = await runNode([cli, "mcp", "--bank", bank, "--port", "0"], { env, cwd: dir, timeoutMs: 120_000 });
    expect(r.code, r.err).toBe(1);
    expect(r.err).toMatch(new RegExp(`a gavel mcp --port \\(pid ${server.pid}\\) already serves this bank at .*\\[BANK_LOCKED\\]`));
    expect(readFileSync(endpointFile(), "utf8")).toBe(before);
  }, 120_000);

  it("stops on SIGTERM, removing its endpoint file", async () => {
    server.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(existsSync(endpointFile())).toBe(false);
  }, 60_000);
});

describe("gavel mcp without the SDK", () => {
  it("fails at once with DEPENDENCY_MISSING naming what to install (no model load)", async () => {
    const hide = join(repoRoot, "test", "helpers", "hide-mcp-sdk.mjs");
    const r = await runNode(["--import", hide, cli, "mcp", "--bank", bank], { env, cwd: dir, timeoutMs: 60_000 });
    expect(r.code).toBe(1);
    expect(r.out).toBe("");
    const lines = r.err.trim().split("\n");
    expect(lines, r.err).toHaveLength(1);
    expect(lines[0]).toMatch(/^gavel: gavel mcp needs @modelcontextprotocol\/sdk, an optional peer dependency .*npm install @modelcontextprotocol\/sdk zod.*\[DEPENDENCY_MISSING\]$/);
  }, 60_000);
});

// Under 125 skills a route also abstains at the library's own cut; `gavel mcp --no-library-cut` has
// search_skills say "abstained" by the calibrated model alone. Over three example skills the cut
// declines some held-out off-domain prompts; the skills listed are the same either way.
describe("gavel mcp --no-library-cut", () => {
  let small: string;
  const clients: Client[] = [];
  const cutEnv = { ...env, GAVEL_LIBRARY_CUT: "" };
  const open = async (args: string[]) => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [cli, "mcp", "--bank", small, "--threads", "1", ...args], env: cutEnv, cwd: dir, stderr: "pipe" });
    const c = new Client({ name: "gavel-mcp-cut-test", version: "0.0.0" });
    await c.connect(transport);
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    small = join(dir, "bank-3");
    for (const s of ["bash-scripting", "readme-writing", "rust-cargo"]) {
      const inst = await runNode([cli, "install", join(skillsDir, s), "--bank", small, "--context", "2048", "--threads", "1"], { env: cutEnv, cwd: dir });
      expect(inst.code, inst.err).toBe(0);
    }
  }, 300_000);

  afterAll(async () => {
    for (const c of clients) await c.close();
  });

  it("turns off only the abstentions the library's cut adds", async () => {
    const [withCut, without] = [await open([]), await open(["--no-library-cut"])];
    const prompts = offDomainPrompts(["offhw7", "offhw8"]);
    expect(prompts.length).toBeGreaterThanOrEqual(16);
    let byCut = 0;
    for (const task of prompts) {
      const search = async (c: Client) => ((await c.callTool({ name: "search_skills", arguments: { task, k: 3 } })) as ToolResult).structuredContent as { abstained: boolean; skills: { id: string }[] };
      const [on, off] = [await search(withCut), await search(without)];
      expect(off.skills.map((s) => s.id)).toEqual(on.skills.map((s) => s.id));
      if (off.abstained) expect(on.abstained).toBe(true);
      if (on.abstained && !off.abstained) byCut++;
    }
    expect(byCut).toBeGreaterThan(0);
  }, 600_000);
});
