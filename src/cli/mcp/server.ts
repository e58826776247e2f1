/**
 * `gavel mcp`'s server: an MCP server over stdio (the official `@modelcontextprotocol/sdk`) with two
 * tools, `search_skills` and `load_skill`, answered by one resident {@link Router}.
 *
 * The SDK (and zod, which it requires) is an optional peer dependency: ~85 packages and ~28 MB that a
 * user who never runs `gavel mcp` should not install. It is imported when the server starts, and its
 * absence is a clear error that says what to install.
 */
import { GavelError } from "../../errors.js";
import type { Router } from "../../route/index.js";
import { DEFAULT_SEARCH_K, loadSkill, MAX_SEARCH_K, searchSkills, searchText, skillText } from "./tools.js";

type McpModule = typeof import("@modelcontextprotocol/sdk/server/mcp.js");
type StdioModule = typeof import("@modelcontextprotocol/sdk/server/stdio.js");
type ZodModule = typeof import("zod");

/** The SDK's modules, or a GavelError naming the package to install. */
export async function loadMcpSdk(): Promise<{ mcp: McpModule; stdio: StdioModule; zod: ZodModule }> {
  try {
    const [mcp, stdio, zod] = await Promise.all([
      import("@modelcontextprotocol/sdk/server/mcp.js"),
      import("@modelcontextprotocol/sdk/server/stdio.js"),
      import("zod"),
    ]);
    return { mcp, stdio, zod };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") {
      throw new GavelError(
        "gavel mcp needs the MCP SDK, an optional dependency of gavel-router: install it beside gavel-router " +
          "(npm install @modelcontextprotocol/sdk), or run it with npx -p gavel-router -p @modelcontextprotocol/sdk gavel mcp",
        "NATIVE_UNAVAILABLE",
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
}

const INSTRUCTIONS =
  "gavel-router picks the SKILL.md that fits a task from the skills installed in its bank. " +
  "Before starting a task that may need specialised instructions, call search_skills with the task; " +
  "then call load_skill with the best skill's id and follow its instructions.";

/** An MCP server (not yet connected) whose tools answer from `router`. */
export async function createMcpServer(router: Router, info: McpServerInfo) {
  const { mcp, zod } = await loadMcpSdk();
  const { z } = zod;
  const server = new mcp.McpServer({ name: "gavel-router", version: info.version }, { instructions: `${INSTRUCTIONS} Bank: ${info.bankDir}.` });
  server.registerTool(
    "search_skills",
    {
      title: "Search skills",
      description:
        "Find the installed skills (SKILL.md) that fit a task, best first, with scores and a one-line reason each. " +
        "The router reads the task with its own language model; pass the task as the user stated it.",
      inputSchema: {
        task: z.string().min(1).describe("the task, in the user's words"),
        k: z.number().int().min(1).max(MAX_SEARCH_K).optional().describe(`how many skills to list (default ${DEFAULT_SEARCH_K})`),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ task, k }, extra) => {
      try {
        const result = await searchSkills(router, task, k ?? DEFAULT_SEARCH_K, extra.signal);
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
      description:
        "Read an installed skill by id or name: its instructions (the SKILL.md body), front matter, allowed-tools, " +
        "the absolute path of its SKILL.md and folder, and where it was installed from.",
      inputSchema: { skill: z.string().min(1).describe("the skill's id or name, as search_skills lists it") },
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
  return server;
}

/**
 * Serves `router` over stdio until the client closes stdin (or the transport closes); stdout carries
 * the protocol only, so anything else the process prints must go to stderr.
 */
export async function serveMcpStdio(router: Router, info: McpServerInfo, signal?: AbortSignal): Promise<void> {
  const { stdio } = await loadMcpSdk();
  const server = await createMcpServer(router, info);
  const transport = new stdio.StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
    process.stdin.once("end", () => resolve());
    process.stdin.once("close", () => resolve());
    signal?.addEventListener("abort", () => resolve(), { once: true });
  });
  await server.connect(transport);
  await closed;
  await server.close();
}
