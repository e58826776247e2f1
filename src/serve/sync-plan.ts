/**
 * `gavel sync`'s plan and its application, shared by the CLI (a bank it opens itself) and the
 * resident router (a `sync` request, writes.ts): what the hosts' skill folders hold
 * compared with what the bank holds, then the new and changed skills installed and the skills
 * deleted on disk uninstalled. Skills installed from anywhere else are left alone.
 *
 * @module
 */
import { resolve } from "node:path";
import { locateSkill, type Router } from "../route/index.js";
import type { InstallProgress, InstallReport } from "../route/index.js";
import type { DiscoverResult } from "../skills/discover.js";
import type { Skill } from "../skills/types.js";

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

/**
 * Carries a plan out: the new and changed skills installed in one `Router.install`, then the skills
 * deleted on disk uninstalled. An abort stops it where `Router.install` stops (its committed skills
 * stay; nothing is uninstalled), as Ctrl-C does a local sync; one after the install, while the
 * uninstalls run, stops before the next uninstall (each one is whole or not done). The install's
 * report, or null when there was nothing to install.
 */
export async function applySync(router: Router, plan: SyncPlan, options: { signal?: AbortSignal; onProgress?: (p: InstallProgress) => void } = {}): Promise<InstallReport | null> {
  const toInstall = [...plan.add, ...plan.update];
  const report = toInstall.length > 0 ? await router.install(toInstall, { signal: options.signal, onProgress: options.onProgress }) : null;
  for (const s of plan.remove) await router.uninstall(s.id, { signal: options.signal });
  return report;
}
