/**
 * Skill folder watching for the resident router (`gavel serve --watch`, ServeOptions.watch): the
 * folders that hold installed skills (the roots), and every folder in them, are watched (fs.watch); a
 * change is synced into the bank as `gavel sync` would sync it: a SKILL.md whose content changed is
 * installed again, a folder in a root that gets a SKILL.md is installed (a plugin's as `plugin:skill`),
 * a skill whose SKILL.md was deleted is uninstalled (its root still watched, so one copied back is
 * installed again), a skill folder renamed stays installed from its new folder. Skills installed from
 * a JSONL library or an array are not watched. Every root is synced once at start, so what changed
 * while nothing watched is synced then.
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
import { basename, dirname, join, relative, sep } from "node:path";
import type { LibraryState } from "../bank/library.js";
import { MESSAGE_CHARS, clip, messageNaming, type OptionNames } from "../errors.js";
import { skillFileOf, type Router } from "../route/index.js";
import { discoveredSkillId, skillRoots, type DiscoverOptions } from "../skills/discover.js";
import type { Skill } from "../skills/types.js";
import { samePath } from "../util/same-path.js";
import { checkInt } from "../util/validate.js";
import { folderIdentity, foldersIn, foldersInAsync, nearestFolder, readAhead, type ReadAhead } from "./watch-fs.js";
import { readSkillFolders, SKILL_FILE, type WatchSync } from "./watch-read.js";

/** Options of {@link SkillWatcher}. */
export interface WatchOptions {
  /** Quiet time after the last event before a sync runs, in ms (default 500). */
  debounceMs?: number;
  /** Longest a sync waits after the first event of a burst that never goes quiet, in ms (default 5000). */
  maxWaitMs?: number;
  /**
   * Most folders watched (default 4096), the roots first, then the skills' folders, then the roots'
   * other folders; past it, those beyond are not watched (a line says so, again each time the folders
   * outgrow it after having fitted).
   */
  maxFolders?: number;
}

export type { WatchSync } from "./watch-read.js";

/** Folders a rearm read ahead starts watching before it gives the event loop back (about 7 ms of `fs.watch` on Linux). */
const ARM_SLICE = 256;

/**
 * The watcher's options with their defaults, checked: each an integer from 0 to 2^31 − 1 (the times
 * end in timers, which take no more), else INVALID_ARGUMENT naming it.
 */
export function checkWatchOptions(options: WatchOptions): Required<WatchOptions> {
  const int = (v: number | undefined, name: string, dflt: number) => (v === undefined ? dflt : checkInt(v, name, 0));
  return { debounceMs: int(options.debounceMs, "debounceMs", 500), maxWaitMs: int(options.maxWaitMs, "maxWaitMs", 5000), maxFolders: int(options.maxFolders, "maxFolders", 4096) };
}

/** A watched folder: its watcher, and which folder it is (device and inode, to see it replaced). */
interface Watched {
  watcher: FSWatcher;
  identity: string;
}

/**
 * Watches the skill folders of a router and syncs what changes. The folders holding installed skills
 * (the roots) stay watched after their skills are uninstalled here; a root that is gone is watched
 * through its nearest folder that exists, until it comes back. Every folder in a root is watched,
 * a skill's or not yet one, so a SKILL.md written into a new folder later is seen.
 */
export class SkillWatcher {
  readonly #router: Router;
  readonly #report: (s: WatchSync) => void;
  readonly #warn: (text: string) => void;
  readonly #debounceMs: number;
  readonly #maxWaitMs: number;
  readonly #maxFolders: number;
  /** Where plugin skills are found (a new skill in a plugin's folder gets its `plugin:skill` id). */
  readonly #discover: Pick<DiscoverOptions, "home" | "projectDir">;
  /** Watched folders: roots (or the folders standing in for missing ones) and the folders in them. */
  readonly #watchers = new Map<string, Watched>();
  /** The roots: folders holding installed skills, and those whose skills were uninstalled here. */
  #roots = new Set<string>();
  readonly #formerRoots = new Set<string>();
  /** Folders watched for missing roots below them: the roots each stands for. */
  #standIns = new Map<string, string[]>();
  /** Folders with an event since the last sync, and roots to sync whole. */
  #dirty = new Set<string>();
  #rescans = new Set<string>();
  /** {@link #installed}'s last answer, and the router's list state it was worked out at. */
  #installedAt: { state: LibraryState; map: ReadonlyMap<string, { id: string; source: string }> } | null = null;
  #timer: NodeJS.Timeout | null = null;
  #firstEvent = 0;
  #running: Promise<void> | null = null;
  #closed = false;
  readonly #abort = new AbortController();
  #warnedCap = false;
  readonly #names: OptionNames;
  /** True until the first arm is done ({@link started}): no sync is scheduled before it. */
  #starting = true;
  /** The rearms read ahead, one after another (each gives the event loop back between slices of watches). */
  #rearms: Promise<void> = Promise.resolve();

  /**
   * Resolves once the watcher watches its folders: the roots' folders and the folders' identities
   * read off the thread, the watches set up {@link ARM_SLICE} at a time, then the start sync of every
   * root scheduled. It never rejects (a folder that cannot be watched is left unwatched, as later).
   */
  readonly started: Promise<void>;

  /**
   * @param report each sync that did anything
   * @param warn a line about a folder that cannot be watched or a sync that failed
   * @param discover the home and project whose Claude Code plugins are read (default: `os.homedir()`, the current folder)
   * @param optionNames how failures name the router's options (default: the API's names; `gavel serve`: its flags)
   */
  constructor(router: Router, options: WatchOptions & { report?: (s: WatchSync) => void; warn?: (text: string) => void; discover?: Pick<DiscoverOptions, "home" | "projectDir">; optionNames?: OptionNames } = {}) {
    this.#router = router;
    this.#report = options.report ?? (() => undefined);
    this.#warn = options.warn ?? (() => undefined);
    const o = checkWatchOptions(options);
    this.#debounceMs = o.debounceMs;
    this.#maxWaitMs = Math.max(o.debounceMs, o.maxWaitMs);
    this.#maxFolders = o.maxFolders;
    this.#discover = options.discover ?? {};
    this.#names = options.optionNames ?? ((o) => o);
    const first = this.#rearmAhead(false).catch((err: unknown) => {
      if (!this.#closed) this.#warn(`watching the skill folders failed: ${clip(messageNaming(err as Error, this.#names), MESSAGE_CHARS)}`);
    });
    this.started = first.then(() => {
      this.#starting = false;
      // one sync of every root at start, as `gavel sync` would: what changed while nothing watched
      // (an edit, a new or deleted skill, an entry built with other budgets) is not left for its
      // folder's next event (and events seen during the start are synced with it)
      for (const root of this.#roots) this.#mark(root, true);
      if (this.#dirty.size > 0) this.#schedule();
    });
  }

  /** Folders watched now. */
  get folders(): string[] {
    return [...this.#watchers.keys()];
  }

  /**
   * The installed folder skills: the folder of each SKILL.md (absolute) and the skill. Worked out
   * again only once a skill was installed or uninstalled since (by anyone: the router's list state).
   */
  #installed(): ReadonlyMap<string, { id: string; source: string }> {
    const state = this.#router.listState();
    const had = this.#installedAt;
    if (had && had.state.store === state.store && had.state.entries === state.entries) return had.map;
    const m = new Map<string, { id: string; source: string }>();
    const bankDir = this.#router.bankDir;
    for (const s of this.#router.list()) {
      // no stat of an absolute source: a pass over every installed skill
      const file = skillFileOf(s.source, bankDir);
      if (file === null || basename(file) !== SKILL_FILE) continue;
      m.set(dirname(file), { id: s.id, source: s.source });
    }
    this.#installedAt = { state, map: m };
    return m;
  }

  /**
   * Watches the roots of the skills installed now and the folders in them; stops watching the others.
   * On the thread, all at once; before {@link started} resolves, it runs once the start is done.
   */
  refresh(): void {
    if (!this.#starting) return this.#rearm(false);
    this.started.then(() => this.#rearm(false)).catch((err: unknown) => this.#warn(`watching the skill folders again failed: ${clip(messageNaming(err as Error, this.#names), MESSAGE_CHARS)}`));
  }

  /**
   * {@link refresh}, with what it reads of the file system (each watched folder's identity, each root's
   * folders, each new folder's identity) read off the thread first and the new watches set up a slice
   * at a time: what a server runs after each write it answers.
   */
  async refreshAhead(): Promise<void> {
    await this.#rearmAhead(false);
  }

  /** {@link #rearm} after {@link readAhead}, in slices; one at a time. */
  #rearmAhead(recheck: boolean): Promise<void> {
    const run = this.#rearms.then(() => this.#rearmAheadNow(recheck));
    this.#rearms = run.catch(() => undefined);
    return run;
  }

  async #rearmAheadNow(recheck: boolean): Promise<void> {
    if (this.#closed) return;
    const ahead = await readAhead(this.#watchers.keys(), this.#rootsOf(this.#installed()));
    if (this.#closed) return;
    // the folders to be watched anew: their identities read off the thread too
    const want = this.#wanted(this.#installed(), ahead);
    const fresh = [...want].filter((d) => !this.#watchers.has(d)).slice(0, this.#maxFolders);
    for (const [dir, id] of (await readAhead(fresh, [])).identity) ahead.identity.set(dir, id);
    if (this.#closed) return;
    const steps = this.#rearmSteps(recheck, ahead, want);
    while (!steps.next().done) {
      await new Promise((resolve) => setImmediate(resolve)); // the event loop given back between slices
      if (this.#closed) return;
    }
  }

  /** The roots: the folders holding the installed skills, and those whose skills were uninstalled here. */
  #rootsOf(installed: ReadonlyMap<string, { id: string; source: string }>): Set<string> {
    return new Set([...[...installed.keys()].map((d) => dirname(d)), ...this.#formerRoots]);
  }

  /** The folders to watch, most needed first: the roots (or their stand-ins), the skills' folders, the roots' other folders. */
  #wanted(installed: ReadonlyMap<string, { id: string; source: string }>, ahead?: ReadAhead): Set<string> {
    this.#roots = this.#rootsOf(installed);
    this.#standIns = new Map();
    const want = new Set<string>();
    for (const root of this.#roots) {
      const at = nearestFolder(root);
      if (at === null) continue;
      want.add(at);
      if (at !== root) this.#standIns.set(at, [...(this.#standIns.get(at) ?? []), root]);
    }
    for (const dir of installed.keys()) want.add(dir);
    for (const root of this.#roots) for (const dir of ahead?.folders.get(root) ?? foldersIn(root)) want.add(dir);
    return want;
  }

  /**
   * Watches the wanted folders; a folder replaced since it was watched (deleted and made again) is
   * watched anew. At most `maxFolders` are watched, the most needed first: past the cap a root or a
   * skill's folder takes the place of a folder watched before that is neither (its watch is closed),
   * and a line says so once, again after all have fitted and then no longer do. After a sync
   * (`recheck`), each folder newly watched is synced too: what was written into it between the sync's
   * reading and its watch is not missed. `ahead`: the folders' identities and the roots' folders,
   * read off the thread just before ({@link readAhead}); what it lacks is read here.
   */
  #rearm(recheck: boolean, ahead?: ReadAhead): void {
    const steps = this.#rearmSteps(recheck, ahead);
    while (!steps.next().done); // every slice at once
  }

  /**
   * {@link #rearm}'s work, pausing after each {@link ARM_SLICE} folders newly watched (and stopping once
   * closed); `want`: the folders to watch, when worked out just before.
   */
  *#rearmSteps(recheck: boolean, ahead?: ReadAhead, want?: Set<string>): Generator<void, void, void> {
    if (this.#closed) return;
    const identity = (dir: string) => (ahead?.identity.has(dir) ? ahead.identity.get(dir)! : folderIdentity(dir));
    want ??= this.#wanted(this.#installed(), ahead);
    for (const [dir, w] of this.#watchers) {
      if (want.has(dir) && identity(dir) === w.identity) continue;
      w.watcher.close();
      this.#watchers.delete(dir);
    }
    const placed = new Set<string>();
    let over = false;
    let armed = 0;
    for (const dir of want) {
      if (placed.size >= this.#maxFolders) {
        over = true;
        break;
      }
      if (this.#watchers.has(dir)) placed.add(dir);
      else if (this.#arm(dir, identity(dir))) {
        placed.add(dir);
        if (recheck) this.#onEvent(dir, null);
        if (++armed % ARM_SLICE === 0) {
          yield;
          if (this.#closed) return;
        }
      }
    }
    if (!over) {
      this.#warnedCap = false;
      return;
    }
    for (const [dir, w] of this.#watchers) {
      if (placed.has(dir)) continue;
      w.watcher.close(); // less needed than those placed: its place goes to them
      this.#watchers.delete(dir);
    }
    if (!this.#warnedCap) this.#warn(`watching ${this.#maxFolders} folders, the most it watches; later skills' folders are not watched (gavel sync syncs them)`);
    this.#warnedCap = true;
  }

  /** Starts watching `dir` (`identity`: {@link folderIdentity}'s); false when it cannot be (gone since, not a folder, or not watchable: its skills are not watched). */
  #arm(dir: string, identity: string | null): boolean {
    if (identity === null) return false; // a file (or gone): a watch of it would be dropped and made again at every sync
    try {
      const w = watch(dir, { persistent: false }, (_event, name) => this.#onEvent(dir, name === null ? null : String(name)));
      // a folder deleted (or its watch lost) stops being watched; the event before it marked it dirty
      w.on("error", () => {
        w.close();
        if (this.#watchers.get(dir)?.watcher === w) this.#watchers.delete(dir);
        this.#mark(dir);
      });
      this.#watchers.set(dir, { watcher: w, identity });
      return true;
    } catch {
      return false;
    }
  }

  /**
   * An event (`name` null: of unknown entries) in a watched folder: in a root, the entry named (the
   * whole root when unnamed); in a folder of a root, that folder; in a stand-in, each missing root
   * below the entry named.
   */
  #onEvent(dir: string, name: string | null): void {
    if (this.#roots.has(dir)) {
      if (name) this.#mark(join(dir, name));
      else this.#mark(dir, true);
    }
    if (this.#roots.has(dirname(dir))) this.#mark(dir);
    for (const root of this.#standIns.get(dir) ?? []) {
      if (name === null || relative(dir, root).split(sep)[0] === name) this.#mark(root, true);
    }
  }

  /** Marks a folder (or, `whole`, every folder of a root) to sync, and schedules the sync. */
  #mark(dir: string, whole = false): void {
    if (this.#closed) return;
    if (this.#dirty.size + this.#rescans.size === 0) this.#firstEvent = Date.now();
    (whole ? this.#rescans : this.#dirty).add(dir);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#running || this.#starting) return; // the sync running now (or the start) schedules the next when it ends
    const wait = Math.max(0, Math.min(this.#debounceMs, this.#firstEvent + this.#maxWaitMs - Date.now()));
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#running = this.#syncDirty().finally(() => {
        this.#running = null;
        if (this.#dirty.size + this.#rescans.size > 0 && !this.#closed) this.#schedule();
      });
    }, wait);
    this.#timer.unref();
  }

  /** Waits until no sync runs or is scheduled (for tests and shutdown). */
  async idle(): Promise<void> {
    await this.started;
    while (this.#running || this.#timer) await (this.#running ?? new Promise((r) => setTimeout(r, 20)));
  }

  async #syncDirty(): Promise<void> {
    const dirs = [...this.#dirty];
    this.#dirty = new Set();
    if (this.#rescans.size > 0) {
      // a root synced whole: the folders in it now, and its installed skills' (gone ones are uninstalled)
      const installed = [...this.#installed().keys()];
      const rescans = [...this.#rescans];
      this.#rescans = new Set();
      for (const root of rescans) dirs.push(...(await foldersInAsync(root)), ...installed.filter((d) => dirname(d) === root));
    }
    try {
      const done = await this.syncFolders(dirs);
      const wrote = done.installed.length + done.updated.length + done.uninstalled.length > 0;
      if (wrote || done.kept.length > 0 || done.failed.length > 0) this.#report(done);
    } catch (err) {
      if (!this.#closed) this.#warn(`a sync of ${dirs.length} changed folder${dirs.length === 1 ? "" : "s"} failed: ${clip(messageNaming(err as Error, this.#names), MESSAGE_CHARS)}`);
    } finally {
      // the folders to watch again, read off the thread first (a stat per watched folder, a listing per root)
      await this.#rearmAhead(true);
    }
  }

  /**
   * Syncs these folders into the bank now (what a burst of events leads to): each that holds a
   * SKILL.md is installed when new or changed, each installed skill whose SKILL.md is gone is
   * uninstalled. A new folder holding a skill uninstalled in the same sync (a folder renamed) takes
   * its place: the skill stays installed, from its new folder. One `Router.install` for all that changed.
   * Each install and uninstall is done only over what this sync read installed (checked in its turn
   * of the router's write queue): a skill another client installed meanwhile is left alone (kept).
   */
  async syncFolders(dirs: readonly string[]): Promise<WatchSync> {
    const out: WatchSync = { installed: [], updated: [], uninstalled: [], kept: [], failed: [] };
    const installed = this.#installed();
    const { changed, fresh, gone, saw } = await readSkillFolders(this.#router, dirs, installed, out, this.#abort.signal);
    const toInstall = [...changed];
    out.updated.push(...changed.map((s) => s.id));
    const ids = new Map([...installed].map(([dir, s]) => [s.id, dir]));
    const roots = fresh.length > 0 ? skillRoots(this.#discover) : []; // the plugin registry and settings, read once
    for (const { skill, dir } of fresh) {
      skill.id = discoveredSkillId(dir, skill.name, roots); // a plugin's skill: plugin:skill, as gavel sync installs it
      const was = ids.get(skill.id);
      if (gone.delete(skill.id) || (was !== undefined && samePath(was, dir))) {
        saw.set(skill.id, { source: installed.get(was!)!.source });
        toInstall.push(skill); // moved here (renamed, or its name's case changed): its source recorded anew
        out.updated.push(skill.id);
      } else if (this.#router.installed(skill.id) !== undefined) {
        out.kept.push({ id: skill.id, reason: `${join(dir, SKILL_FILE)} is a new skill named as an installed one from elsewhere; not installed (gavel install it by hand)` });
      } else {
        toInstall.push(skill);
        out.installed.push(skill.id);
      }
    }
    const skipped = new Set<string>();
    const admit = (skill: Skill, now: { source: string; contentHash: string } | undefined) => {
      const was = saw.get(skill.id);
      if (now === undefined || (was && now.source === was.source && (was.contentHash ?? now.contentHash) === now.contentHash)) return true;
      skipped.add(skill.id);
      out.kept.push({ id: skill.id, reason: `installed from ${clip(now.source)} meanwhile; ${skill.source} not installed over it` });
      return false;
    };
    if (toInstall.length > 0) {
      const report = await this.#router.install(toInstall, { signal: this.#abort.signal, admit });
      const failed = new Set(report.failed.map((f) => f.where));
      for (const f of report.failed) out.failed.push({ where: f.where, message: messageNaming(f.error, this.#names) });
      const ok = (id: string) => !skipped.has(id) && !toInstall.some((s) => s.id === id && failed.has(s.source));
      out.installed = out.installed.filter(ok);
      out.updated = out.updated.filter(ok);
    }
    for (const [id, dir] of gone) {
      this.#formerRoots.add(dirname(dir)); // its root stays watched: a skill copied back is installed again
      // only the one read installed from this folder (not one installed from elsewhere meanwhile)
      const source = installed.get(dir)!.source;
      if (await this.#router.uninstall(id, { ifSource: source })) out.uninstalled.push(id);
      else out.kept.push({ id, reason: `installed again meanwhile (not from ${clip(source)}); not uninstalled` });
    }
    return out;
  }

  /** Stops watching; a sync running now is aborted (what it committed stays) and waited for. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    for (const w of this.#watchers.values()) w.watcher.close();
    this.#watchers.clear();
    this.#abort.abort();
    await this.#running?.catch(() => undefined);
    await this.#rearms;
  }
}

/** What a server hears from its watcher: a sync that did anything, or a line of trouble. */
export type WatchEvent = { sync: WatchSync } | { warning: string };

/** The watcher of a server: `watch` as ServeOptions gives it, its events to `on`. */
export function watcherFor(router: Router, watch: true | WatchOptions, on: ((e: WatchEvent) => void) | undefined, optionNames?: OptionNames): SkillWatcher {
  return new SkillWatcher(router, { ...(typeof watch === "object" ? watch : {}), report: (sync) => on?.({ sync }), warn: (warning) => on?.({ warning }), optionNames });
}
