// `gavel serve`: the resident router (src/serve/, docs/SERVE.md).
import { existsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { availableParallelism } from "node:os";
import { GavelError, clip } from "../../errors.js";
import { resolveModelPath, resolveProjectionsPath } from "../../defaults.js";
import { Router } from "../../route/index.js";
import { claimSocketPath, ResidentServer, type ServeOptions } from "../../serve/server.js";
import { failureText, safeText } from "../ui/safe-text.js";
import { isRunning } from "../../serve/client.js";
import { defaultSocketPath, httpEndpointPath, resolveBankDir, socketPathProblem } from "../../serve/protocol.js";
import { intArg, MAX_TIMER_MS } from "../ui/options.js";
import { checkRouterArgs, flagOf, openModel, openRouter, routerOptions, routerOptionsHelp } from "./common.js";
import type { Command } from "./types.js";
import { parseFlags } from "../ui/flags.js";

/** Sequences of the model's context kept for batched glance passes (ModelLoadOptions.batchSequences). */
export const SERVE_BATCH_SEQUENCES = 4;

/**
 * The server's CPU threads when `--threads` is not given: every core but one (at least one). A
 * resident router shares the machine with the agent it serves and its tools, and llama.cpp's threads
 * spin waiting for each other at every operation of a pass, so a pass with a thread per core stalls
 * whenever another process takes a core (docs/SERVE.md, "Threads": one client's route 657 ms with
 * two threads against 16 ms with one, on two cores under load).
 */
export function serveThreads(cores: number = availableParallelism()): number {
  return Math.max(1, cores - 1);
}

/** `gavel serve`'s options. */
const SERVE_OPTIONS = { ...routerOptions, socket: { type: "string" }, port: { type: "string" }, "grace-ms": { type: "string" }, "max-task-tokens": { type: "string" }, "idle-exit-ms": { type: "string" }, create: { type: "boolean" }, watch: { type: "boolean" }, "watch-debounce-ms": { type: "string" } } as const;

/** `gavel serve`: load the model and the bank once, answer route / glance / get-skill / install / uninstall. */
export const serve: Command = {
  summary: "keep the model and the bank loaded and answer requests on a local socket (or localhost HTTP)",
  help: `usage: gavel serve [options]
${routerOptionsHelp}
                        (gavel serve's --threads default: every core but one)
  --socket PATH         the Unix socket to listen on (mode 0600), at most 107 bytes on Linux (103 on
                        macOS)   [default: <bank>/serve.sock, or $XDG_RUNTIME_DIR/gavel-<hash>.sock,
                        else <tmpdir>/gavel-<uid>/<hash>.sock (a private 0700 folder) when that path
                        is over 100 bytes]
  --port N              listen on http://127.0.0.1:N instead (0: any free port); the URL and a random
                        bearer token are written to <bank>/serve.http.json (mode 0600)
  --grace-ms N          on SIGINT/SIGTERM, how long requests in flight may finish before they are
                        aborted (default 10000; 0 to 2147483647)
  --max-task-tokens N   the per-request budget: a route or glance whose task is over N tokens is
                        refused (CONTEXT_OVERFLOW) before the model reads it (default 16384; 0: none;
                        at most 2147483647)
  --idle-exit-ms N      exit (as on SIGTERM) once no client has been connected and no request in
                        flight for N ms: for a server started on demand (default: never; 1 to
                        2147483647)
  --watch               watch the installed skills' folders (and the folders holding them) and sync
                        what changes, as \`gavel sync\` would: a SKILL.md edited is installed again, a
                        new skill folder beside them installed, a deleted one uninstalled; a burst of
                        edits is one sync (one line on stderr per sync); one sync at start catches
                        what changed while no server watched
  --watch-debounce-ms N quiet time after the last edit before the sync (default 500; 0 to 2147483647)
  --create              create the bank when there is none (by default a missing bank is an error,
                        FILE_NOT_FOUND: \`gavel install\` builds one, or install through the server)

The protocol (newline-delimited JSON, version 1) is described in docs/serve-protocol.md. \`gavel hook
claude-code\` and \`gavel route\` use the server when it runs.`,
  options: SERVE_OPTIONS,
  async run(args) {
    const { values } = parseFlags("serve", { args, options: SERVE_OPTIONS });
    const bankDir = resolveBankDir(values.bank);
    const socket = values.socket ?? defaultSocketPath(bankDir);
    const port = intArg(values.port, "port", { min: 0, max: 65535 });
    checkRouterArgs(values); // --truncate and the numbers, before the model loads
    const served = serveArgs(values);
    checkSocketArg(socket, values.socket !== undefined, port === undefined);
    const create = values.create === true;
    // a mistyped --bank fails now, not after the model loads (and never becomes a new empty bank)
    if (!create && !existsSync(bankDir)) {
      throw new GavelError(`no skill bank at ${clip(bankDir)} (gavel install <skills> --bank ${clip(bankDir)} builds one; gavel serve --create starts an empty one)`, "FILE_NOT_FOUND");
    }
    // refuse a second server before paying for the model
    if (port === undefined) await claimSocketPath(socket);
    else if (await isRunning(bankDir, { timeoutMs: 1000 })) {
      throw new GavelError(`a gavel server already serves ${clip(bankDir)} (see ${clip(httpEndpointPath(bankDir))})`, "BANK_LOCKED");
    }
    const modelPath = resolveModelPath(values.model).path;
    // 4 of the context's 10 sequences kept for the batched glance passes, so that they never drop the
    // verdict's cached prefixes (which keep the other 5)
    const model = await openModel({ ...values, threads: values.threads ?? String(serveThreads()) }, { batchSequences: SERVE_BATCH_SEQUENCES });
    let router: Router;
    try {
      router = await openRouter(model, values, { projections: resolveProjectionsPath(values.projections).path, bankDir, create });
    } catch (err) {
      await model.dispose();
      throw err;
    }
    let server: ResidentServer;
    const idleExitMs = served.idleExitMs;
    let onIdle = () => undefined as void;
    const idle = new Promise<void>((resolve) => (onIdle = resolve));
    try {
      if (port === undefined) await claimSocketPath(socket); // again: the bank is ours now
      server = await ResidentServer.start({ router, model, modelPath, socket, port, ...served, optionNames: flagOf, ...(idleExitMs === undefined ? {} : { onIdle }) });
    } catch (err) {
      // a start that failed has closed what it opened (server.ts): the router and the model go too
      await router.close();
      await model.dispose();
      throw err;
    }
    const skills = router.stats().skills;
    if (values.json) console.log(JSON.stringify({ listening: server.listen, bank: bankDir, skills, protocol: 1 }));
    else console.log(`gavel serve: listening on ${server.listen} (bank ${bankDir}, ${skills} skill${skills === 1 ? "" : "s"}; protocol v1, docs/SERVE.md)`);
    if (values.watch) console.error(`gavel serve: watching ${server.watchedFolders.length} folder${server.watchedFolders.length === 1 ? "" : "s"} of installed skills`);
    await new Promise<void>((resolve) => {
      const stop = (sig: string) => {
        console.error(`gavel serve: ${sig}, shutting down (${server.inFlight} request${server.inFlight === 1 ? "" : "s"} in flight)`);
        process.removeListener("SIGINT", onInt);
        process.removeListener("SIGTERM", onTerm);
        resolve();
      };
      const onInt = () => stop("SIGINT");
      const onTerm = () => stop("SIGTERM");
      process.on("SIGINT", onInt);
      process.on("SIGTERM", onTerm);
      void idle.then(() => stop(`idle for ${idleExitMs} ms`));
    });
    await server.shutdown();
    console.error("gavel serve: stopped");
    return 0;
  },
};

/**
 * The server's own flags as ServeOptions (`--grace-ms`, `--max-task-tokens`, `--idle-exit-ms`,
 * `--watch`, `--watch-debounce-ms`), each checked before the model loads (INVALID_ARGUMENT).
 */
function serveArgs(values: { "grace-ms"?: string; "max-task-tokens"?: string; "idle-exit-ms"?: string; watch?: boolean; "watch-debounce-ms"?: string }): Pick<ServeOptions, "graceMs" | "limits" | "idleExitMs" | "watch" | "onWatch"> {
  const graceMs = intArg(values["grace-ms"], "grace-ms", { min: 0, max: MAX_TIMER_MS });
  const maxTaskTokens = intArg(values["max-task-tokens"], "max-task-tokens", { min: 0, max: 2 ** 31 - 1 });
  const idleExitMs = intArg(values["idle-exit-ms"], "idle-exit-ms", { min: 1, max: MAX_TIMER_MS });
  return { graceMs, limits: maxTaskTokens === undefined ? {} : { maxTaskTokens }, ...(idleExitMs === undefined ? {} : { idleExitMs }), ...watchOptions(values) };
}

/**
 * The socket path, checked before the model loads: within the platform's length for a Unix socket
 * (a longer one would be cut short, the server listening elsewhere), and (`--socket` given) in a
 * folder that exists. Nothing to check when the server listens on a port.
 */
function checkSocketArg(socket: string, given: boolean, used: boolean): void {
  const problem = used ? socketPathProblem(socket) : null;
  if (problem) throw new GavelError(given ? `--socket ${clip(socket)}: ${problem}; pass a shorter path` : `the bank's socket ${clip(socket)}: ${problem}; pass a shorter --socket (or set XDG_RUNTIME_DIR to a shorter folder)`, "INVALID_ARGUMENT");
  if (given && !statSync(dirname(resolve(socket)), { throwIfNoEntry: false })?.isDirectory()) {
    throw new GavelError(`--socket ${clip(socket)}: its folder does not exist`, "FILE_NOT_FOUND");
  }
}

/** `--watch` and `--watch-debounce-ms` as ServeOptions, with the line each watched sync prints. */
function watchOptions(values: { watch?: boolean; "watch-debounce-ms"?: string }): Pick<ServeOptions, "watch" | "onWatch"> {
  const debounceMs = intArg(values["watch-debounce-ms"], "watch-debounce-ms", { min: 0, max: MAX_TIMER_MS });
  if (!values.watch) {
    if (debounceMs !== undefined) throw new GavelError("--watch-debounce-ms needs --watch", "INVALID_ARGUMENT");
    return {};
  }
  return {
    watch: debounceMs === undefined ? true : { debounceMs },
    onWatch: (e) => {
      if ("warning" in e) return console.error(`gavel serve: watch: ${safeText(e.warning)}`);
      const s = e.sync;
      const parts = [["installed", s.installed], ["updated", s.updated], ["uninstalled", s.uninstalled]].filter(([, ids]) => ids.length > 0).map(([verb, ids]) => `${verb} ${(ids as string[]).map(safeText).join(", ")}`);
      if (parts.length > 0) console.error(`gavel serve: watch: ${parts.join("; ")}`);
      for (const k of s.kept) console.error(`gavel serve: watch: kept ${safeText(k.id)} as installed: ${safeText(k.reason)}`);
      for (const f of s.failed) console.error(`gavel serve: watch: failed: ${failureText(f.where, f.message)}`);
    },
  };
}
