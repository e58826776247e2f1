import { parseArgs } from "node:util";
import { invalidArgument } from "../../errors.js";
import type { Candidate, RouteResult } from "../../route/index.js";
import { intArg } from "../ui/options.js";
import { safeText } from "../ui/safe-text.js";
import { table } from "../ui/table.js";
import { routeViaServerIfRunning } from "../../serve/client.js";
import { routerOptions, routerOptionsHelp, withRouter } from "./common.js";
import type { Command } from "./types.js";

/** route, glance, list and uninstall never create a bank: a mistyped --bank is FILE_NOT_FOUND. */
const READ_ONLY = { create: false } as const;

/** A read-out as the tables print it: 3 decimals, or "–" when it was not computed (L, V of a skipped verdict). */
function readout(x: number): string {
  return Number.isFinite(x) ? x.toFixed(3) : "–";
}

/**
 * A shortlist as a table: skill, g, L, V, B (when the lexical expert ran), S, and an optional last
 * column; read-outs right-aligned, "–" where the verdict did not run.
 */
export function shortlistTable(shortlist: RouteResult["shortlist"], mark?: (c: Candidate) => string): string {
  const withB = shortlist.some((c) => c.B !== undefined);
  const header = ["skill", "g", "L", "V", ...(withB ? ["B"] : []), "S", ...(mark ? [""] : [])];
  const rows = shortlist.map((c) => [safeText(c.skill), ...[c.g, c.L, c.V, ...(withB ? [c.B ?? NaN] : []), c.S].map(readout), ...(mark ? [mark(c)] : [])]);
  // right-align the read-outs: each padded to its column's width, so the table's own padding keeps them
  const last = header.length - (mark ? 1 : 0);
  for (let j = 1; j < last; j++) {
    const w = Math.max(header[j].length, ...rows.map((r) => r[j].length));
    for (const r of rows) r[j] = r[j].padStart(w);
  }
  return table(header, rows);
}

/** What the verdict did, in words. */
export function verdictLine(res: Pick<RouteResult, "verdict" | "shortlist">): string {
  if (res.verdict === "ran") return `verdict: ran on ${res.shortlist.length} candidate${res.shortlist.length === 1 ? "" : "s"}`;
  if (res.verdict === "off") return "verdict: off (L and V not computed; S = g + βB)";
  return "verdict: skipped (one candidate, and nothing reads V: it could change nothing)";
}

/** `gavel route`: one task through glance, verdict and ruling. */
export const route: Command = {
  summary: "route a task: glance, verdict on the shortlist, ruling (prints the shortlist)",
  help: `usage: gavel route "<task>" [options]
${routerOptionsHelp}
  --abstain             abstain (load nothing) when the projections' calibrated abstention model
                        says no installed skill serves the task; without a model, when the winner's
                        V < 0 (default: on when the projections carry a model, as gavel-mini's do)
  --no-abstain          never abstain
  --no-verdict          skip the verdict (L, V): S is the first stage's g + βB (by default it runs
                        unless there is one candidate and abstention does not read V)
  --explain             show the task tokens that voted for the winner
  --lexical             compute the lexical expert B (BM25 over the installed skills' text) for the
                        shortlist; S adds βB (on by default when the projections' β > 0, or when
                        the abstention model reads B)`,
  async run(args) {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        ...routerOptions,
        abstain: { type: "boolean" },
        "no-abstain": { type: "boolean" },
        "no-verdict": { type: "boolean" },
        explain: { type: "boolean" },
        lexical: { type: "boolean" },
      },
    });
    if (positionals.length !== 1) {
      console.error(this.help);
      return 2;
    }
    if (values.abstain && values["no-abstain"]) throw invalidArgument("--abstain and --no-abstain contradict each other");
    const abstain = values.abstain ? true : values["no-abstain"] ? false : undefined;
    // a running `gavel serve` on this bank answers in milliseconds (and holds the bank's lock)
    const served = await routeViaServerIfRunning<RouteResult>(positionals[0], {
      bank: values.bank,
      ...(abstain !== undefined ? { abstain } : {}),
      ...(values["no-verdict"] ? { verdict: false } : {}),
      ...(values.explain ? { explain: true } : {}),
      ...(values.lexical ? { lexical: true } : {}),
    });
    if (served) {
      if (values.json) console.log(JSON.stringify(served, null, 2));
      else printRoute(served);
      return 0;
    }
    return withRouter(values, async (router) => {
      const res = await router.route(positionals[0], {
        ...(abstain !== undefined ? { abstain } : {}),
        ...(values["no-verdict"] ? { verdict: false } : {}),
        explain: values.explain,
        ...(values.lexical ? { lexical: true } : {}),
      });
      if (values.json) {
        console.log(JSON.stringify(res, null, 2));
        return 0;
      }
      printRoute(res);
      return 0;
    }, READ_ONLY);
  },
};

/** A route's result as `gavel route` prints it. */
function printRoute(res: RouteResult): void {
  console.log(shortlistTable(res.shortlist));
  console.log(`\n${verdictLine(res)}`);
  if (res.abstention) console.log(`abstention: ${res.abstention.reason}`);
  console.log(res.abstained ? "abstained: no installed skill serves this task; load nothing" : `chosen: ${res.skill === undefined || res.skill === null ? "(none)" : safeText(res.skill)}`);
  if (res.explanation) {
    console.log("\nvotes for it (task token → matched skill token, m):");
    for (const v of res.explanation.slice(0, 15)) console.log(`  ${JSON.stringify(v.token)} → ${JSON.stringify(v.matched)}  ${v.m.toFixed(3)}`);
  }
  const lexicalMs = res.timings.lexicalMs === undefined ? "" : `, ${res.timings.lexicalMs.toFixed(1)} ms lexical`;
  const verdictMs = res.verdict === "ran" ? `${res.timings.verdictMs.toFixed(0)} ms verdict` : `verdict ${res.verdict}`;
  console.log(`(${res.timings.glanceMs.toFixed(0)} ms glance, ${verdictMs}${lexicalMs})`);
}

/** `gavel glance`: the library ranked by the glance alone. */
export const glance: Command = {
  summary: "rank the library by the glance alone",
  help: `usage: gavel glance "<task>" [options]
${routerOptionsHelp}
  --top K               how many to print (default 20)`,
  async run(args) {
    const { positionals, values } = parseArgs({ args, allowPositionals: true, options: { ...routerOptions, top: { type: "string" } } });
    if (positionals.length !== 1) {
      console.error(this.help);
      return 2;
    }
    return withRouter(values, async (router) => {
      const hits = await router.glance(positionals[0], { topK: intArg(values.top, "top") ?? 20 });
      console.log(values.json ? JSON.stringify(hits, null, 2) : table(["skill", "g"], hits.map((h) => [safeText(h.skill), h.g])));
      return 0;
    }, READ_ONLY);
  },
};

/** `gavel list`: the installed skills. */
export const list: Command = {
  summary: "list the installed skills",
  help: `usage: gavel list [options]\n${routerOptionsHelp}`,
  async run(args) {
    const { values } = parseArgs({ args, options: routerOptions });
    return withRouter(values, async (router) => {
      const skills = router.list();
      if (values.json) {
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
    }, READ_ONLY);
  },
};

/** `gavel uninstall`: one skill out of the bank. */
export const uninstall: Command = {
  summary: "remove an installed skill",
  help: `usage: gavel uninstall <skill> [options]\n${routerOptionsHelp}`,
  async run(args) {
    const { positionals, values } = parseArgs({ args, allowPositionals: true, options: routerOptions });
    if (positionals.length !== 1) {
      console.error(this.help);
      return 2;
    }
    return withRouter(values, async (router) => {
      const removed = await router.uninstall(positionals[0]);
      console.log(removed ? `removed ${safeText(positionals[0])}` : `no installed skill ${safeText(positionals[0])}`);
      return removed ? 0 : 1;
    }, READ_ONLY);
  },
};
