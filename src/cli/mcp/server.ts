/**
 * `gavel mcp`'s server: an MCP server (the official `@modelcontextprotocol/sdk`) over stdio or
 * streamable HTTP on loopback, with two tools, `search_skills` and `load_skill` (each with an output
 * schema for its `structuredContent`), and every installed skill as a resource `skill://<id>` and as a
 * prompt, all answered by one {@link SkillSource}: a Router of this process, or the bank's `gavel serve`.
 *
 * The SDK (and zod, which it requires) is an optional peer dependency: ~85 packages and ~28 MB that a
 * user who never runs `gavel mcp` should not install. It is imported when the server starts, and its
 * absence is a GavelError `DEPENDENCY_MISSING` that says what to install.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Readable, Writable } from "node:stream";
import { GavelError, MESSAGE_CHARS, clip } from "../../errors.js";
import { readBody } from "../../serve/limits.js";
import { missingPackage } from "../../util/missing-package.js";
import { LineTransport, messageChecker } from "./stdio-transport.js";
import { watchBank } from "./bank-watch.js";
import { checkRequestParams } from "./params-check.js";
import { DEFAULT_SEARCH_K, LOAD_SKILL_DESCRIPTION, loadSkill, MAX_SEARCH_K, searchSkills, searchText, SEARCH_SKILLS_DESCRIPTION, SEARCH_TASK_DESCRIPTION, skillText, type SearchOptions, type SkillSource } from "../../adapters/skill-tools.js";

type McpModule = typeof import("@modelcontextprotocol/sdk/server/mcp.js");
type StdioModule = typeof import("@modelcontextprotocol/sdk/server/stdio.js");
type HttpModule = typeof import("@modelcontextprotocol/sdk/server/streamableHttp.js");
type TypesModule = typeof import("@modelcontextprotocol/sdk/types.js");
type ZodModule = typeof import("zod");

/** The SDK's modules `gavel mcp` uses. */
export interface McpSdk {
  mcp: McpModule;
  stdio: StdioModule;
  http: HttpModule;
  types: TypesModule;
  zod: ZodModule;
}

/** Imports a module (a parameter so that a test can stand in for a missing package). */
export type Importer = (specifier: string) => Promise<unknown>;

/**
 * The SDK's modules, or a GavelError `DEPENDENCY_MISSING` naming the package to install.
 *
 * @param importer how modules are imported (default: `import()`).
 */
export async function loadMcpSdk(importer: Importer = (s) => import(s)): Promise<McpSdk> {
  try {
    const [mcp, stdio, http, types, zod] = await Promise.all([
      importer("@modelcontextprotocol/sdk/server/mcp.js"),
      importer("@modelcontextprotocol/sdk/server/stdio.js"),
      importer("@modelcontextprotocol/sdk/server/streamableHttp.js"),
      importer("@modelcontextprotocol/sdk/types.js"),
      importer("zod"),
    ]);
    return { mcp, stdio, http, types, zod } as McpSdk;
  } catch (err) {
    const missing = missingPackage(err, "@modelcontextprotocol/sdk");
    if (missing !== null) {
      const what = missing.broken
        ? `; the installed one cannot be imported (${(err as Error).message.split(" imported from")[0]}): install a release within gavel-router's peer range`
        : " that is not installed: install it beside gavel-router";
      throw new GavelError(
        `gavel mcp needs ${missing.pkg}, an optional peer dependency of gavel-router${what} ` +
          "(npm install @modelcontextprotocol/sdk zod), or run npx -p gavel-router -p @modelcontextprotocol/sdk -p zod gavel mcp",
        "DEPENDENCY_MISSING",
        { cause: err },
      );
    }
    throw err;
  }
}

/** A tool's failure as an MCP error result the model can read (the message and the GavelError code). */
function toolError(err: unknown) {
  if (!(err instanceof GavelError)) throw err; // the SDK turns anything else into an error result too
  return { content: [{ type: "text" as const, text: `${err.message} [${err.code}]` }], isError: true };
}

/** What the server says about itself in the MCP handshake. */
export interface McpServerInfo {
  version: string;
  /** The bank it serves, for the instructions. */
  bankDir: string;
  /** How `search_skills` routes. */
  search?: SearchOptions;
  /** Whether the prompts declare `listChanged` (stdio, which sends the notifications; `--port` sends none). */
  promptsListChanged?: boolean;
}

const INSTRUCTIONS =
  "gavel-router picks the SKILL.md that fits a task from the skills installed in its bank. " +
  "Before starting a task that may need specialised instructions, call search_skills with the task stated concretely; " +
  "then call load_skill with the best skill's id and follow its instructions.";

/** The MCP error code of a resource that does not exist (the specification's -32002). */
const RESOURCE_NOT_FOUND = -32002;

/** The `skill://` URI of an installed skill. */
export function skillUri(id: string): string {
  return `skill://${encodeURIComponent(id)}`;
}

/**
 * `resources/read` of `skill://<id>` (the id percent-encoded, as {@link skillUri} writes it): the body as
 * installed, or -32002 for a URI that names no installed skill (an unknown id, an empty one, a raw `/`,
 * `?` or `#`, bad percent-encoding, another scheme); another GavelError is -32602 `<message> [<CODE>]`.
 */
async function readSkillResource(router: SkillSource, types: TypesModule, uri: string) {
  const notFound = (why: string) => new types.McpError(RESOURCE_NOT_FOUND, why, { uri: clip(uri) });
  const m = /^skill:\/\/([^/?#]+)$/i.exec(uri);
  let id: string | null = null;
  try {
    id = m ? decodeURIComponent(m[1]) : null;
  } catch {
    // bad percent-encoding: not a skill URI
  }
  if (id === null) throw notFound(`not a skill URI: ${clip(uri)} (skill://<id>, the id percent-encoded)`);
  try {
    const record = await loadSkill(router, id);
    return { contents: [{ uri, mimeType: "text/markdown", text: record.body }] };
  } catch (err) {
    if (!(err instanceof GavelError)) throw err;
    if (err.code === "SKILL_NOT_FOUND") throw notFound(`${err.message} [${err.code}]`);
    throw new types.McpError(types.ErrorCode.InvalidParams, `${err.message} [${err.code}]`);
  }
}

/** The output schemas of the two tools (what their `structuredContent` holds; see src/adapters/skill-tools.ts). */
function outputSchemas(z: ZodModule["z"]) {
  const hit = z.object({
    rank: z.number().int(),
    id: z.string(),
    name: z.string(),
    description: z.string(),
    stage: z.enum(["ruled", "glance"]),
    score: z.number(),
    g: z.number(),
    V: z.number().optional(),
    L: z.number().optional(),
    reason: z.string(),
  });
  const search = {
    task: z.string(),
    chosen: z.string().nullable().describe("the router's choice (an id), or null when it abstained or nothing is installed"),
    abstained: z.boolean(),
    abstention: z.object({ reason: z.string(), score: z.number().nullable().describe("the abstention model's score; null when none was computed") }).optional(),
    skills: z.array(hit).describe("best first"),
    ms: z.number().describe("milliseconds the search took"),
  };
  const skill = {
    id: z.string(),
    name: z.string(),
    description: z.string(),
    body: z.string().describe("the SKILL.md's instructions after the front matter, as installed"),
    metadata: z.record(z.string(), z.unknown()).describe("the front matter"),
    allowedTools: z.array(z.string()).nullable(),
    contentHash: z.string(),
    source: z.string(),
    path: z.string().nullable().describe("the SKILL.md or library, absolute; null when not found on this machine"),
    dir: z.string().nullable().describe("the skill's folder, absolute"),
    provenance: z.object({ kind: z.string() }).passthrough(),
    sourceStatus: z.string(),
    disableModelInvocation: z.boolean(),
  };
  return { search, skill };
}

/** An MCP server (not yet connected) whose tools and resources answer from `router` (a Router, or the bank's server). */
export async function createMcpServer(router: SkillSource, info: McpServerInfo) {
  const { mcp, types, zod } = await loadMcpSdk();
  const { z } = zod;
  const schemas = outputSchemas(z);
  const server = new mcp.McpServer({ name: "gavel-router", version: info.version }, { instructions: `${INSTRUCTIONS} Bank: ${info.bankDir}.` });
  server.registerTool(
    "search_skills",
    {
      title: "Search skills",
      description: SEARCH_SKILLS_DESCRIPTION,
      inputSchema: {
        task: z.string().min(1).describe(SEARCH_TASK_DESCRIPTION),
        k: z.number().int().min(1).max(MAX_SEARCH_K).optional().describe(`how many skills to list (default ${DEFAULT_SEARCH_K})`),
      },
      outputSchema: schemas.search,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ task, k }, extra) => {
      try {
        const result = await searchSkills(router, task, k ?? DEFAULT_SEARCH_K, extra.signal, info.search);
        return { content: [{ type: "text" as const, text: searchText(result) }], structuredContent: { ...result } };
      } catch (err) {
        return toolError(err);
      }
    },
  );
  server.registerTool(
    "load_skill",
    {
      title: "Load a skill",
      description: LOAD_SKILL_DESCRIPTION,
      inputSchema: { skill: z.string().min(1).describe("the skill's id or name, as search_skills lists it") },
      outputSchema: schemas.skill,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ skill }) => {
      try {
        const record = await loadSkill(router, skill);
        return { content: [{ type: "text" as const, text: skillText(record) }], structuredContent: { ...record } };
      } catch (err) {
        return toolError(err);
      }
    },
  );
  // every installed skill as a resource: skill://<id>, its instructions as installed
  server.registerResource(
    "skill",
    new mcp.ResourceTemplate("skill://{id}", {
      list: async () => ({
        resources: (await router.list()).map((s) => ({ uri: skillUri(s.id), name: s.id, title: s.name, description: s.description, mimeType: "text/markdown" })),
      }),
    }),
    { title: "Installed skill", description: "A skill installed in the gavel bank: its SKILL.md instructions (the body after the front matter), as installed.", mimeType: "text/markdown" },
    async (uri) => readSkillResource(router, types, uri.href),
  );
  // every read through readSkillResource: a URI the template does not match (skill://, skill://a/b,
  // another scheme) is -32002 as an unknown skill is, not the SDK's -32602
  server.server.setRequestHandler(types.ReadResourceRequestSchema, async (request) => readSkillResource(router, types, request.params.uri));
  registerSkillPrompts(server, router, types, info.promptsListChanged === true);
  return server;
}

/**
 * Every installed skill as a prompt (a host's slash command): `prompts/list` lists them from the bank
 * at each call (a skill installed through `gavel serve` appears without a restart), `prompts/get`
 * answers the body as installed (`load_skill`'s `body`, the same bounded read), then the optional
 * `task` as a second user message. An unknown skill, or any GavelError, is -32602 `<message> [<CODE>]`.
 */
function registerSkillPrompts(server: InstanceType<McpModule["McpServer"]>, router: SkillSource, types: TypesModule, listChanged: boolean): void {
  server.server.registerCapabilities({ prompts: { listChanged } });
  const task = { name: "task", description: "the task to follow the skill's instructions for (optional)", required: false };
  server.server.setRequestHandler(types.ListPromptsRequestSchema, async () => ({
    prompts: (await router.list()).map((s) => ({ name: s.id, title: s.name, description: s.description, arguments: [task] })),
  }));
  server.server.setRequestHandler(types.GetPromptRequestSchema, async (request) => {
    let record;
    try {
      record = await loadSkill(router, request.params.name);
    } catch (err) {
      if (err instanceof GavelError) throw new types.McpError(types.ErrorCode.InvalidParams, `${err.message} [${err.code}]`);
      throw err;
    }
    const text = (t: string) => ({ role: "user" as const, content: { type: "text" as const, text: t } });
    const asked = request.params.arguments?.task?.trim();
    return { description: record.description, messages: asked ? [text(record.body), text(asked)] : [text(record.body)] };
  });
}

/** The streams `gavel mcp` speaks over stdio (a parameter so that a test can stand in for them). */
export interface McpStdio {
  input: Readable;
  output: Writable;
  /** Hears the lines for stderr. */
  log: (line: string) => void;
}

/**
 * Serves `router` over stdio until the client closes stdin or stdout (or `signal` aborts); stdout
 * carries the protocol only, so anything else the process prints must go to stderr. Frames are read
 * by {@link LineTransport}: a bad or over-cap frame is answered and the server goes on.
 */
export async function serveMcpStdio(router: SkillSource, info: McpServerInfo, signal?: AbortSignal, io?: McpStdio): Promise<void> {
  const { types } = await loadMcpSdk();
  const server = await createMcpServer(router, { ...info, promptsListChanged: true });
  const log = io?.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  // an install or uninstall committed while the session runs: the resources and prompts changed
  const watch = watchBank(info.bankDir, () => {
    if (!server.isConnected() || !server.server.getClientCapabilities()) return; // not initialized yet
    void server.server.sendResourceListChanged().catch(() => undefined);
    void server.server.sendPromptListChanged().catch(() => undefined);
  });
  const check = messageChecker(types.JSONRPCMessageSchema);
  const transport = new LineTransport({ input: io?.input ?? process.stdin, output: io?.output ?? process.stdout, check, log, onLine: watch.check });
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
    signal?.addEventListener("abort", () => resolve(), { once: true });
  });
  // the protocol's own complaints (a response to no request, …): one line each
  server.server.onerror = (err: Error) => log(`gavel mcp: error: ${clip(err?.message?.split("\n")[0] ?? String(err), MESSAGE_CHARS)}`);
  try {
    await server.connect(transport);
    checkRequestParams(transport, types);
    await closed;
  } finally {
    watch.stop();
    await server.close();
  }
}

/** Options of {@link startMcpHttp}. */
export interface McpHttpOptions {
  /** The TCP port on 127.0.0.1 (0: any free port). */
  port: number;
  /** The bearer token every request must carry (default: 32 random bytes, hex). */
  token?: string;
  /** Connections open at once; one over it is closed as it is accepted (default {@link MCP_HTTP_MAX_CONNECTIONS}). */
  maxConnections?: number;
}

/** A running streamable HTTP endpoint. */
export interface McpHttpEndpoint {
  /** `http://127.0.0.1:<port>/mcp`. */
  url: string;
  token: string;
  /** Stops listening and waits for open requests. */
  close(): Promise<void>;
}

/** The path the endpoint answers on. */
export const MCP_HTTP_PATH = "/mcp";

/** Most bytes of one request body (a long task fits; a larger body is answered 413 unread). */
export const MCP_HTTP_MAX_BODY = 8 * 1024 * 1024;
/** The most connections `gavel mcp --port` holds at once, as `gavel serve` (a flood is closed as it is accepted). */
export const MCP_HTTP_MAX_CONNECTIONS = 256;

/**
 * The request's body parsed as JSON, read up to `max` bytes (serve/limits.ts's readBody: it settles
 * on the body's end, an error, or the connection closing mid-body): `too-large` past it, `bad-json`,
 * `gone` when the client left before the body ended (nobody to answer), or the value.
 */
async function readJsonBody(req: IncomingMessage, max: number): Promise<{ ok: true; value: unknown } | { ok: false; why: "too-large" | "bad-json" | "gone" }> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > max) return { ok: false, why: "too-large" };
  const body = await readBody(req, max);
  if (body === null) return { ok: false, why: "gone" };
  if (body === "too-large") {
    req.pause();
    return { ok: false, why: "too-large" };
  }
  try {
    return { ok: true, value: JSON.parse(body.toString("utf8")) };
  } catch {
    return { ok: false, why: "bad-json" };
  }
}

/** A JSON-RPC error answer outside the SDK (auth, path, method). */
function plainError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) return void res.end();
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: clip(message, MESSAGE_CHARS) }, id: null }));
}

/**
 * Serves `router` over MCP's streamable HTTP transport on 127.0.0.1 only, stateless (a fresh server
 * and transport per POST, so nothing is kept between requests), JSON answers. Every request must carry
 * `Authorization: Bearer <token>`; a Host header other than the loopback address is refused (DNS
 * rebinding); a body over {@link MCP_HTTP_MAX_BODY} is refused unread (413).
 */
export async function startMcpHttp(router: SkillSource, info: McpServerInfo, options: McpHttpOptions): Promise<McpHttpEndpoint> {
  const { http, types } = await loadMcpSdk();
  const token = options.token ?? randomBytes(32).toString("hex");
  const want = Buffer.from(`Bearer ${token}`);
  let port = 0;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "").split("?")[0];
    if (path !== MCP_HTTP_PATH) return plainError(res, 404, `not found: the MCP endpoint is ${MCP_HTTP_PATH}`);
    const given = Buffer.from(req.headers.authorization ?? "");
    if (given.length !== want.length || !timingSafeEqual(given, want)) return plainError(res, 401, "missing or wrong bearer token", { "www-authenticate": "Bearer" });
    if (req.method !== "POST") return plainError(res, 405, "this endpoint is stateless: POST only", { allow: "POST" });
    const body = await readJsonBody(req, MCP_HTTP_MAX_BODY);
    if (!body.ok && body.why === "gone") return void res.destroy();
    if (!body.ok && body.why === "too-large") return plainError(res, 413, `the request body is over ${MCP_HTTP_MAX_BODY} bytes`, { connection: "close" });
    if (!body.ok) {
      res.writeHead(400, { "content-type": "application/json" });
      return void res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32700, message: "Parse error: the body is not JSON" }, id: null }));
    }
    const server = await createMcpServer(router, info);
    const transport = new http.StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      enableDnsRebindingProtection: true,
      allowedHosts: [`127.0.0.1:${port}`, `localhost:${port}`],
    });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    checkRequestParams(transport, types);
    await transport.handleRequest(req, res, body.value);
  };
  const httpServer: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (req.destroyed || res.destroyed) return; // an aborted request: nobody to answer
      plainError(res, 500, err instanceof Error ? err.message : String(err));
    });
  });
  httpServer.maxConnections = options.maxConnections ?? MCP_HTTP_MAX_CONNECTIONS;
  httpServer.requestTimeout = 60_000;
  httpServer.headersTimeout = 10_000;
  httpServer.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    httpServer.once("error", reject);
    httpServer.listen(options.port, "127.0.0.1", () => {
      httpServer.removeListener("error", reject);
      resolve();
    });
  });
  port = (httpServer.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${MCP_HTTP_PATH}`,
    token,
    close: () =>
      new Promise<void>((resolve) => {
        httpServer.close(() => resolve());
        httpServer.closeIdleConnections();
      }),
  };
}
