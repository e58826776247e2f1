/**
 * What `gavel route`, `glance`, `uninstall`, `install` and `sync` say when the bank's running `gavel serve` answers them:
 * the server keeps the model and settings it was started with, so the flags (and GAVEL_* variables)
 * that only a router this process opens reads are not read, and one line on stderr names those given
 * (a model naming the server's own file is not), with the GAVEL_* settings set here to values the
 * server was not started with.
 */
import { resolve } from "node:path";
import { bankDir, config, type Config } from "../../config.js";
import { request } from "../../serve/client.js";
import { settingsGiven, settingsUnread } from "../../serve/settings.js";
import { safeText } from "../ui/safe-text.js";
import type { RouterArgs } from "./common.js";

/** The router flags a server's answer does not read (`--bank` finds the server; `--json` is printed here). */
const LOCAL_ONLY_FLAGS = ["model", "projections", "context", "threads", "gpu-layers", "skill-budget", "key-budget", "truncate"] as const;

/** The variables a flag of {@link LOCAL_ONLY_FLAGS} falls back to when not given. */
const FALLBACK: Readonly<Partial<Record<(typeof LOCAL_ONLY_FLAGS)[number], { name: string; key: "model" | "projections" }>>> = {
  model: { name: "GAVEL_MODEL", key: "model" },
  projections: { name: "GAVEL_PROJECTIONS", key: "projections" },
};

/** How long the server's status may take before the line is printed without its model. */
const STATUS_TIMEOUT_MS = 10_000;

/**
 * The flags given (`--model`, …) and the variables set in their stead (`GAVEL_MODEL` when `--model`
 * is not given) that a running server does not read, in the order of the command's option list.
 */
export function unreadByServer(values: RouterArgs, env: Pick<Config, "model" | "projections"> = config()): string[] {
  const unread: string[] = [];
  for (const flag of LOCAL_ONLY_FLAGS) {
    const fallback = FALLBACK[flag];
    if (values[flag] !== undefined) unread.push(`--${flag}`);
    else if (fallback !== undefined && env[fallback.key] !== undefined) unread.push(fallback.name);
  }
  return unread;
}

/** The model path the bank's server reports (`status`, undefined when it says none) and its settings; undefined when it does not answer. */
async function serverStatus(bank: string): Promise<{ model: string | undefined; settings: unknown } | undefined> {
  try {
    const status = await request<{ model?: unknown; settings?: unknown }>({ bank }, "status", {}, { timeoutMs: STATUS_TIMEOUT_MS });
    return { model: typeof status.model === "string" && status.model !== "" ? status.model : undefined, settings: status.settings };
  } catch {
    return undefined;
  }
}

/**
 * After the bank's server answered `gavel <command>`: one line on stderr naming the flags and
 * variables of {@link unreadByServer} that were given, the settings of src/serve/settings.ts set
 * here to values the server does not read (all of them when it does not answer), and the server's
 * model; nothing when none was.
 */
export async function noteUnreadFlags(command: string, values: RouterArgs): Promise<void> {
  let unread = unreadByServer(values);
  if (unread.length === 0 && settingsGiven(config()).length === 0) return;
  const status = await serverStatus(bankDir(values.bank));
  const model = status?.model;
  // a model that names the server's own file changes nothing
  const given = values.model ?? config().model;
  if (model !== undefined && given !== undefined && resolve(given) === resolve(model)) unread = unread.filter((f) => f !== "--model" && f !== "GAVEL_MODEL");
  unread = [...unread, ...settingsUnread(config(), status?.settings)];
  if (unread.length === 0) return;
  const its = model === undefined ? "" : ` (model ${safeText(model)})`;
  console.error(`gavel ${command}: answered by the gavel serve running for this bank${its}, which does not read ${unread.join(", ")}: it keeps the model and settings it was started with`);
}

/**
 * The flags of {@link unreadByServer} given on the command line, as `gavel serve` takes them (model
 * and projections paths made absolute): what a server started on demand is given, so that it reads
 * them (a GAVEL_* variable reaches it through its environment).
 */
export function serveArgsOf(values: RouterArgs): string[] {
  const args: string[] = [];
  for (const flag of LOCAL_ONLY_FLAGS) {
    const v = values[flag];
    if (v !== undefined) args.push(`--${flag}`, flag === "model" || flag === "projections" ? resolve(v) : v);
  }
  return args;
}
