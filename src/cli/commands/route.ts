import { parseArgs } from "node:util";
import { intArg } from "../ui/options.js";
import { table } from "../ui/table.js";
import { routerOptions, routerOptionsHelp, withRouter } from "./common.js";
import type { Command } from "./types.js";

/** `gavel route`: one task through glance, verdict and ruling. */
export const route: Command = {
  summary: "route a task: glance, verdict on the shortlist, ruling (prints the shortlist)",
  help: `usage: gavel route "<task>" [options]
${routerOptionsHelp}
  --abstain             load nothing when the winner's verdict V < 0
  --explain             show the task tokens that voted for the winner
  --lexical             compute the lexical expert B (BM25 over the installed skills' text) for the
                        shortlist; S adds βB (on by default when the projections' β > 0)`,
  async run(args) {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: { ...routerOptions, abstain: { type: "boolean" }, explain: { type: "boolean" }, lexical: { type: "boolean" } },
    });
    if (positionals.length !== 1) {
      console.error(this.help);
      return 2;
    }
    return withRouter(values, async (router) => {
      const res = await router.route(positionals[0], { abstain: values.abstain, explain: values.explain, ...(values.lexical ? { lexical: true } : {}) });
      if (values.json) {
        console.log(JSON.stringify(res, null, 2));
        return 0;
      }
      if (res.shortlist.some((c) => c.B !== undefined)) {
        console.log(table(["skill", "g", "L", "V", "B", "S"], res.shortlist.map((c) => [c.skill, c.g, c.L, c.V, c.B ?? 0, c.S])));
      } else console.log(table(["skill", "g", "L", "V", "S"], res.shortlist.map((c) => [c.skill, c.g, c.L, c.V, c.S])));
      console.log(res.abstained ? "\nabstained: no skill's verdict says yes" : `\nchosen: ${res.skill ?? "(none)"}`);
      if (res.explanation) {
        console.log("\nvotes for it (task token → matched skill token, m):");
        for (const v of res.explanation.slice(0, 15)) console.log(`  ${JSON.stringify(v.token)} → ${JSON.stringify(v.matched)}  ${v.m.toFixed(3)}`);
      }
      const lexicalMs = res.timings.lexicalMs === undefined ? "" : `, ${res.timings.lexicalMs.toFixed(1)} ms lexical`;
      console.log(`(${res.timings.glanceMs.toFixed(0)} ms glance, ${res.timings.verdictMs.toFixed(0)} ms verdict${lexicalMs})`);
      return 0;
    });
  },
};

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
      console.log(values.json ? JSON.stringify(hits, null, 2) : table(["skill", "g"], hits.map((h) => [h.skill, h.g])));
      return 0;
    });
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
      console.log(values.json ? JSON.stringify(skills, null, 2) : table(["skill", "keys", "tokens"], skills.map((s) => [s.id, String(s.keys), String(s.renderTokens)])));
      return 0;
    });
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
      console.log(removed ? `removed ${positionals[0]}` : `no installed skill ${positionals[0]}`);
      return removed ? 0 : 1;
    });
  },
};
