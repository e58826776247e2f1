// `gavel sync`: the bank follows the host's skill folders. What is new or changed on disk (by content
// hash) is installed, what was deleted on disk is uninstalled, and skills installed from anywhere
// else (a JSONL library, another folder) are left alone.
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { MANIFEST } from "../../bank/manifest.js";
import { bankDir } from "../../config.js";
import { parseArgs } from "node:util";
import { locateSkill, type Router } from "../../route/index.js";
import { discoverSkills, discoveryHost, SKILL_HOSTS, type DiscoverResult } from "../../skills/discover.js";
import type { Skill } from "../../skills/index.js";
import { withInterrupt } from "../ui/interrupt.js";
import { routerOptions, routerOptionsHelp, withRouter } from "./common.js";
import type { Command } from "./types.js";

/** What a sync does, or would do with --dry-run. */
export interface SyncPlan {
  add: Skill[];
  update: Skill[];
  unchanged: string[];
  /** Installed skills of the host's folders that are gone from disk: id and recorded source. */
  remove: { id: string; name: string; source: string }[];
  /** Installed skills whose SKILL.md no longer parses: kept (fix the file, or uninstall by hand). */
  kept: { id: string; source: string; reason: string }[];
}

/** Compares what the folders hold with what the bank holds. */
export async function planSync(router: Router, found: DiscoverResult): Promise<SyncPlan> {
  const plan: SyncPlan = { add: [], update: [], unchanged: [], remove: [], kept: [] };
  const installed = new Map(router.list().map((s) => [s.id, s]));
  for (const skill of found.skills) {
    if (!installed.has(skill.id)) plan.add.push(skill);
    else if ((await router.get(skill.id)).contentHash !== skill.contentHash) plan.update.push(skill);
    else plan.unchanged.push(skill.id);
  }
  const roots = new Set(found.roots.map((r) => r.dir));
  const failed = new Map(found.failed.map((f) => [resolve(f.where), f.error.message]));
  const wanted = new Set(found.skills.map((s) => s.id));
  for (const s of installed.values()) {
    if (wanted.has(s.id)) continue;
    const loc = locateSkill(s.source, router.bankDir);
    if (loc.provenance.kind !== "folder" || !roots.has(resolve(loc.provenance.hostFolder))) continue; // not the host's: leave it
    const path = loc.path ?? resolve(s.source);
    const reason = failed.get(path);
    if (reason !== undefined) plan.kept.push({ id: s.id, source: path, reason });
    else plan.remove.push({ id: s.id, name: s.name, source: s.source });
  }
  return plan;
}

function printPlan(found: DiscoverResult, plan: SyncPlan, dryRun: boolean): void {
  for (const r of found.roots) console.log(`  ${r.exists ? `${String(r.skills).padStart(4)} skills` : "  (none)   "}  ${r.label}  ${r.dir}`);
  for (const w of found.warnings) console.log(`warning: ${w}`);
  for (const f of found.failed) console.log(`failed: ${f.where}: ${f.error.message}`);
  const verb = dryRun ? "would " : "";
  // the id, not the name: a plugin's skill is installed as plugin:skill
  for (const s of plan.add) console.log(`${verb}install ${s.id} (new)  ${s.source}`);
  for (const s of plan.update) console.log(`${verb}install ${s.id} (changed)  ${s.source}`);
  for (const s of plan.remove) console.log(`${verb}uninstall ${s.name} (deleted on disk)  ${s.source}`);
  for (const s of plan.kept) console.log(`kept ${s.id}: its SKILL.md no longer reads (${s.reason})`);
}

/** The summary line, or with --json the summary object. */
function report(host: string, dryRun: boolean, found: DiscoverResult, plan: SyncPlan, json: boolean): void {
  const summary = {
    host,
    dryRun,
    installed: plan.add.map((s) => s.id),
    updated: plan.update.map((s) => s.id),
    uninstalled: plan.remove.map((s) => s.id),
    unchanged: plan.unchanged.length,
    kept: plan.kept,
    shadowed: found.shadowed,
    failed: found.failed.map((f) => ({ where: f.where, error: f.error.message })),
  };
  if (json) {
    console.log(JSON.stringify(summary, null, 2));
    return;
  }
  const did = dryRun ? "would install" : "installed";
  console.log(
    `${dryRun ? "dry run: " : ""}${did} ${plan.add.length} new, ${plan.update.length} changed; ` +
      `${dryRun ? "would uninstall" : "uninstalled"} ${plan.remove.length}; unchanged ${plan.unchanged.length}` +
      (plan.add.length + plan.update.length + plan.remove.length === 0 ? " (nothing to do)" : ""),
  );
}

/** `gavel sync`. */
export const sync: Command = {
  summary: "install what is new or changed in the hosts' skill folders, uninstall what was deleted",
  help: `usage: gavel sync [options]
Reads the skill folders an agent host reads (project and user), resolves same-named skills by that
host's precedence (a warning names each shadowed one), installs what is new or changed (content hash)
and uninstalls what was deleted on disk. Skills installed from elsewhere are left alone.
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
  async run(args) {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: { ...routerOptions, host: { type: "string" }, project: { type: "string" }, "dry-run": { type: "boolean" } },
    });
    if (positionals.length !== 0) {
      console.error(this.help);
      return 2;
    }
    const host = discoveryHost(values.host);
    const dryRun = values["dry-run"] === true;
    // A dry run on a project without a bank yet: everything found would be installed, and neither
    // the model nor a bank is needed to say so (nothing is created).
    if (dryRun && !existsSync(join(resolve(bankDir(values.bank)), MANIFEST))) {
      return withInterrupt(async (signal) => {
        const found = await discoverSkills({ host, projectDir: values.project, signal });
        const plan: SyncPlan = { add: found.skills, update: [], unchanged: [], remove: [], kept: [] };
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
          let failedInstalls = 0;
          if (!dryRun) {
            const toInstall = [...plan.add, ...plan.update];
            if (toInstall.length > 0) {
              const report = await router.install(toInstall, { signal });
              failedInstalls = report.failed.length;
              for (const f of report.failed) console.error(`failed: ${f.where}: ${f.error.message}`);
            }
            for (const s of plan.remove) await router.uninstall(s.id);
          }
          report(host, dryRun, found, plan, values.json === true);
          return failedInstalls > 0 ? 1 : 0;
        },
        { create: !dryRun },
      ),
    );
  },
};
