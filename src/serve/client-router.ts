/**
 * The resident router as a router for the framework adapters (`SkillRouterLike`: `route` and `get`):
 * the adapters of gavel-router/ai-sdk, /langchain and /mastra route through a running `gavel serve`
 * with no model in the agent's process. Like client.ts it loads nothing but node built-ins at run time.
 *
 * @module
 */
import type { SkillRecord } from "../route/skill-record.js";
import type { GlanceHit, GlanceOptions, RouteContext, RouteOptions, RouteResult } from "../route/types.js";
import type { SkillRef } from "./handlers.js";
import { resolve } from "node:path";
import { GavelError, clip } from "../errors.js";
import { abortable, throwIfAborted } from "../util/validate.js";
import { connect, type EndpointOptions, type ServeClient } from "./client.js";
import { endpointOptions, ENDPOINT_KEYS } from "./endpoint.js";
import { resolveBankDir } from "./protocol.js";
import { checkInt, optionsObject } from "../util/validate.js";
import { DEFAULT_ON_DEMAND_IDLE_MS, startServer } from "./start.js";

/** Connects to the bank's server, starting one (and waiting for it) when none runs. */
async function connectOrStart(options: ServerRouterOptions, signal?: AbortSignal): Promise<ServeClient> {
  const where = { bank: options.bank, socket: options.socket };
  const first = await connect(where).catch((err: unknown) => (err instanceof GavelError && err.code === "FILE_NOT_FOUND" ? null : Promise.reject(err)));
  if (first) return first;
  const o = typeof options.start === "object" ? options.start : {};
  const bank = resolveBankDir(options.bank);
  const r = startServer(bank, { socket: options.socket && resolve(options.socket), idleExitMs: o.idleExitMs ?? DEFAULT_ON_DEMAND_IDLE_MS, cwd: process.cwd(), ...(o.serveArgs ? { args: o.serveArgs } : {}) });
  if ("refused" in r) throw new GavelError(`no gavel server runs for the bank ${clip(bank)}, and none was started: ${r.refused}`, "FILE_NOT_FOUND");
  const deadline = Date.now() + (o.waitMs ?? 120_000);
  for (;;) {
    throwIfAborted(signal, "serverRouter");
    const c = await connect(where).catch(() => null);
    if (c) return c;
    if (Date.now() > deadline) throw new GavelError(`the gavel server started for the bank ${clip(bank)} did not listen within ${o.waitMs ?? 120_000} ms (see ${"log" in r ? r.log : "its log"})`, "FILE_NOT_FOUND");
    await new Promise((res) => setTimeout(res, 200));
  }
}

/** Options of {@link serverRouter}. */
export interface ServerRouterOptions extends EndpointOptions {
  /** Each request's deadline in milliseconds, an integer from 1 to 2^31 − 1 (default none): past it the request is cancelled (`ABORTED`). */
  timeoutMs?: number;
  /**
   * Start a server when none runs for the bank (serve/start.ts: a detached `gavel serve
   * --idle-exit-ms`), then wait for it: `idleExitMs` (default 30 min) and how long to wait for it to
   * listen, `waitMs` (default 120 s; past it the call fails with FILE_NOT_FOUND), each an integer
   * from 1 to 2^31 − 1; `serveArgs`, more flags for the `gavel serve` it starts, as the CLI takes them
   * (`["--model", "/abs/agent.gguf", "--context", "4096"]`: at most 64 strings, none empty, none
   * `--bank`, `--socket` or `--idle-exit-ms`, which the start sets; a server already running keeps
   * its own). A missing bank is never created.
   */
  start?: boolean | { idleExitMs?: number; waitMs?: number; serveArgs?: readonly string[] };
}

/** A {@link serverRouter}: route and get through the server, and close its connection. */
export interface ServerRouter {
  route(context: RouteContext, options?: RouteOptions): Promise<RouteResult>;
  get(idOrName: string): Promise<SkillRecord>;
  /** The glance's ranking alone (`glance-top`): its best `topK` (default 20), as `Router.glance` gives it. */
  glance(context: RouteContext, options?: Pick<GlanceOptions, "topK" | "live" | "signal">): Promise<GlanceHit[]>;
  /** Every installed skill (`list`). */
  list(): Promise<SkillRef[]>;
  /** Closes the connection (a later call opens a new one). */
  close(): void;
}

/** The verb of {@link ServerRouter} that sends each op. */
const VERBS = { route: "route", "get-skill": "get", "glance-top": "glance", list: "list" } as const;

const SERVER_ROUTER_KEYS: Readonly<Record<keyof ServerRouterOptions, true>> = { ...ENDPOINT_KEYS, timeoutMs: true, start: true };

/** {@link serverRouter}'s options checked by key and value when it is made (INVALID_ARGUMENT naming the option). */
function checkServerRouterOptions(options: unknown): void {
  const o = endpointOptions(options, "serverRouter options", SERVER_ROUTER_KEYS);
  if (o.timeoutMs !== undefined) checkInt(o.timeoutMs, "timeoutMs", 1);
  if (o.start === undefined || typeof o.start === "boolean") return;
  const start = optionsObject(o.start, "start (a boolean or { idleExitMs, waitMs, serveArgs })", { idleExitMs: true, waitMs: true, serveArgs: true });
  if (start.idleExitMs !== undefined) checkInt(start.idleExitMs, "start.idleExitMs", 1);
  if (start.waitMs !== undefined) checkInt(start.waitMs, "start.waitMs", 1);
  if (start.serveArgs !== undefined) checkServeArgs(start.serveArgs);
}

/** The flags a start sets itself. */
const START_FLAGS = new Set(["--bank", "--socket", "--idle-exit-ms"]);

/** `start.serveArgs`: an array of at most 64 non-empty strings without a NUL, none a flag the start sets (INVALID_ARGUMENT). */
function checkServeArgs(v: unknown): void {
  const bad = (what: string, why: string) => new GavelError(`${what} ${why}`, "INVALID_ARGUMENT", { option: "start.serveArgs" });
  if (!Array.isArray(v) || v.length > 64) throw bad("start.serveArgs", "must be an array of at most 64 strings");
  for (const [i, a] of v.entries()) {
    if (typeof a !== "string" || a === "" || a.includes("\0") || a.length > 4096) throw bad(`start.serveArgs[${i}]`, "must be a non-empty string of at most 4096 characters without a NUL");
    if (START_FLAGS.has(a.split("=")[0])) throw bad(`start.serveArgs[${i}]`, `is ${clip(a)}: the start sets --bank, --socket and --idle-exit-ms itself`);
  }
}

/** The route options that travel (the server ignores the rest). */
const FLAGS = ["abstain", "libraryCut", "verdict", "explain", "lexical", "live"] as const;

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
  checkServerRouterOptions(options);
  let client: Promise<ServeClient> | null = null;
  // an aborted signal neither connects nor starts a server; an abort on the way is the verb's ABORTED
  const request = <T>(op: "route" | "get-skill" | "glance-top" | "list", params: Record<string, unknown>, signal?: AbortSignal): Promise<T> =>
    abortable(`serverRouter.${VERBS[op]}`, signal, () => send<T>(op, params, signal));
  const send = async <T>(op: "route" | "get-skill" | "glance-top" | "list", params: Record<string, unknown>, signal?: AbortSignal): Promise<T> => {
    client ??= options.start ? connectOrStart(options, signal) : connect({ bank: options.bank, socket: options.socket });
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
    glance(context, o = {}) {
      return request<GlanceHit[]>("glance-top", { task: context, ...(o.topK === undefined ? {} : { k: o.topK }), ...(o.live === undefined ? {} : { live: o.live }) }, o.signal);
    },
    list() {
      return request<SkillRef[]>("list", {});
    },
    close() {
      const c = client;
      client = null;
      void c?.then((x) => x.close(), () => undefined);
    },
  };
}
