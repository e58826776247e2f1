/**
 * `gavel mcp`'s check of a request's params, on either transport: a request of a method the server
 * serves whose params do not fit the MCP schema of that method (`resources/read` without a string
 * `uri`, `prompts/get` or `tools/call` without a string `name`, a list's `cursor` that is not a
 * string) is answered -32602 invalid params, `<method>: <path>: <what is wrong>`, before the SDK sees
 * it. The SDK parses params inside its handler, and its parse failure (not an `McpError`) was
 * answered -32603 internal error, zod's issue list as the message.
 *
 * @module
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { messageChecker } from "./stdio-transport.js";

type TypesModule = typeof import("@modelcontextprotocol/sdk/types.js");

/** The methods whose params are checked here: those the server answers (tools, resources, prompts). */
export const CHECKED_METHODS: ReadonlySet<string> = new Set(["tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read", "prompts/list", "prompts/get"]);

/**
 * Makes `transport` (connected: its `onmessage` is the server's) answer a request whose params do not
 * fit its method's schema with -32602, and pass every other message on as before.
 */
export function checkRequestParams(transport: Transport, types: TypesModule): void {
  const checks = new Map<string, ReturnType<typeof messageChecker>>();
  for (const schema of types.ClientRequestSchema.options) {
    const method = schema.shape.method.value;
    if (CHECKED_METHODS.has(method)) checks.set(method, messageChecker(schema));
  }
  const inner = transport.onmessage;
  if (!inner) return;
  transport.onmessage = (message, extra) => {
    const m = message as { id?: unknown; method?: unknown };
    const check = "id" in m && typeof m.method === "string" ? checks.get(m.method) : undefined;
    const r = check?.(message);
    if (!r || r.ok) return inner.call(transport, message, extra);
    const err = new types.McpError(types.ErrorCode.InvalidParams, `${m.method as string}: ${r.issue}`);
    const answer = { jsonrpc: "2.0", id: m.id, error: { code: err.code, message: err.message } } as JSONRPCMessage;
    transport.send(answer).catch((e: unknown) => transport.onerror?.(e instanceof Error ? e : new Error(String(e))));
  };
}
