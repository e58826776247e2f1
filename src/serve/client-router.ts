/**
 * The resident router as a router for the framework adapters (`SkillRouterLike`: `route` and `get`):
 * the adapters of gavel-router/ai-sdk, /langchain and /mastra route through a running `gavel serve`
 * with no model in the agent's process. Like client.ts it loads nothing but node built-ins at run time.
 *
 * @module
 */
import type { SkillRecord } from "../route/skill-record.js";
import type { RouteContext, RouteOptions, RouteResult } from "../route/types.js";
import { connect, type EndpointOptions, type ServeClient } from "./client.js";

/** Options of {@link serverRouter}. */
export interface ServerRouterOptions extends EndpointOptions {
  /** Each request's deadline in milliseconds (default none): past it the request is cancelled (`ABORTED`). */
  timeoutMs?: number;
}

/** A {@link serverRouter}: route and get through the server, and close its connection. */
export interface ServerRouter {
  route(context: RouteContext, options?: RouteOptions): Promise<RouteResult>;
  get(idOrName: string): Promise<SkillRecord>;
  /** Closes the connection (a later call opens a new one). */
  close(): void;
}

/** The route options that travel (the server ignores the rest). */
const FLAGS = ["abstain", "verdict", "explain", "lexical", "live"] as const;

/**
 * A router over the bank's running server: `route` sends `route` (the task, or the chat), `get` sends
 * `get-skill`. One connection, opened on first use and again after a failure. Rejects with
 * `FILE_NOT_FOUND` when no server runs for the bank, and with the server's codes otherwise.
 *
 * ```ts
 * import { serverRouter } from "gavel-router";
 * import { gavelPrepareStep } from "gavel-router/ai-sdk";
 * const prepareStep = gavelPrepareStep(serverRouter({ bank: ".gavel/bank" }));
 * ```
 */
export function serverRouter(options: ServerRouterOptions = {}): ServerRouter {
  let client: Promise<ServeClient> | null = null;
  const request = async <T>(op: "route" | "get-skill", params: Record<string, unknown>, signal?: AbortSignal): Promise<T> => {
    client ??= connect({ bank: options.bank, socket: options.socket });
    const c = client;
    try {
      return await (await c).request<T>(op, params, { signal, timeoutMs: options.timeoutMs });
    } catch (err) {
      // a connection that failed is dropped; an answer that is an error keeps it
      if (client === c && !(err instanceof Error && "code" in err && err.code !== "INTERNAL" && err.code !== "DISPOSED" && err.code !== "FILE_NOT_FOUND")) {
        client = null;
        void c.then((x) => x.close(), () => undefined);
      }
      throw err;
    }
  };
  return {
    route(context, o = {}) {
      const params: Record<string, unknown> = { task: context };
      for (const f of FLAGS) if (o[f] !== undefined) params[f] = o[f];
      return request<RouteResult>("route", params, o.signal);
    },
    get(idOrName) {
      return request<SkillRecord>("get-skill", { skill: idOrName });
    },
    close() {
      const c = client;
      client = null;
      void c?.then((x) => x.close(), () => undefined);
    },
  };
}
