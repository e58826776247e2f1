// `gavel sync`: the bank follows the host's skill folders. What is new or changed on disk (by content
// hash) is installed, what was deleted on disk is uninstalled, and skills installed from anywhere
// else (a JSONL library, another folder) are left alone, even when a host folder holds a skill of the
// same id (a conflict, reported).
import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { MANIFEST } from "../../bank/manifest.js";
import { GavelError, clip, optionField } from "../../errors.js";
import { bankDir } from "../../config.js";
import { homedir } from "node:os";
import { discoverSkills, discoveryHost, SKILL_HOSTS } from "../../skills/discover.js";
import { connectIfRunning, type ServeClient } from "../../serve/client.js";
import { noteUnreadFlags } from "./served-flags.js";
import { applySync, planSync, type SyncPlan } from "../../serve/sync-plan.js";
import { wireInstallReport, type WireSyncResult } from "../../serve/writes.js";
import { withInterrupt } from "../ui/interrupt.js";
import { failureText } from "../ui/safe-text.js";
import { routerOptions, routerOptionsHelp, withRouter, checkRouterArgs, flagOf, type RouterArgs } from "./common.js";
import type { Command } from "./types.js";
import { UsageError } from "../usage-error.js";
import { parseFlags } from "../ui/flags.js";

export { planSync, type SyncPlan } from "../../serve/sync-plan.js";

/** A sync's findings as printed: the local discovery's, or the server's answer (serve/writes.ts). */
interface FoundView {
  roots: { exists: boolean; skills: number; label: string; dir: string }[];
  warnings: string[];
  failed: { where: string; error: { message: string; option?: string } }[];
  shadowed: unknown[];
}

/** A sync's plan as printed. */
interface PlanView {
  add: { id: string; source: string }[];
  update: { id: string; source: string }[];
  unchanged: string[];
  remove: { id: string; name: string; source: string }[];
  kept: { id: string; source: string; reason: string }[];
  conflicts: { id: string; source: string; installed: string }[];
}

function printPlan(found: FoundView, plan: PlanView, dryRun: boolean): void {
  for (const r of found.roots) console.log(`  ${r.exists ? `${String(r.skills).padStart(4)} skills` : "  (none)   "}  ${r.label}  ${r.dir}`);
  for (const w of found.warnings) console.log(`warning: ${w}`);
  for (const f of found.failed) console.log(`failed: ${failureText(f.where, f.error.message)}`);
  const verb = dryRun ? "would " : "";
  // the id, not the name: a plugin's skill is installed as plugin:skill
  for (const s of plan.add) console.log(`${verb}install ${s.id} (new)  ${s.source}`);
  for (const s of plan.update) console.log(`${verb}install ${s.id} (changed)  ${s.source}`);
  for (const s of plan.remove) console.log(`${verb}uninstall ${s.name} (deleted on disk)  ${s.source}`);
  for (const s of plan.kept) console.log(`kept ${s.id}: its SKILL.md no longer reads (${s.reason})`);
  for (const s of plan.conflicts) {
    console.log(`conflict ${s.id}: installed from ${s.installed}, not from the host's folders; kept, ${s.source} not installed (gavel uninstall ${s.id} lets the next sync install it)`);
  }
}

/** The summary line, or with --json the summary object. */
function report(host: string, dryRun: boolean, found: FoundView, plan: PlanView, json: boolean, installFailed: readonly { where: string; error: { message: string; option?: string } }[] = []): void {
  // a skill whose install failed is reported failed, not installed (its source is the failure's where)
  const failedAt = new Set(installFailed.map((f) => f.where));
  const add = plan.add.filter((s) => !failedAt.has(s.source));
  const update = plan.update.filter((s) => !failedAt.has(s.source));
  const summary = {
    host,
    dryRun,
    installed: add.map((s) => s.id),
    updated: update.map((s) => s.id),
    uninstalled: plan.remove.map((s) => s.id),
    unchanged: plan.unchanged.length,
    kept: plan.kept,
    conflicts: plan.conflicts,
    shadowed: found.shadowed,
    failed: [...found.failed, ...installFailed].map((f) => ({ where: f.where, error: f.error.message, ...optionField(f.error) })),
  };
  if (json) {
    console.log(JSON.stringify(summary, null, 2));
    return;
  }
  const did = dryRun ? "would install" : "installed";
  console.log(
    `${dryRun ? "dry run: " : ""}${did} ${add.length} new, ${update.length} changed; ` +
      `${dryRun ? "would uninstall" : "uninstalled"} ${plan.remove.length}; unchanged ${plan.unchanged.length}` +
      (installFailed.length > 0 ? `; failed ${installFailed.length}` : "") +
      (plan.conflicts.length > 0 ? `; conflicts ${plan.conflicts.length}` : "") +
      (plan.add.length + plan.update.length + plan.remove.length === 0 ? " (nothing to do)" : ""),
  );
}

/** `gavel sync`'s options. */
const SYNC_OPTIONS = { ...routerOptions, host: { type: "string" }, project: { type: "string" }, "dry-run": { type: "boolean" } } as const;

/** `gavel sync`. */
export const sync: Command = {
  summary: "install what is new or changed in the hosts' skill folders, uninstall what was deleted",
  help: `usage: gavel sync [options]
Reads the skill folders an agent host reads (project and user), resolves same-named skills by that
host's precedence (a warning names each shadowed one), installs what is new or changed (content hash)
or was built with other budgets (--skill-budget, --key-budget, --context) and uninstalls what was
deleted on disk. Skills installed from elsewhere are left alone, even when a host folder holds one of
the same id (reported as a conflict). While
\`gavel serve\` runs for the bank, the sync goes through it, with the same output (gavel serve
--watch syncs edits of installed skills by itself).
  --host H              ${SKILL_HOSTS.join("|")} (default all): whose folders and precedence
                          claude-code: the managed folder, ~/.claude/skills, then .claude/skills (its docs:
                                       enterprise > personal > project), then installed plugins' skills
                                       as plugin:skill
                          codex: .agents/skills, then ~/.agents/skills, ~/.codex/skills, /etc/codex/skills
                          copilot: .github/skills, .claude/skills, .agents/skills, then ~/.copilot/skills,
                                   ~/.claude/skills, ~/.agents/skills
                          all: the project's .claude, .agents, .github, then the user's .claude, .agents,
                               .codex, .copilot skills folders
  --project DIR         the project's root (default: the current directory)
  --dry-run             print what it would do, change nothing
${routerOptionsHelp}`,
  options: SYNC_OPTIONS,
  async run(args) {
    const { positionals, values } = parseFlags("sync", { args, allowPositionals: true, options: SYNC_OPTIONS });
    if (positionals.length !== 0) {
      throw new UsageError("gavel sync takes no positional argument", this.help);
    }
    const host = discoveryHost(values.host);
    const dryRun = values["dry-run"] === true;
    // a mistyped --project found nothing and made an empty bank for it
    if (values.project !== undefined && !statSync(values.project, { throwIfNoEntry: false })?.isDirectory()) {
      throw new GavelError(`--project ${clip(values.project)}: no such folder`, "FILE_NOT_FOUND");
    }
    // a running server holds the bank: the sync goes through it instead of failing BANK_LOCKED
    checkRouterArgs(values);
    const served = await connectIfRunning({ bank: resolve(bankDir(values.bank)) });
    if (served) return syncServed(served, host, dryRun, values);
    // A dry run on a project without a bank yet: everything found would be installed, and neither
    // the model nor a bank is needed to say so (nothing is created).
    if (dryRun && !existsSync(join(resolve(bankDir(values.bank)), MANIFEST))) {
      return withInterrupt(async (signal) => {
        const found = await discoverSkills({ host, projectDir: values.project, signal });
        const plan: SyncPlan = { add: found.skills, update: [], unchanged: [], remove: [], kept: [], conflicts: [] };
        if (!values.json) printPlan(found, plan, true);
        report(host, true, found, plan, values.json === true);
        return 0;
      });
    }
    return withInterrupt((signal) =>
      withRouter(
        values,
        async (router) => {
          const found = await discoverSkills({ host, projectDir: values.project, signal });
          const plan = await planSync(router, found);
          if (!values.json) printPlan(found, plan, dryRun);
          // a render over the skill budget names the flag to raise, as a running gavel serve words it
          const installed = dryRun ? null : await applySync(router, plan, { signal });
          const failed = installed ? wireInstallReport(installed, flagOf).failed : [];
          for (const f of failed) console.error(`failed: ${failureText(f.where, f.error.message)}`);
          report(host, dryRun, found, plan, values.json === true, failed);
          return failed.length > 0 ? 1 : 0;
        },
        { create: !dryRun },
      ),
    );
  },
};

/**
 * The sync through a running `gavel serve`: the server discovers this project's and this user's
 * folders, plans and applies under its own lock; the output is the local sync's. Ctrl-C cancels it on
 * the server and waits for the server to settle, as a local sync stops at Ctrl-C. The model flags are
 * the server's (a line on stderr names those given).
 */
async function syncServed(client: ServeClient, host: string, dryRun: boolean, values: RouterArgs & { project?: string; json?: boolean }): Promise<number> {
  try {
    console.error(`gavel sync: through the running gavel serve (${client.endpoint.kind === "unix" ? client.endpoint.path : client.endpoint.url})`);
    await noteUnreadFlags("sync", values);
    const params = { host, dryRun, projectDir: resolve(values.project ?? process.cwd()), home: homedir() };
    const res = await withInterrupt((signal) => client.request<WireSyncResult>("sync", params, { signal, settleOnAbort: true }));
    if (!values.json) printPlan(res.found, res.plan, dryRun);
    for (const f of res.installFailed) console.error(`failed: ${failureText(f.where, f.error.message)}`);
    report(host, dryRun, res.found, res.plan, values.json === true, res.installFailed);
    return res.installFailed.length > 0 ? 1 : 0;
  } finally {
    client.close();
  }
}
