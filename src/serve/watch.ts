/**
 * Skill folder watching for the resident router (`gavel serve --watch`, ServeOptions.watch): the
 * installed skills' folders, and the folders that hold them, are watched (fs.watch); a change is
 * synced into the bank as `gavel sync` would sync it: a SKILL.md whose content changed is installed
 * again, a new skill folder beside watched ones is installed, a skill whose SKILL.md was deleted is
 * uninstalled. Skills installed from a JSONL library or an array are not watched.
 *
 * Events are debounced: a burst of edits (an editor's save, a `git checkout`) becomes one sync, run
 * `debounceMs` after the last event (and at most `maxWaitMs` after the first). Syncs run one at a
 * time; events during one are synced after it. Every SKILL.md is read with the bounded regular-file
 * reader (util/regular-file.ts): a file replaced by a FIFO, a device or a huge file is refused before
 * a byte is read and the installed skill is kept as it was (reported), so nothing can wedge the server.
 *
 * @module
 */
import { watch, type FSWatcher } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { MESSAGE_CHARS, clip } from "../errors.js";
import { locateSkill, type Router } from "../route/index.js";
import { MAX_SOURCE_BYTES } from "../route/skill-source.js";
import { parseSkillMarkdown } from "../skills/parse.js";
import type { Skill } from "../skills/types.js";
import { readRegularFile, RegularFileError } from "../util/regular-file.js";
import { checkInt } from "../util/validate.js";

/** Options of {@link SkillWatcher}. */
export interface WatchOptions {
  /** Quiet time after the last event before a sync runs, in ms (default 500). */
  debounceMs?: number;
  /** Longest a sync waits after the first event of a burst that never goes quiet, in ms (default 5000). */
  maxWaitMs?: number;
  /** Most folders watched (default 4096); past it, the skills beyond are not watched (reported once). */
  maxFolders?: number;
}

/** What one sync of the watcher did. */
export interface WatchSync {
  installed: string[];
  updated: string[];
  uninstalled: string[];
  /** Skills left as installed, and why (their SKILL.md is unreadable, not a regular file, too large, or no longer parses). */
  kept: { id: string; reason: string }[];
  failed: { where: string; message: string }[];
}

const SKILL_FILE = "SKILL.md";

/**
 * The watcher's options with their defaults, checked: each an integer from 0 to 2^31 − 1 (the times
 * end in timers, which take no more), else INVALID_ARGUMENT naming it.
 */
export function checkWatchOptions(options: WatchOptions): Required<WatchOptions> {
  const int = (v: number | undefined, name: string, dflt: number) => (v === undefined ? dflt : checkInt(v, name, 0));
  return { debounceMs: int(options.debounceMs, "debounceMs", 500), maxWaitMs: int(options.maxWaitMs, "maxWaitMs", 5000), maxFolders: int(options.maxFolders, "maxFolders", 4096) };
}

/** Watches the installed skills' folders of a router and syncs what changes. */
export class SkillWatcher {
  readonly #router: Router;
  readonly #report: (s: WatchSync) => void;
  readonly #warn: (text: string) => void;
  readonly #debounceMs: number;
  readonly #maxWaitMs: number;
  readonly #maxFolders: number;
  /** Watched folders: skill folders and the folders holding them. */
  readonly #watchers = new Map<string, FSWatcher>();
  /** Folders with an event since the last sync. */
  #dirty = new Set<string>();
  #timer: NodeJS.Timeout | null = null;
  #firstEvent = 0;
  #running: Promise<void> | null = null;
  #closed = false;
  readonly #abort = new AbortController();
  #warnedCap = false;

  /**
   * @param report each sync that did anything
   * @param warn a line about a folder that cannot be watched or a sync that failed
   */
  constructor(router: Router, options: WatchOptions & { report?: (s: WatchSync) => void; warn?: (text: string) => void } = {}) {
    this.#router = router;
    this.#report = options.report ?? (() => undefined);
    this.#warn = options.warn ?? (() => undefined);
    const o = checkWatchOptions(options);
    this.#debounceMs = o.debounceMs;
    this.#maxWaitMs = Math.max(o.debounceMs, o.maxWaitMs);
    this.#maxFolders = o.maxFolders;
    this.refresh();
  }

  /** Folders watched now. */
  get folders(): string[] {
    return [...this.#watchers.keys()];
  }

  /** The installed folder skills: the folder of each SKILL.md (absolute) and the skill. */
  #installed(): Map<string, { id: string }> {
    const m = new Map<string, { id: string }>();
    for (const s of this.#router.list()) {
      const loc = locateSkill(s.source, this.#router.bankDir);
      if (loc.provenance.kind !== "folder") continue;
      const file = loc.path ?? resolve(s.source);
      if (basename(file) !== SKILL_FILE) continue;
      m.set(dirname(file), { id: s.id });
    }
    return m;
  }

  /** Watches the folders of the skills installed now (and their parents); stops watching the others. */
  refresh(): void {
    if (this.#closed) return;
    const want = new Set<string>();
    for (const dir of this.#installed().keys()) {
      want.add(dir);
      want.add(dirname(dir));
    }
    for (const [dir, w] of this.#watchers) {
      if (!want.has(dir)) {
        w.close();
        this.#watchers.delete(dir);
      }
    }
    for (const dir of want) {
      if (this.#watchers.has(dir)) continue;
      if (this.#watchers.size >= this.#maxFolders) {
        if (!this.#warnedCap) this.#warn(`watching ${this.#maxFolders} folders, the most it watches; later skills' folders are not watched (gavel sync syncs them)`);
        this.#warnedCap = true;
        break;
      }
      try {
        const w = watch(dir, { persistent: false }, (_event, name) => this.#onEvent(dir, name === null ? null : String(name)));
        // a folder deleted (or its watch lost) stops being watched; the event before it marked it dirty
        w.on("error", () => {
          w.close();
          if (this.#watchers.get(dir) === w) this.#watchers.delete(dir);
          this.#mark(dir);
        });
        this.#watchers.set(dir, w);
      } catch {
        // a folder gone since it was installed, or not watchable: its skill is not watched
      }
    }
  }

  #onEvent(dir: string, name: string | null): void {
    // an event in a skill's folder: that skill; in a folder holding skills: the entry named
    if (this.#isSkillFolder(dir)) this.#mark(dir);
    else if (name) this.#mark(join(dir, name));
  }

  #skillFolders: Set<string> | null = null;
  #isSkillFolder(dir: string): boolean {
    this.#skillFolders ??= new Set(this.#installed().keys());
    return this.#skillFolders.has(dir);
  }

  #mark(dir: string): void {
    if (this.#closed) return;
    if (this.#dirty.size === 0) this.#firstEvent = Date.now();
    this.#dirty.add(dir);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#running) return; // the sync running now schedules the next when it ends
    const wait = Math.max(0, Math.min(this.#debounceMs, this.#firstEvent + this.#maxWaitMs - Date.now()));
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#running = this.#syncDirty().finally(() => {
        this.#running = null;
        if (this.#dirty.size > 0 && !this.#closed) this.#schedule();
      });
    }, wait);
    this.#timer.unref();
  }

  /** Waits until no sync runs or is scheduled (for tests and shutdown). */
  async idle(): Promise<void> {
    while (this.#running || this.#timer) await (this.#running ?? new Promise((r) => setTimeout(r, 20)));
  }

  async #syncDirty(): Promise<void> {
    const dirs = [...this.#dirty];
    this.#dirty = new Set();
    try {
      const done = await this.syncFolders(dirs);
      const wrote = done.installed.length + done.updated.length + done.uninstalled.length > 0;
      if (wrote || done.kept.length > 0 || done.failed.length > 0) this.#report(done);
    } catch (err) {
      if (!this.#closed) this.#warn(`a sync of ${dirs.length} changed folder${dirs.length === 1 ? "" : "s"} failed: ${clip((err as Error).message, MESSAGE_CHARS)}`);
    } finally {
      this.#skillFolders = null;
      this.refresh();
    }
  }

  /**
   * Syncs these folders into the bank now (what a burst of events leads to): each that holds a
   * SKILL.md is installed when new or changed, each installed skill whose SKILL.md is gone is
   * uninstalled. One `Router.install` for all that changed.
   */
  async syncFolders(dirs: readonly string[]): Promise<WatchSync> {
    const out: WatchSync = { installed: [], updated: [], uninstalled: [], kept: [], failed: [] };
    const installed = this.#installed();
    const ids = new Set(this.#router.list().map((s) => s.id));
    const toInstall: Skill[] = [];
    const gone: string[] = [];
    for (const dir of new Set(dirs)) {
      const known = installed.get(dir);
      const file = join(dir, SKILL_FILE);
      let skill: Skill;
      try {
        const bytes = await readRegularFile(file, MAX_SOURCE_BYTES);
        skill = parseSkillMarkdown(bytes, file, { folderName: basename(dir) });
      } catch (err) {
        if (err instanceof RegularFileError && err.reason === "missing") {
          if (known) gone.push(known.id);
        } else if (known) out.kept.push({ id: known.id, reason: err instanceof Error ? err.message : String(err) });
        continue; // not a skill folder (a file beside the skills, a folder without SKILL.md): nothing to do
      }
      if (known) {
        skill.id = known.id; // a plugin's skill keeps its plugin:skill id
        if (skill.contentHash === (await this.#router.get(known.id)).contentHash) continue;
        toInstall.push(skill);
        out.updated.push(skill.id);
      } else if (ids.has(skill.id)) {
        out.kept.push({ id: skill.id, reason: `${file} is a new skill named as an installed one from elsewhere; not installed (gavel install it by hand)` });
      } else {
        toInstall.push(skill);
        out.installed.push(skill.id);
      }
    }
    if (toInstall.length > 0) {
      const report = await this.#router.install(toInstall, { signal: this.#abort.signal });
      const failed = new Set(report.failed.map((f) => f.where));
      for (const f of report.failed) out.failed.push({ where: f.where, message: f.error.message });
      const ok = (id: string) => !toInstall.some((s) => s.id === id && failed.has(s.source));
      out.installed = out.installed.filter(ok);
      out.updated = out.updated.filter(ok);
    }
    for (const id of gone) if (await this.#router.uninstall(id)) out.uninstalled.push(id);
    return out;
  }

  /** Stops watching; a sync running now is aborted (what it committed stays) and waited for. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    for (const w of this.#watchers.values()) w.close();
    this.#watchers.clear();
    this.#abort.abort();
    await this.#running?.catch(() => undefined);
  }
}

/** What a server hears from its watcher: a sync that did anything, or a line of trouble. */
export type WatchEvent = { sync: WatchSync } | { warning: string };

/** The watcher of a server: `watch` as ServeOptions gives it, its events to `on`. */
export function watcherFor(router: Router, watch: true | WatchOptions, on: ((e: WatchEvent) => void) | undefined): SkillWatcher {
  return new SkillWatcher(router, { ...(typeof watch === "object" ? watch : {}), report: (sync) => on?.({ sync }), warn: (warning) => on?.({ warning }) });
}
