import { parseArgs } from "node:util";
import { Router } from "../../route/index.js";
import { resolveProjectionsPath } from "../../defaults.js";
import { intArg } from "../ui/options.js";
import { packageVersion } from "../ui/version.js";
import { loadMcpSdk, serveMcpStdio } from "../mcp/server.js";
import { openModel, routerOptions, routerOptionsHelp } from "./common.js";
import type { Command } from "./types.js";
import { bankDir } from "../../config.js";

/** `gavel mcp`: an MCP server over stdio whose tools search and load the bank's skills. */
export const mcp: Command = {
  summary: "serve the bank to an agent as an MCP server over stdio (tools search_skills, load_skill)",
  help: `usage: gavel mcp [options]

An MCP server over stdio (Claude Code, Claude Desktop, Cursor, …): the model loads once, then
  search_skills {task, k?}   the installed skills that fit a task, best first, with scores and reasons
  load_skill {skill}         a skill by id or name: body, front matter, allowed-tools, absolute path
Needs the optional dependency @modelcontextprotocol/sdk. The bank must exist (gavel install builds it);
stdout carries the protocol, logs go to stderr.
${routerOptionsHelp}`,
  async run(args) {
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options: routerOptions });
    if (positionals.length !== 0) {
      console.error(this.help);
      return 2;
    }
    await loadMcpSdk(); // before the model loads: a missing SDK fails at once
    // stdout is the protocol's: whatever else prints goes to stderr
    console.log = console.error;
    const projections = resolveProjectionsPath(values.projections).path;
    const bank = bankDir(values.bank);
    const model = await openModel(values); // --context, else the model's trained context up to 8192
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    try {
      // a read-only command: a missing bank is an error, not a new empty bank. Its tools only read, so it
      // opens the bank's committed snapshot without the lock: any number of `gavel mcp` run beside
      // `gavel serve` and installs (never BANK_LOCKED), each moving to a newer commit at its next search
      const router = await Router.open(model, { projections, bankDir: bank, readOnly: true, skillBudget: intArg(values["skill-budget"], "skill-budget") });
      try {
        console.error(`gavel mcp: serving ${router.list().length} skills from ${bank} over stdio`);
        await serveMcpStdio(router, { version: packageVersion(), bankDir: bank }, stop.signal);
      } finally {
        await router.close();
      }
    } finally {
      process.removeListener("SIGINT", onSignal);
      process.removeListener("SIGTERM", onSignal);
      await model.dispose();
    }
    return 0;
  },
};
