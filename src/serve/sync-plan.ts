/**
 * `gavel sync`'s plan and its application, shared by the CLI (a bank it opens itself) and the
 * resident router (a `sync` request, writes.ts): what the hosts' skill folders hold
 * compared with what the bank holds, then the new and changed skills installed and the skills
 * deleted on disk uninstalled. Skills installed from anywhere else are left alone, even where a host
 * folder holds a skill of the same id (reported as a conflict).
 *
 * @module
 */
import { basename, dirname, join, resolve } from "node:path";
import { locateSkill, type Router } from "../route/index.js";
import type { InstallProgress, InstallReport } from "../route/index.js";
import type { DiscoverResult } from "../skills/discover.js";
import type { Skill } from "../skills/types.js";
import { pathInside, samePath } from "../util/same-path.js";

/** What a sync does, or would do with --dry-run. */
export interface SyncPlan {
  add: Skill[];
  /**
   * Skills whose content changed, whose SKILL.md moved (a plugin's new version), or whose entry was
   * built with other budgets than the router's (`--skill-budget`, `--key-budget`, the context;
   * `BankEntry.build`): installed again.
   */
  update: Skill[];
  unchanged: string[];
  /** Installed skills of the host's folders that are gone from disk: id and recorded source. */
  remove: { id: string; name: string; source: string }[];
  /** Installed skills whose SKILL.md no longer parses: kept (fix the file, or uninstall by hand). */
  kept: { id: string; source: string; reason: string }[];
  /**
   * Skills of the host's folders whose id is installed from elsewhere (a JSONL library, another
   * folder): the installed one is kept, the host's copy (`source`) not installed; `installed` is the
   * installed one's recorded source.
   */
  conflicts: { id: string; source: string; installed: string }[];
}

/** What the plan saw installed for each skill of its `update`: applySync installs it only over that. */
const planned = new WeakMap<Skill, { source: string; contentHash: string }>();

/** Compares what the folders hold with what the bank holds. */
export async function planSync(router: Router, found: DiscoverResult): Promise<SyncPlan> {
  const plan: SyncPlan = { add: [], update: [], unchanged: [], remove: [], kept: [], conflicts: [] };
  const installed = new Map(router.list().map((s) => [s.id, s]));
  const isHosts = hostFolders(found);
  const recorded = (source: string) => locateSkill(source, router.bankDir).path ?? resolve(source);
  for (const skill of found.skills) {
    const have = installed.get(skill.id);
    if (!have) plan.add.push(skill);
    else if (!isHosts(router, have.source)) {
      plan.conflicts.push({ id: skill.id, source: skill.source, installed: have.source }); // installed from elsewhere: left alone
    } else {
      const now = router.installedState(skill.id);
      const was = { source: have.source, contentHash: now?.contentHash ?? "" };
      // changed, moved (a plugin's new version: its source recorded again) or built with other budgets
      if (was.contentHash !== skill.contentHash || !samePath(recorded(have.source), skill.source) || now?.builtOtherwise !== false) {
        plan.update.push(skill);
        planned.set(skill, was);
      } else plan.unchanged.push(skill.id);
    }
  }
  const failed = new Map(found.failed.map((f) => [resolve(f.where), f.error.message]));
  const wanted = new Set(found.skills.map((s) => s.id));
  for (const s of installed.values()) {
    if (wanted.has(s.id) || !isHosts(router, s.source)) continue; // not the host's: leave it
    const path = recorded(s.source);
    // its SKILL.md, or the host folder it lies in, could not be read: not known to be gone
    const reason = failed.get(path) ?? [...failed].find(([where]) => pathInside(where, path) !== null)?.[1];
    if (reason !== undefined) plan.kept.push({ id: s.id, source: path, reason });
    else plan.remove.push({ id: s.id, name: s.name, source: s.source });
  }
  return plan;
}

/**
 * Whether an installed skill's recorded `source` is a SKILL.md in one of the host's folders that
 * `found` looked at, or in another version of a plugin found there: Claude Code keeps each version in
 * its own `<plugin>/<version>/skills/` folder, so an update moves a skill's source and deletes the old
 * version, with the skills it dropped. Only a plugin whose install path is such a version folder
 * (`SkillRoot.pluginVersions`) has other versions; a plugin installed from any other folder (its own
 * working copy, say) has only that folder, and skills from the folders beside it are not the host's.
 */
function hostFolders(found: DiscoverResult): (router: Router, source: string) => boolean {
  const roots = found.roots.map((r) => r.dir);
  const versions = found.roots.flatMap((r) => (r.pluginVersions !== undefined ? [r.pluginVersions] : []));
  return (router, source) => {
    const p = locateSkill(source, router.bankDir).provenance;
    if (p.kind !== "folder") return false;
    if (roots.some((r) => samePath(r, p.hostFolder))) return true;
    // <plugin>/<some version>/skills
    const version = basename(dirname(p.hostFolder));
    return versions.some((v) => samePath(join(v, version, "skills"), p.hostFolder));
  };
}

/**
 * Carries a plan out: the new and changed skills installed in one `Router.install`, then the skills
 * deleted on disk uninstalled. An abort stops it where `Router.install` stops (its committed skills
 * stay; nothing is uninstalled), as Ctrl-C does a local sync; one after the install, while the
 * uninstalls run, stops before the next uninstall (each one is whole or not done). The install's
 * report, or null when there was nothing to install.
 *
 * Each write does only what the plan saw, checked in its own turn of the router's write queue (a
 * resident router takes other clients' writes between the plan and them): a skill is installed only
 * when its id is still not installed (an add) or still installed from the source and content the plan
 * read (an update; or no longer installed), and uninstalled only while still installed from the
 * source the plan recorded. One installed meanwhile from elsewhere is left alone: it moves from
 * `add`/`update`/`remove` to `conflicts` (the plan, as returned, says what was done).
 */
export async function applySync(router: Router, plan: SyncPlan, options: { signal?: AbortSignal; onProgress?: (p: InstallProgress) => void } = {}): Promise<InstallReport | null> {
  const saw = new Map<string, { source: string; contentHash: string } | null>(plan.add.map((s) => [s.id, null]));
  for (const s of plan.update) saw.set(s.id, planned.get(s) ?? null);
  const skipped = new Map<string, string>(); // id → the installed one's source
  const admit = (skill: Skill, now: { source: string; contentHash: string } | undefined) => {
    const was = saw.get(skill.id);
    if (now === undefined || (was && now.source === was.source && now.contentHash === was.contentHash)) return true;
    skipped.set(skill.id, now.source);
    return false;
  };
  const toInstall = [...plan.add, ...plan.update];
  const report = toInstall.length > 0 ? await router.install(toInstall, { signal: options.signal, onProgress: options.onProgress, admit }) : null;
  const left = (s: Skill) => {
    const installed = skipped.get(s.id);
    if (installed !== undefined) plan.conflicts.push({ id: s.id, source: s.source, installed });
    return installed === undefined;
  };
  plan.add = plan.add.filter(left);
  plan.update = plan.update.filter(left);
  const removed: SyncPlan["remove"] = [];
  for (const s of plan.remove) {
    if (await router.uninstall(s.id, { signal: options.signal, ifSource: s.source })) removed.push(s);
    else {
      const now = router.installed(s.id); // installed again meanwhile (else uninstalled already: nothing to say)
      if (now) plan.conflicts.push({ id: s.id, source: s.source, installed: now.source });
    }
  }
  plan.remove = removed;
  return report;
}
