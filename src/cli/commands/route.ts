import { GavelError, invalidArgument, clip } from "../../errors.js";
import { readRegularFile, RegularFileError } from "../../gguf/regular-file.js";
import type { Candidate, GlanceHit, InstalledSkill, RouteResult } from "../../route/index.js";
import { MAX_GLANCE_TOP } from "../../serve/handlers.js";
import { committedEntries, committedManifest } from "../../bank/opening.js";
import { Library } from "../../bank/library.js";
import { installedSkill } from "../../route/installed.js";
import { intArg, nonEmptyArgs } from "../ui/options.js";
import { parseFlags } from "../ui/flags.js";
import { safeText } from "../ui/safe-text.js";
import { table } from "../ui/table.js";
import { connectIfRunning, routeViaServerIfRunning } from "../../serve/client.js";
import { resolveProjectionsPath } from "../../defaults.js";
import { Router } from "../../route/index.js";
import { trustSettings } from "../../route/trust.js";
import type { Model } from "../../model/Model.js";
import { checkRouterArgs, openModel, routerOptions, routerOptionsHelp, openRouter, withRouter, type RouterArgs } from "./common.js";
import type { Command } from "./types.js";
import { bankDir, config } from "../../config.js";
import { UsageError } from "../usage-error.js";
import { noteUnreadFlags } from "./served-flags.js";

/** route, glance, list and uninstall never create a bank: a mistyped --bank is FILE_NOT_FOUND. */
const READ_ONLY = { create: false } as const;

/**
 * `op` answered by the bank's running `gavel serve` (no model load here), or null when none runs; the
 * model flags are then the server's, and a line on stderr names those given (as for `gavel route`).
 */
async function viaServer<T>(command: string, values: RouterArgs, op: "glance-top" | "uninstall", params: Record<string, unknown>): Promise<T | null> {
  checkRouterArgs(values);
  const served = await connectIfRunning({ bank: bankDir(values.bank) });
  if (!served) return null;
  let answer: T;
  try {
    answer = await served.request<T>(op, params);
  } finally {
    served.close();
  }
  await noteUnreadFlags(command, values);
  return answer;
}

/**
 * Opens model and router as `withRouter` does, but reads the bank's last committed snapshot without
 * its lock (`readOnly`): route, glance and list are never refused with BANK_LOCKED while another
 * process installs or uninstalls, and never create a bank. Both are closed after, whatever happens.
 */
async function withReader<T>(values: RouterArgs, use: (router: Router) => Promise<T>): Promise<T> {
  const projections = resolveProjectionsPath(values.projections).path;
  const model: Model = await openModel(values);
  try {
    const router = await openRouter(model, values, { projections, bankDir: bankDir(values.bank), readOnly: true });
    try {
      return await use(router);
    } finally {
      await router.close();
    }
  } finally {
    await model.dispose();
  }
}

/** Largest task read from a file or stdin (a task is cut to the context anyway; this bounds memory). */
export const MAX_TASK_BYTES = 64 * 1024 * 1024;

/** UTF-8 text of task bytes; INVALID_ARGUMENT naming where they came from when they are not UTF-8. */
function taskText(bytes: Uint8Array, where: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalidArgument(`the task in ${where} is not UTF-8 text`);
  }
}

/** Reads stdin to its end, within {@link MAX_TASK_BYTES}. */
async function readStdin(stdin: NodeJS.ReadableStream): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of stdin) {
    const b = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
    n += b.length;
    if (n > MAX_TASK_BYTES) throw invalidArgument(`the task on stdin is longer than ${MAX_TASK_BYTES} bytes`);
    chunks.push(b);
  }
  return Buffer.concat(chunks, n);
}

/**
 * The task of `gavel route` / `glance`: the argument, `-` (stdin), `--task-file PATH`, or, with
 * neither, stdin when it is not a terminal (piped). Undefined when none was given (print the usage).
 *
 * @throws GavelError `INVALID_ARGUMENT` for two sources at once, a file that is not a regular file or
 *   is over {@link MAX_TASK_BYTES}, text that is not UTF-8; `FILE_NOT_FOUND` for a missing file
 */
export async function readTaskArg(positionals: readonly string[], taskFile: string | undefined, stdin: NodeJS.ReadStream | NodeJS.ReadableStream = process.stdin): Promise<string | undefined> {
  if (positionals.length > 1) return undefined;
  const arg = positionals[0];
  if (arg !== undefined && taskFile !== undefined) throw invalidArgument("give the task once: as an argument (`-` for stdin) or with --task-file, not both");
  if (taskFile === "-") return taskText(await readStdin(stdin), "stdin");
  if (taskFile !== undefined) {
    try {
      return taskText(await readRegularFile(taskFile, MAX_TASK_BYTES), taskFile);
    } catch (err) {
      if (!(err instanceof RegularFileError)) throw err;
      if (err.reason === "missing") throw new GavelError(`task file ${clip(taskFile)} does not exist`, "FILE_NOT_FOUND", { cause: err });
      throw invalidArgument(`task file: ${err.message}`);
    }
  }
  if (arg === "-") return taskText(await readStdin(stdin), "stdin");
  if (arg !== undefined) return arg;
  // piped, with no argument: `cat task.md | gavel route`
  if ((stdin as NodeJS.ReadStream).isTTY) return undefined;
  const text = taskText(await readStdin(stdin), "stdin");
  // nothing piped (stdin closed or /dev/null): the usage; blanks piped: say so
  if (text === "") return undefined;
  if (text.trim() === "") throw invalidArgument("the task piped on stdin is only whitespace");
  return text;
}

/** What `gavel route` says of a paste read at the request's weight (RouteResult.paste). */
export function pasteLine(p: NonNullable<RouteResult["paste"]>): string {
  const w = (x: number) => (x < 1 ? x.toPrecision(2) : "1 (as the rest)");
  return `paste: ${p.lines} pasted line${p.lines === 1 ? "" : "s"} outweighed the request and counted as much as it in all (a pasted word weighed ${w(p.wordWeight)}, a pasted token ${w(p.tokenWeight)}; GAVEL_PASTE_WEIGHT=off reads them as the rest)`;
}

/** The line `gavel route` prints for a cut task. */
export function truncationLine(t: NonNullable<RouteResult["truncation"]>): string {
  const which = (n: number) => (t.kept === "start" ? `the first ${n}` : `the last ${n}`);
  const verdict = t.verdictTokens !== undefined ? `; the verdict reads ${which(t.verdictTokens)}` : "";
  if (t.droppedTokens === 0) return `truncated: the task has ${t.totalTokens} tokens; the glance read them all${verdict} (the rest of the context holds the skill)`;
  const lost = t.kept === "start" ? "its end was not read" : "its start was not read";
  return `truncated: the task has ${t.totalTokens} tokens, more than fit the context; routed on ${which(t.keptTokens)} (${t.droppedTokens} dropped: ${lost})${verdict}`;
}

/** A read-out as the tables print it: 3 decimals, or "–" when it was not computed (L, V of a skipped verdict). */
function readout(x: number): string {
  return Number.isFinite(x) ? x.toFixed(3) : "–";
}

/**
 * A shortlist as a table: skill, g, L, V, B (when the lexical expert ran), S, R (when the re-ranker
 * ordered it), and an optional last column; read-outs right-aligned, "–" where the verdict did not run.
 */
export function shortlistTable(shortlist: RouteResult["shortlist"], mark?: (c: Candidate) => string): string {
  const withB = shortlist.some((c) => c.B !== undefined);
  const withR = shortlist.some((c) => c.R !== undefined);
  const header = ["skill", "g", "L", "V", ...(withB ? ["B"] : []), "S", ...(withR ? ["R"] : []), ...(mark ? [""] : [])];
  const rows = shortlist.map((c) => [safeText(c.skill), ...[c.g, c.L, c.V, ...(withB ? [c.B ?? NaN] : []), c.S, ...(withR ? [c.R ?? NaN] : [])].map(readout), ...(mark ? [mark(c)] : [])]);
  // right-align the read-outs: each padded to its column's width, so the table's own padding keeps them
  const last = header.length - (mark ? 1 : 0);
  for (let j = 1; j < last; j++) {
    const w = Math.max(header[j].length, ...rows.map((r) => r[j].length));
    for (const r of rows) r[j] = r[j].padStart(w);
  }
  return table(header, rows);
}

/** What the verdict did, in words. */
export function verdictLine(res: Pick<RouteResult, "verdict" | "shortlist" | "abstained">): string {
  const by = res.shortlist.some((c) => c.R !== undefined) ? " (the re-ranker's best by its cheap stage; R orders them)" : "";
  if (res.verdict === "ran") return `verdict: ran on ${res.shortlist.length} candidate${res.shortlist.length === 1 ? "" : "s"}${by}`;
  const reranked = by !== "";
  if (res.verdict === "off") return reranked ? "verdict: off (L and V not computed; the re-ranker's cheap stage picks, R)" : "verdict: off (L and V not computed; S = g + βB)";
  if (reranked && res.abstained) return "verdict: skipped (the route abstained: it loads nothing; R, the re-ranker's cheap stage, orders the shortlist)";
  if (reranked && res.shortlist.length > 1) return "verdict: skipped (the re-ranker's cheap stage picks, R: its best leads by the margin or more, or the library is under the verdict's size)";
  return "verdict: skipped (one candidate, and nothing reads V: it could change nothing)";
}

/** The trust options of `gavel route` and `glance`, as util.parseArgs declares them. */
const trustArgOptions = {
  "exclude-flagged": { type: "string" },
  "exclude-source": { type: "string", multiple: true },
  trust: { type: "string", multiple: true },
  "tie-margin": { type: "string" },
} as const;

const TRUST_HELP = `  --exclude-flagged F   leave flagged skills out of the ranking: a comma-separated list of hub (the
                        install's breadth probes flagged it), echo (its text copies the task's
                        words), injection (a steering phrase)
  --exclude-source SEL  leave skills from a source out (repeatable): folder, library, input,
                        project, user, a host (claude-code, codex, agents, github-copilot, also
                        spelt copilot) or an absolute folder or library path; another word is
                        refused`;

const TRUST_ROUTE_HELP = `  --trust SEL=N         priority of a source (repeatable, e.g. --trust project=2 --trust user=1):
                        among skills within --tie-margin of the best glance vote g, the highest priority wins
  --tie-margin X        the near-tie margin in g for --trust (default the projections' Δ)`;

/** The route or glance options from the trust flags. */
/** The flags --exclude-flagged takes. */
const FLAGS: readonly string[] = ["hub", "echo", "injection"];

export function trustFromArgs(values: { "exclude-flagged"?: string; "exclude-source"?: string[]; trust?: string[]; "tie-margin"?: string }): {
  excludeFlagged?: ("hub" | "echo" | "injection")[];
  excludeSources?: string[];
  trust?: Record<string, number>;
  tieMargin?: number;
} {
  const out: ReturnType<typeof trustFromArgs> = {};
  if (values["exclude-flagged"] !== undefined) {
    const flags = values["exclude-flagged"].split(",").map((f) => f.trim()).filter((f) => f !== "");
    for (const f of flags) if (!FLAGS.includes(f)) throw invalidArgument(`--exclude-flagged takes a comma-separated list of ${FLAGS.join(", ")}, got ${JSON.stringify(clip(f))}`);
    out.excludeFlagged = flags as ("hub" | "echo" | "injection")[];
  }
  if (values["exclude-source"] !== undefined) out.excludeSources = [...values["exclude-source"]];
  if (values.trust !== undefined) {
    out.trust = {};
    for (const t of values.trust) {
      const i = t.lastIndexOf("=");
      const n = i > 0 ? Number(t.slice(i + 1)) : NaN;
      if (i <= 0 || t.slice(i + 1).trim() === "" || !Number.isFinite(n)) throw invalidArgument(`--trust takes SELECTOR=NUMBER, got ${JSON.stringify(clip(t))}`);
      out.trust[t.slice(0, i)] = n;
    }
  }
  if (values["tie-margin"] !== undefined) {
    const m = Number(values["tie-margin"]);
    if (values["tie-margin"].trim() === "" || !Number.isFinite(m) || m < 0) throw invalidArgument(`--tie-margin takes a number ≥ 0, got ${JSON.stringify(clip(values["tie-margin"]))}`);
    out.tieMargin = m;
  }
  // selectors and flags checked here, before a bank or a server is reached
  trustSettings(out, 0);
  return out;
}

/** `gavel route`'s options. */
const ROUTE_OPTIONS = {
  ...routerOptions,
  abstain: { type: "boolean" },
  "no-abstain": { type: "boolean" },
  "no-library-cut": { type: "boolean" },
  "no-verdict": { type: "boolean" },
  explain: { type: "boolean" },
  lexical: { type: "boolean" },
  "task-file": { type: "string" },
  ...trustArgOptions,
} as const;

/** `gavel route`: one task through glance, verdict and ruling. */
export const route: Command = {
  summary: "route a task: glance, verdict on the shortlist, ruling (prints the shortlist)",
  help: `usage: gavel route "<task>" [options]
       gavel route --task-file PATH [options]
       gavel route - [options]            (the task on stdin; also when piped with no task)
${routerOptionsHelp}
  --task-file PATH      read the task from a file (UTF-8, at most 64 MiB; - for stdin)
                        a task longer than the context is cut as --truncate says (its end is
                        kept by default) and the output says so ("truncated: …"; JSON: "truncation")
  --abstain             abstain (load nothing) when the projections' calibrated abstention model
                        says no installed skill serves the task; without a model, when the winner's
                        V < 0 (default: on when the projections carry a model, as gavel-mini's do)
  --no-abstain          never abstain
  --no-library-cut      under the abstention reference's size (125 skills for gavel-mini's), abstain
                        by the calibrated model alone, not also at the library's own cut (the
                        reference's prompts routed over it); as GAVEL_LIBRARY_CUT=off
  --no-verdict          skip the verdict (L, V): S is the first stage's g + βB, and a re-ranker
                        picks by its cheap stage (by default it runs unless there is one candidate
                        and abstention does not read V; with the projections' re-ranker, as
                        gavel-mini's, it reads the re-ranker's best two, and only from the
                        re-ranker's verdict size: 10,000 skills for gavel-mini's)
  --explain             show the task tokens that voted for the winner
  --lexical             compute the lexical expert B (BM25 over the installed skills' text) for the
                        shortlist; S adds βB (on by default when the projections' β > 0, or when
                        the abstention model reads B)
${TRUST_HELP}
${TRUST_ROUTE_HELP}`,
  options: ROUTE_OPTIONS,
  async run(args) {
    const { positionals, values } = parseFlags("route", { args, allowPositionals: true, options: ROUTE_OPTIONS });
    const task = await readTaskArg(positionals, values["task-file"]);
    if (task === undefined) throw new UsageError('gavel route needs a task: "<task>", --task-file PATH, or - for stdin', this.help);
    if (values.abstain && values["no-abstain"]) throw invalidArgument("--abstain and --no-abstain contradict each other");
    const abstain = values.abstain ? true : values["no-abstain"] ? false : undefined;
    const trust = trustFromArgs(values);
    // a running `gavel serve` on this bank answers in milliseconds (and holds the bank's lock);
    // it takes no trust options, so with them the bank is read here
    // what the flags ask of the route, the same whether a server or this process answers
    const asked = {
      ...(abstain !== undefined ? { abstain } : {}),
      ...(values["no-library-cut"] ? { libraryCut: false } : {}),
      ...(values["no-verdict"] ? { verdict: false } : {}),
      ...(values.lexical ? { lexical: true } : {}),
    };
    checkRouterArgs(values);
    const served = Object.keys(trust).length > 0 ? null : await routeViaServerIfRunning<RouteResult>(task, {
      bank: values.bank,
      ...asked,
      ...(values.explain ? { explain: true } : {}),
    });
    if (served) {
      await noteUnreadFlags("route", values);
      if (values.json) console.log(JSON.stringify(served, null, 2));
      else printRoute(served);
      return 0;
    }
    return withReader(values, async (router) => {
      const res = await router.route(task, { ...asked, explain: values.explain, ...trust });
      if (values.json) {
        console.log(JSON.stringify(res, null, 2));
        return 0;
      }
      printRoute(res);
      return 0;
    });
  },
};

/** A route's result as `gavel route` prints it. */
function printRoute(res: RouteResult): void {
  console.log(shortlistTable(res.shortlist));
  console.log(`\n${verdictLine(res)}`);
  if (res.abstention) console.log(`abstention: ${res.abstention.reason}`);
  console.log(res.abstained ? "abstained: no installed skill serves this task; load nothing" : `chosen: ${res.skill === undefined || res.skill === null ? "(none)" : safeText(res.skill)}`);
  // requests phrased as people talk are declined far more often than the same work stated (docs/BENCHMARKS.md)
  if (res.abstained) console.log("(a task for an agent routes best stated concretely: what to do, to what, and the tools, languages, file types or services involved)");
  if (res.flags?.length) console.log(`flagged: ${res.flags.join(", ")} (see gavel list for its warnings; --exclude-flagged leaves such skills out)`);
  if (res.truncation) console.log(truncationLine(res.truncation));
  if (res.paste) console.log(pasteLine(res.paste));
  if (res.explanation) {
    console.log("\nvotes for it (task token → matched skill token, m):");
    for (const v of res.explanation.slice(0, 15)) console.log(`  ${JSON.stringify(v.token)} → ${JSON.stringify(v.matched)}  ${v.m.toFixed(3)}`);
  }
  const lexicalMs = res.timings.lexicalMs === undefined ? "" : `, ${res.timings.lexicalMs.toFixed(1)} ms lexical`;
  const verdictMs = res.verdict === "ran" ? `${res.timings.verdictMs.toFixed(0)} ms verdict` : `verdict ${res.verdict}`;
  console.log(`(${res.timings.glanceMs.toFixed(0)} ms glance, ${verdictMs}${lexicalMs})`);
}

/** `gavel glance`'s options. */
const GLANCE_OPTIONS = { ...routerOptions, top: { type: "string" }, "task-file": { type: "string" }, "exclude-flagged": trustArgOptions["exclude-flagged"], "exclude-source": trustArgOptions["exclude-source"] } as const;

/** `gavel glance`: the library ranked by the glance alone. */
export const glance: Command = {
  summary: "rank the library by the glance alone",
  help: `usage: gavel glance "<task>" | --task-file PATH | - [options]
${routerOptionsHelp}
  --task-file PATH      read the task from a file (or give - to read it from stdin)
  --top K               how many to print (default 20)
${TRUST_HELP}`,
  options: GLANCE_OPTIONS,
  async run(args) {
    const { positionals, values } = parseFlags("glance", { args, allowPositionals: true, options: GLANCE_OPTIONS });
    const task = await readTaskArg(positionals, values["task-file"]);
    if (task === undefined) throw new UsageError('gavel glance needs a task: "<task>", --task-file PATH, or - for stdin', this.help);
    const topK = intArg(values.top, "top", { min: 1 }) ?? 20;
    const trust = trustFromArgs(values);
    const print = (hits: GlanceHit[]) => console.log(values.json ? JSON.stringify(hits, null, 2) : table(["skill", "g"], hits.map((h) => [safeText(h.skill), h.g])));
    // a running server answers `glance-top` (it takes no trust options, and at most 200)
    const served = Object.keys(trust).length === 0 && topK >= 1 && topK <= MAX_GLANCE_TOP ? await viaServer<GlanceHit[]>("glance", values, "glance-top", { task, k: topK }) : null;
    if (served) return (print(served), 0);
    return withReader(values, async (router) => {
      print(await router.glance(task, { topK, ...trust }));
      return 0;
    });
  },
};

/** `gavel list`: the installed skills, from the bank's committed manifest (no model is loaded). */
export const list: Command = {
  summary: "list the installed skills",
  help: `usage: gavel list [options]
  --bank, -b DIR        the skill bank directory                       [$GAVEL_BANK, default .gavel/bank]
  --json                print JSON

Reads the bank's last committed manifest, without its lock and without loading a model: any bank
lists, whichever model built it, beside a running \`gavel serve\` or an install. The model flags of
the other commands are accepted and not used.`,
  options: routerOptions,
  async run(args) {
    const { values } = parseFlags("list", { args, options: routerOptions });
    nonEmptyArgs(values, ["model", "projections", "bank"]);
    checkRouterArgs(values);
    // Router.list's fields, from the manifest a router would open
    return printList((await committedEntries(bankDir(values.bank))).map(installedSkill), values.json);
  },
};

/** `gavel list`'s output. */
function printList(skills: InstalledSkill[], json: boolean | undefined): number {
  if (json) {
    console.log(JSON.stringify(skills, null, 2));
    return 0;
  }
  // "!" marks a skill the loader warned about; its warnings follow the table
  const rows = skills.map((s) => [safeText(s.id), String(s.keys), String(s.renderTokens), s.warnings?.length ? "!" : ""]);
  console.log(table(["skill", "keys", "tokens", ""], rows));
  const warned = skills.filter((s) => s.warnings?.length);
  if (warned.length > 0) {
    console.log(`\n! ${warned.length} skill${warned.length === 1 ? "" : "s"} with warnings:`);
    for (const s of warned) for (const w of s.warnings ?? []) console.log(`  warning: ${safeText(s.name)}: ${safeText(w)}`);
  }
  return 0;
}

/**
 * An uninstall given no model and no projections (no flag, no GAVEL_MODEL or GAVEL_PROJECTIONS):
 * nothing is loaded but the bank, opened as its manifest says it was built (a removal writes no keys,
 * so no model needs checking), its keys held in half precision while it is open. A bank built with
 * your own model needs no flags. True when a skill was removed.
 */
async function uninstallAsBuilt(dir: string, skill: string): Promise<boolean> {
  const { header: h } = await committedManifest(dir);
  const source = { model: h.model, keysHash: h.projectionsHash, layer: h.layer, eps: h.eps, dim: h.dim };
  const library = await Library.open(dir, source, { create: false, keyType: "f16" });
  try {
    const entry = library.find(skill);
    if (!entry) return false;
    await library.remove(entry.id);
    return true;
  } finally {
    await library.close();
  }
}

/** `gavel uninstall`: one skill out of the bank. */
export const uninstall: Command = {
  summary: "remove an installed skill",
  help: `usage: gavel uninstall <skill> [options]

Removes one installed skill (by id, or by a name no other skill has). With no --model and no
--projections (and neither GAVEL_MODEL nor GAVEL_PROJECTIONS) no model is loaded: the bank is opened as
it was built, whichever model built it. Given either, the bank must have been built with that pair
(else BANK_MISMATCH). Through the bank's running \`gavel serve\` when there is one.
${routerOptionsHelp}`,
  options: routerOptions,
  async run(args) {
    const { positionals, values } = parseFlags("uninstall", { args, allowPositionals: true, options: routerOptions });
    nonEmptyArgs(values, ["model", "projections", "bank"]);
    if (positionals.length !== 1) throw new UsageError(`gavel uninstall takes one skill, not ${positionals.length}`, this.help);
    const skill = positionals[0];
    // exit 1 when nothing was removed; with --json, {skill, removed, server} on stdout either way
    const report = (removed: boolean, server: boolean) => {
      if (values.json) console.log(JSON.stringify({ skill, removed, server }));
      else console.log(removed ? `removed ${safeText(skill)}${server ? " (through the running gavel serve)" : ""}` : `no installed skill ${safeText(skill)}`);
      return removed ? 0 : 1;
    };
    // a running server holds the bank: the uninstall goes through it instead of failing BANK_LOCKED
    const served = await viaServer<{ removed: boolean }>("uninstall", values, "uninstall", { skill });
    if (served) return report(served.removed, true);
    const c = config();
    if (values.model === undefined && values.projections === undefined && c.model === undefined && c.projections === undefined) {
      return report(await uninstallAsBuilt(bankDir(values.bank), skill), false);
    }
    // a pair given: the bank must have been built with it, as for any other command
    return withRouter(values, async (router) => report(await router.uninstall(skill), false), READ_ONLY);
  },
};
