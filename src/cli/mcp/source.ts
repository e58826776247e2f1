/**
 * `gavel mcp` through the bank's resident router (`gavel serve`): the tools' {@link SkillSource} over
 * {@link serverRouter}, so that an MCP client loads no model of its own. When the server goes away
 * mid-session (its connection closes, it shuts down, or none answers any more) a call is asked once
 * more where the server is started on demand, then answered by a Router of this process, loaded on
 * first need; from then on the session stays local. An error the server answers (a skill that does
 * not exist, a task over its budget, a cancelled call) is the tool's error, as it would be locally.
 *
 * @module
 */
import { GavelError } from "../../errors.js";
import type { SkillRecord } from "../../route/skill-record.js";
import type { ServerRouter } from "../../serve/client-router.js";
import type { SkillSource } from "../../adapters/skill-tools.js";

/** Codes of a server that is gone rather than answering: its connection closed, it is shutting down, none runs. */
const GONE: ReadonlySet<string> = new Set(["INTERNAL", "DISPOSED", "FILE_NOT_FOUND"]);

function gone(err: unknown): boolean {
  return err instanceof GavelError && GONE.has(err.code);
}

/** Options of {@link servedSource}. */
export interface ServedSourceOptions {
  /** A Router of this process, loaded when the server is gone; null: the call fails with the server's error. */
  fallback: (() => Promise<SkillSource>) | null;
  /** Ask the server once more before falling back (with `serverRouter({ start })` that starts a new one). */
  retry: boolean;
  /** Hears each move to the fallback (one line for stderr). */
  onFallback?: (why: string) => void;
}

/** A {@link SkillSource} over the bank's server, with the fallback of {@link ServedSourceOptions}. */
export interface ServedSource extends SkillSource {
  /** Whether the calls are now answered by this process's own Router. */
  readonly local: boolean;
}

/** `get-skill`'s answer as `Router.get`'s record (the server adds `keys` and `renderTokens`). */
function asRecord(doc: SkillRecord & { keys?: unknown; renderTokens?: unknown }): SkillRecord {
  const { keys: _k, renderTokens: _r, ...record } = doc;
  return record;
}

/** The tools' source over `server`; see the module's comment for what happens when it goes away. */
export function servedSource(server: ServerRouter, options: ServedSourceOptions): ServedSource {
  let local: Promise<SkillSource> | null = null;
  const fallBack = (err: GavelError): Promise<SkillSource> => {
    if (!options.fallback) throw err;
    if (!local) {
      options.onFallback?.(`the gavel server is gone (${err.message} [${err.code}]); loading the model in this process`);
      local = options.fallback();
      local.catch(() => (local = null)); // a failed load is tried again at the next call
    }
    return local;
  };
  const call = async <T>(remote: () => Promise<T>, here: (s: SkillSource) => Promise<T>): Promise<T> => {
    if (local) return here(await local);
    let last: unknown;
    for (let attempt = 0; attempt < (options.retry ? 2 : 1); attempt++) {
      try {
        return await remote();
      } catch (err) {
        if (!gone(err)) throw err;
        last = err;
      }
    }
    return here(await fallBack(last as GavelError));
  };
  return {
    get local() {
      return local !== null;
    },
    route: (task, o) => call(() => server.route(task, o), (s) => s.route(task, o)),
    glance: (task, o) => call(() => server.glance(task, o), (s) => s.glance(task, o)),
    list: () => call(() => server.list(), async (s) => s.list()),
    get: (idOrName) => call(async () => asRecord(await server.get(idOrName)), (s) => s.get(idOrName)),
  };
}
