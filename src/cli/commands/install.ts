import { existsSync } from "node:fs";
import { readdir, rmdir } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { removeBankIfEmpty } from "../../bank/opening.js";
import { bankDir } from "../../config.js";
import { intArg } from "../ui/options.js";
import { withInterrupt } from "../ui/interrupt.js";
import { Progress } from "../ui/progress.js";
import { failureText, safeText } from "../ui/safe-text.js";
import { routerOptions, routerOptionsHelp, withRouter, type RouterArgs, checkRouterArgs, flagOf } from "./common.js";
import type { Command } from "./types.js";
import { connectIfRunning, type ServeClient } from "../../serve/client.js";
import { noteUnreadFlags } from "./served-flags.js";
import { wireInstallReport, type WireInstallReport } from "../../serve/writes.js";
import { UsageError } from "../usage-error.js";
import { parseFlags } from "../ui/flags.js";

/** `gavel install`'s options. */
const INSTALL_OPTIONS = { ...routerOptions, limit: { type: "string" }, offset: { type: "string" }, jobs: { type: "string" }, "states-cache": { type: "string" } } as const;

/** `gavel install`: skills into a bank, with a progress bar. */
export const install: Command = {
  summary: "install skills (a folder of SKILL.md folders, or a .jsonl[.gz] library) into a bank",
  help: `usage: gavel install <dir|SKILL.md|library.jsonl[.gz]> [options]

The source: a skill folder, a folder searched for skill folders (<skill>/SKILL.md), one SKILL.md (any
.md file), or a JSONL library (one skill object a line; gzip is found by its bytes). Any other file
is read as JSONL: one whose first line is not a JSON object (a text, a PDF) is refused whole
(INVALID_ARGUMENT, exit 1); a bad line after that is a failed skill, and the others install.
${routerOptionsHelp}
  --limit N, --offset N take a slice of a JSONL library
  --jobs N              skills in flight at once (default 8; more keeps a GPU busy)
  --states-cache DIR    a gavel train --cache folder of this model file: skills whose keyed tokens and
                        layer it holds skip their forward pass (states rounded through f16); others
                        are computed as usual; nothing is written there

With --json, the report as Router.install returns it, each failure as {"where", "error": {"code",
"message", "option"}}: "option" (GavelError.option) only where the failure refuses an option, by the
library's name ("skillBudget" where the message says --skill-budget).

While \`gavel serve\` runs for the bank, the install goes through it (its model, under its lock), with
the same output; Ctrl-C cancels it there.`,
  options: INSTALL_OPTIONS,
  async run(args) {
    const { positionals, values } = parseFlags("install", { args, allowPositionals: true, options: INSTALL_OPTIONS });
    if (positionals.length !== 1) {
      throw new UsageError(`gavel install takes one skills folder or library, not ${positionals.length}`, this.help);
    }
    const bank = resolve(bankDir(values.bank));
    // a running server holds the bank: the install goes through it instead of failing BANK_LOCKED
    checkRouterArgs(values);
    const served = await connectIfRunning({ bank });
    if (served) return installServed(served, positionals[0], values);
    // A first install that fails (a missing folder, no skills, Ctrl-C before any commit) leaves no
    // empty bank behind: what this run created is removed when the bank ends up holding no skill.
    const created = firstMissing(bank);
    try {
      return await installInto(positionals[0], values);
    } finally {
      if (created !== null) await removeIfEmpty(bank, created);
    }
  },
};

/** Installs `source0` into the bank `values` name (created when missing). */
function installInto(source0: string, values: InstallValues): Promise<number> {
  return withInterrupt((signal) =>
    withRouter(values, async (router) => {
      // a bar on a terminal; a plain line every 5% and at least once a minute elsewhere (logs, CI);
      // both with the rate and ETA
      const progress = new Progress(process.stderr, { bar: 30, every: 5, everySeconds: 60, rate: { unit: "skills" } });
      // an absolute path, so each skill's recorded source names its SKILL.md from anywhere
      const source = existsSync(source0) ? resolve(source0) : source0;
      const report = await router.install(source, {
        onProgress: (p) => progress.update(p.done, p.total, safeText(p.skill), p.status !== "unchanged"),
        signal,
        limit: intArg(values.limit, "limit", { min: 0 }),
        offset: intArg(values.offset, "offset", { min: 0 }),
        concurrency: intArg(values.jobs, "jobs", { min: 1, max: 256 }),
        statesCache: values["states-cache"],
      });
      progress.end();
      // a render over the skill budget says which flag to raise, not which library option, as a
      // running gavel serve words its failures (ServeOptions.optionNames)
      return printInstallReport(wireInstallReport(report, flagOf), values.json === true);
    }, { create: true }), // the one command that builds a bank
  );
}

/** The install's report as `gavel install` prints it (text, or JSON with --json); the exit code. */
function printInstallReport(report: WireInstallReport, json: boolean): number {
  if (json) {
    console.log(JSON.stringify(report, null, 2));
  } else {
    console.log(
      `installed ${report.installed.length}, unchanged ${report.unchanged.length}, failed ${report.failed.length}` +
        ` in ${report.seconds.toFixed(1)} s (${report.tokens} tokens, ${report.keys} keys kept of ${report.rawKeys})`,
    );
    const sc = report.statesCache;
    if (sc) {
      const why = sc.present ? "" : " (it holds no states of this model file at this layer)";
      console.log(`  states cache: ${sc.hits} skills read, ${sc.misses} computed${why}`);
    }
    if (report.installed.length > 0) {
      const st = report.stages;
      const parts = (Object.keys(st) as (keyof typeof st)[]).map((k) => `${k} ${st[k].toFixed(1)} s`);
      console.log(`  stages, summed over skills in flight: ${parts.join(", ")}`);
    }
    // the file (and line) once, its code at the end
    for (const f of report.failed) console.log(`  failed: ${failureText(f.where, f.error.message)} [${f.error.code}]`);
    for (const w of report.warnings) {
      for (const text of w.warnings) console.log(`  warning: ${safeText(w.name)}: ${safeText(text)}`);
    }
    if (report.warnings.length > 0) {
      const n = report.warnings.reduce((sum, w) => sum + w.warnings.length, 0);
      const skills = report.warnings.length;
      console.log(`  ${n} warning${n === 1 ? "" : "s"} on ${skills} skill${skills === 1 ? "" : "s"} (kept with them: gavel list shows them)`);
    }
    if (report.truncated.length) {
      const shown = report.truncated.slice(0, 5).map(safeText).join(", ");
      const more = report.truncated.length > 5 ? ` and ${report.truncated.length - 5} more (--json lists them)` : "";
      // not a loss: the verdict reads a skill's start, the glance's keys read on to the key budget
      console.log(`  ${report.truncated.length} longer than the skill budget (the verdict reads their start; their keys read on to the key budget): ${shown}${more}`);
    }
  }
  return report.failed.length > 0 && report.installed.length + report.unchanged.length === 0 ? 1 : 0;
}

/**
 * The install through a running `gavel serve`: the server installs under its own lock and streams its
 * progress back; the output is the local install's. Ctrl-C cancels it on the server and waits for the
 * server to settle (what it committed stays, as with a local install). The model flags are the
 * server's: the bank is encoded with the model it serves (a line on stderr names those given).
 */
async function installServed(client: ServeClient, source0: string, values: InstallValues): Promise<number> {
  try {
    console.error(`gavel install: through the running gavel serve (${client.endpoint.kind === "unix" ? client.endpoint.path : client.endpoint.url})`);
    await noteUnreadFlags("install", values);
    const progress = new Progress(process.stderr, { bar: 30, every: 5, everySeconds: 60, rate: { unit: "skills" } });
    const source = existsSync(source0) ? resolve(source0) : source0;
    const params = {
      source,
      cwd: process.cwd(),
      limit: intArg(values.limit, "limit", { min: 0 }),
      offset: intArg(values.offset, "offset", { min: 0 }),
      jobs: intArg(values.jobs, "jobs", { min: 1, max: 256 }),
      statesCache: values["states-cache"] === undefined ? undefined : resolve(values["states-cache"]),
    };
    const report = await withInterrupt((signal) =>
      client.request<WireInstallReport>("install", params, {
        signal,
        settleOnAbort: true,
        onProgress: (p) => {
          const q = p as { done: number; total: number; skill: string; status?: string };
          progress.update(q.done, q.total, safeText(q.skill), q.status !== "unchanged");
        },
      }),
    );
    progress.end();
    return printInstallReport(report, values.json === true);
  } finally {
    client.close();
  }
}

type InstallValues = RouterArgs & { json?: boolean; limit?: string; offset?: string; jobs?: string; "states-cache"?: string };

/** The topmost folder of `path` that does not exist yet (what creating `path` makes first); null when `path` exists. */
function firstMissing(path: string): string | null {
  if (existsSync(path)) return null;
  let top = path;
  while (dirname(top) !== top && !existsSync(dirname(top))) top = dirname(top);
  return top;
}

/**
 * Removes `bank` when it holds no skill, under its lock (removeBankIfEmpty: a bank another install
 * created and holds meanwhile is kept), and the empty folders above it up to `created` (the first
 * this run made); a folder holding anything else (another tool's file) is kept.
 */
async function removeIfEmpty(bank: string, created: string): Promise<void> {
  if (!(await removeBankIfEmpty(bank))) return;
  for (let dir = bank; dir !== created; ) {
    dir = dirname(dir);
    if ((await readdir(dir).catch(() => ["?"])).length > 0) return;
    await rmdir(dir).catch(() => undefined);
  }
}
