/**
 * The resident router's write verbs (docs/serve-protocol.md): `install` and `sync`, run by the server
 * under its own bank lock, so that `gavel install` and `gavel sync` go through a running `gavel serve`
 * instead of failing with BANK_LOCKED. Each takes the request's AbortSignal (a `cancel`, or its client
 * going away): the write stops where `Router.install` stops when Ctrl-C stops a local install (its
 * committed skills stay, the bank is never half-written). Progress goes back to the client as
 * `{"v":1,"id":…,"progress":{…}}` lines when the request asks for it (`"progress":true`).
 *
 * @module
 */
import { isAbsolute, resolve } from "node:path";
import { invalidArgument, messageNaming, optionField, type GavelError, type OptionNames } from "../errors.js";
import { boolOption, describeValue } from "../util/validate.js";
import type { InstallProgress, InstallReport, Router } from "../route/index.js";
import { discoverSkills, discoveryHost, type DiscoverResult } from "../skills/discover.js";
import { applySync, planSync } from "./sync-plan.js";
import type { WireError } from "./protocol.js";

/** Where a write's progress goes (a line to its client), when the client asked for it. */
export type ProgressSink = (p: InstallProgress) => void;

/** `Router.install`'s report as it travels: each failure's error as a code and a sentence. */
export interface WireInstallReport extends Omit<InstallReport, "failed"> {
  failed: { where: string; error: WireError }[];
}

/**
 * The report with its failures made plain JSON (a GavelError's message is not an own property), each
 * failure's message naming the options it speaks of by `names` (ServeOptions.optionNames) when given.
 */
export function wireInstallReport(r: InstallReport, names?: OptionNames): WireInstallReport {
  return { ...r, failed: r.failed.map((f) => ({ where: f.where, error: wireFailure(f.error, names) })) };
}

/** A write's failure as it travels: its code, its message (options named by `names` when given), and the option it refuses. */
function wireFailure(e: GavelError, names: OptionNames | undefined): WireError {
  const message = names ? messageNaming(e, names) : e.message;
  return { code: e.code, message, ...optionField(e) };
}

/** A non-negative integer parameter, or undefined when absent. */
function count(params: Record<string, unknown>, key: string, min = 0): number | undefined {
  const v = params[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min) throw invalidArgument(`${key} must be an integer ≥ ${min}`);
  return v;
}

/** The `cwd` parameter: an absolute path when given (null: not given), else the server's folder. */
function cwdOf(params: Record<string, unknown>): string {
  const v = params.cwd;
  if (v === undefined || v === null) return process.cwd();
  if (typeof v !== "string" || !isAbsolute(v)) throw invalidArgument(`cwd must be an absolute path, got ${describeValue(v)}`);
  return v;
}

/** An absolute path parameter (a relative one is resolved against `cwd`, else the server's folder). */
function path(params: Record<string, unknown>, key: string, required: boolean): string | undefined {
  const v = params[key];
  if (v === undefined || v === null) {
    if (required) throw invalidArgument(`${key} must be a non-empty string`);
    return undefined;
  }
  if (typeof v !== "string" || v === "") throw invalidArgument(`${key} must be a non-empty string`);
  return resolve(cwdOf(params), v);
}

/**
 * `install`: `source` (a folder or a JSONL library; relative to `cwd`), with `offset`, `limit`,
 * `jobs` (skills in flight) and `statesCache` as `gavel install` takes them.
 */
export async function installOp(router: Router, params: Record<string, unknown>, signal: AbortSignal, progress?: ProgressSink, names?: OptionNames): Promise<WireInstallReport> {
  cwdOf(params); // refused when malformed, whether a relative path needs it or not
  const source = path(params, "source", true)!;
  const report = await router.install(source, {
    signal,
    offset: count(params, "offset"),
    limit: count(params, "limit"),
    concurrency: count(params, "jobs", 1),
    statesCache: path(params, "statesCache", false),
    onProgress: progress,
  });
  return wireInstallReport(report, names);
}

/** What `sync` answers: what was found, the plan, and what its install reported. */
export interface WireSyncResult {
  host: DiscoverResult["host"];
  dryRun: boolean;
  found: {
    roots: DiscoverResult["roots"];
    warnings: string[];
    failed: { where: string; error: WireError }[];
    shadowed: DiscoverResult["shadowed"];
  };
  plan: {
    add: { id: string; source: string }[];
    update: { id: string; source: string }[];
    unchanged: string[];
    remove: { id: string; name: string; source: string }[];
    kept: { id: string; source: string; reason: string }[];
    conflicts: { id: string; source: string; installed: string }[];
  };
  /** The install's failures (none on a dry run). */
  installFailed: { where: string; error: WireError }[];
}

/**
 * `sync`: `gavel sync` in the server: the folders of `host` for the project `projectDir` (absolute, or relative to `cwd`)
 * and the user's `home` (default the server's), compared with the bank, then applied unless `dryRun`.
 */
export async function syncOp(router: Router, params: Record<string, unknown>, signal: AbortSignal, progress?: ProgressSink, names?: OptionNames): Promise<WireSyncResult> {
  const host = discoveryHost(params.host ?? undefined);
  cwdOf(params);
  // anything but a boolean is refused, never read as absent (a "true" string would run a real sync)
  const dryRun = boolOption(params.dryRun, "dryRun", false);
  const found = await discoverSkills({ host, projectDir: path(params, "projectDir", false), home: path(params, "home", false), signal });
  const plan = await planSync(router, found);
  const report = dryRun ? null : await applySync(router, plan, { signal, onProgress: progress });
  const ref = (s: { id: string; source: string }) => ({ id: s.id, source: s.source });
  return {
    host,
    dryRun,
    found: {
      roots: found.roots,
      warnings: found.warnings,
      failed: found.failed.map((f) => ({ where: f.where, error: { code: f.error.code, message: f.error.message } })),
      shadowed: found.shadowed,
    },
    plan: { add: plan.add.map(ref), update: plan.update.map(ref), unchanged: plan.unchanged, remove: plan.remove, kept: plan.kept, conflicts: plan.conflicts },
    installFailed: report ? wireInstallReport(report, names).failed : [],
  };
}
