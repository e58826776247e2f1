import { existsSync } from "node:fs";
import { lstat, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { Router } from "../../route/index.js";
import { resolveProjectionsPath } from "../../defaults.js";
import { GavelError, clip } from "../../errors.js";
import { intArg, MAX_TIMER_MS } from "../ui/options.js";
import { packageVersion } from "../ui/version.js";
import { loadMcpSdk, serveMcpStdio, startMcpHttp } from "../mcp/server.js";
import { checkRouterArgs, openModel, openRouter, routerOptions, routerOptionsHelp, type RouterArgs } from "./common.js";
import { noteUnreadFlags, serveArgsOf } from "./served-flags.js";
import { servedSource } from "../mcp/source.js";
import { claimEndpointFile, refuseIfServed, releaseEndpointFile } from "../mcp/endpoint-file.js";
import type { SkillSource } from "../../adapters/skill-tools.js";
import { isRunning } from "../../serve/client.js";
import { serverRouter } from "../../serve/client-router.js";
import { DEFAULT_ON_DEMAND_IDLE_MS } from "../../serve/start.js";
import type { Model } from "../../model/Model.js";
import type { Command } from "./types.js";
import { bankDir, config } from "../../config.js";
import { UsageError } from "../usage-error.js";
import { parseFlags } from "../ui/flags.js";

/** The file `gavel mcp --port` writes into the bank: the URL and the bearer token (mode 0600). */
export const MCP_HTTP_ENDPOINT_FILE = "mcp.http.json";

/** Fewest characters of a token given with --token-file. */
const MIN_TOKEN_CHARS = 16;

/** The token in `file`: this user's, not readable by others, at least 16 characters. */
async function readToken(file: string): Promise<string> {
  const st = await lstat(file).catch(() => null);
  if (!st?.isFile()) throw new GavelError(`--token-file ${clip(file)} is not a regular file`, "FILE_NOT_FOUND");
  if ((typeof process.getuid === "function" && st.uid !== process.getuid()) || (st.mode & 0o077) !== 0) {
    throw new GavelError(`--token-file ${clip(file)} must belong to you and be readable by you alone (chmod 600)`, "INVALID_ARGUMENT");
  }
  const token = (await readFile(file, "utf8")).trim();
  if (token.length < MIN_TOKEN_CHARS || /\s/.test(token)) throw new GavelError(`--token-file ${clip(file)} must hold one token of at least ${MIN_TOKEN_CHARS} characters and no spaces`, "INVALID_ARGUMENT");
  return token;
}

/** `gavel mcp`'s options. */
const MCP_OPTIONS = { ...routerOptions, port: { type: "string" }, "token-file": { type: "string" }, "start-server": { type: "boolean" }, "idle-exit-ms": { type: "string" }, local: { type: "boolean" }, "no-library-cut": { type: "boolean" } } as const;

/** `gavel mcp`: an MCP server over stdio (or streamable HTTP) whose tools search and load the bank's skills. */
export const mcp: Command = {
  summary: "serve the bank to an agent as an MCP server over stdio or local HTTP (tools search_skills, load_skill; skills as resources and prompts)",
  help: `usage: gavel mcp [--port N [--token-file FILE]] [options]

An MCP server (Claude Code, Claude Desktop, Cursor, …). When a \`gavel serve\` runs for the bank the
tools answer through it (no model in this process; if it goes away, the model loads here); else the
model loads once here. Its tools, resources and prompts:
  search_skills {task, k?}   the installed skills that fit a task, best first, with scores and reasons
  load_skill {skill}         a skill by id or name: body, front matter, allowed-tools, absolute path
  skill://<id>               every installed skill as a resource (its instructions, as installed)
  prompt <id> {task?}        every installed skill as a prompt: its instructions, then the task
Over stdio by default (stdout carries the protocol, logs go to stderr). Needs the optional peer
dependencies @modelcontextprotocol/sdk and zod. The bank must exist (gavel install builds it).

  --port N              streamable HTTP on http://127.0.0.1:N/mcp instead of stdio (0: any free
                        port); loopback only; every request needs "Authorization: Bearer <token>".
                        The URL and the token are written to <bank>/${MCP_HTTP_ENDPOINT_FILE} (mode 0600)
  --token-file FILE     the token to require (a file of yours, mode 0600), instead of a random one
  --start-server        when no \`gavel serve\` runs for the bank, start a detached one (as the hook's
                        --start-server) and answer through it            [$GAVEL_START_SERVER=1]
  --idle-exit-ms N      how long a server started so waits with no client before it exits (default
                        ${DEFAULT_ON_DEMAND_IDLE_MS} ms)
  --local               load the model in this process even when a server runs for the bank
  --no-library-cut      search_skills says a task fits no skill (abstained) by the calibrated model
                        alone, not also at a small library's own cut (as GAVEL_LIBRARY_CUT=off)
${routerOptionsHelp}`,
  options: MCP_OPTIONS,
  async run(args) {
    const { values, positionals } = parseFlags("mcp", { args, allowPositionals: true, options: MCP_OPTIONS });
    if (positionals.length !== 0 || (values["token-file"] !== undefined && values.port === undefined) || (values.local && values["start-server"])) {
      throw new UsageError(positionals.length !== 0 ? "gavel mcp takes no positional argument" : values.local ? "--local and --start-server contradict each other" : "--token-file needs --port", this.help);
    }
    const port = intArg(values.port, "port", { min: 0, max: 65535 });
    const idleExitMs = intArg(values["idle-exit-ms"], "idle-exit-ms", { min: 1, max: MAX_TIMER_MS }) ?? DEFAULT_ON_DEMAND_IDLE_MS;
    checkRouterArgs(values); // --truncate and the numbers, before anything loads
    await loadMcpSdk(); // before the model loads: a missing SDK fails at once
    const token = values["token-file"] === undefined ? undefined : await readToken(resolve(values["token-file"]));
    // stdout is the protocol's (over stdio): whatever else prints goes to stderr
    console.log = console.error;
    const projections = resolveProjectionsPath(values.projections).path;
    const bank = bankDir(values.bank);
    // one gavel mcp --port a bank: refused before the model loads while another serves it
    if (port !== undefined) await refuseIfServed(join(resolve(bank), MCP_HTTP_ENDPOINT_FILE));
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    // the model and the Router of this process, opened when first needed (never, while a server answers)
    let model: Model | null = null;
    let router: Router | null = null;
    const openLocal = async (): Promise<Router> => {
      model ??= await openModel(values); // --context, else the model's trained context up to 8192
      // a read-only command: a missing bank is an error, not a new empty bank. Its tools only read, so it
      // opens the bank's committed snapshot without the lock: any number of `gavel mcp` run beside
      // `gavel serve` and installs (never waiting on the bank lock), each moving to a newer commit at its next search
      router ??= await openRouter(model, values, { projections, bankDir: bank, readOnly: true });
      return router;
    };
    try {
      const served = await resolveSource(bank, { local: values.local === true, start: values["start-server"] === true || config().startServer, idleExitMs, openLocal, values });
      const here = served ? null : await openLocal();
      const source: SkillSource = here ?? served!.source;
      const what = here ? `${here.list().length} skills from ${bank}` : `the bank ${bank} through ${served!.how}`;
      const info = { version: packageVersion(), bankDir: bank, ...(values["no-library-cut"] ? { search: { libraryCut: false } } : {}) };
      try {
        if (port === undefined) {
          console.error(`gavel mcp: serving ${what} over stdio`);
          await serveMcpStdio(source, info, stop.signal);
        } else {
          const file = join(resolve(bank), MCP_HTTP_ENDPOINT_FILE);
          const endpoint = await startMcpHttp(source, info, { port, token });
          let claimed = false;
          try {
            await claimEndpointFile(file, endpoint);
            claimed = true;
            console.error(`gavel mcp: serving ${what} on ${endpoint.url} (bearer token in ${file})`);
            await new Promise<void>((done) => (stop.signal.aborted ? done() : stop.signal.addEventListener("abort", () => done(), { once: true })));
          } finally {
            await endpoint.close();
            if (claimed) await releaseEndpointFile(file, endpoint.token);
          }
        }
      } finally {
        served?.close();
      }
    } finally {
      process.removeListener("SIGINT", onSignal);
      process.removeListener("SIGTERM", onSignal);
      await (router as Router | null)?.close();
      await (model as Model | null)?.dispose();
    }
    return 0;
  },
};

/**
 * The bank's resident router as the tools' source: when a `gavel serve` answers for the bank (unless
 * `local`), or, with `start`, one started on demand (serve/start.ts, as the hook's --start-server)
 * that exits once idle. Null: no server and no start, so the tools use a Router of this process.
 */
async function resolveSource(bank: string, o: { local: boolean; start: boolean; idleExitMs: number; openLocal: () => Promise<Router>; values: RouterArgs }): Promise<{ source: SkillSource; how: string; close(): void } | null> {
  if (o.local) return null;
  const abs = resolve(bank);
  const running = await isRunning(abs, { timeoutMs: 5000 });
  // no bank: nothing to start a server for (the local open says so, as without --start-server)
  if (!running && (!o.start || !existsSync(abs))) return null;
  // a running server keeps its model and settings (stderr names the flags it does not read); one
  // started here is given them
  if (running) await noteUnreadFlags("mcp", o.values);
  const server = serverRouter({ bank: abs, ...(o.start ? { start: { idleExitMs: o.idleExitMs, serveArgs: serveArgsOf(o.values) } } : {}) });
  const source = servedSource(server, { fallback: o.openLocal, retry: o.start, onFallback: (why) => console.error(`gavel mcp: ${why}`) });
  // a server started on demand loads its model while the client connects; its failure is the first call's
  if (!running) void Promise.resolve().then(() => source.list()).catch(() => undefined);
  return { source, how: running ? "its running gavel serve" : `a gavel serve started on demand (it exits after ${o.idleExitMs} ms idle)`, close: () => server.close() };
}
