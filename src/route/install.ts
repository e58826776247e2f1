/**
 * Installation (paper, section 3.3): each skill of a library costs one forward pass, and its ε-cover
 * keys join the bank. Skills are encoded several at a time and stored strictly in library order, the
 * bank is committed now and then, and the time of each stage is reported.
 *
 * @module
 */
import { GavelError, invalidArgument, optionError, type OptionNames } from "../errors.js";
import { throwIfAborted, intOption, optionsObject, signalOption } from "../util/validate.js";
import { inOrder, type Outcome } from "../util/in-order.js";
import { loadSkills, type Skill, type SkillInput } from "../skills/index.js";
import { StatesCache } from "../model/states-cache.js";
import { RenderEncoder } from "../render/encode.js";
import { encodeSkillKeys, type SkillKeys, type StageLap } from "./keys.js";
import type { RouterParts } from "./parts.js";
import { originWords, sameBuild, type BudgetBuild, type SkillOrigin } from "./budgets.js";
import { INSTALL_KEYS } from "./option-keys.js";
import { HUB_SHARE, hubWarning, probeBreadth } from "./probes.js";
import { COMMIT_INTERVAL_MS, type InstallOptions, type InstallProgress, type InstallReport, type InstallStages } from "./types.js";

/** {@link InstallOptions} checked, with their defaults. */
interface InstallSettings {
  signal?: AbortSignal;
  /** Commit every this many installed skills; undefined: every 10 s (`COMMIT_INTERVAL_MS`). */
  commitEvery?: number;
  /** Skills in flight at once. */
  inFlight: number;
  onProgress?: (p: InstallProgress) => void;
  offset?: number;
  limit?: number;
  /** The trainer's states cache root to read keyed rows from (InstallOptions.statesCache). */
  statesCache?: string;
  admit?: InstallOptions["admit"];
}

function installSettings(options: InstallOptions | undefined): InstallSettings {
  const o = optionsObject(options, "install options", INSTALL_KEYS) as InstallOptions;
  const signal = signalOption(o.signal);
  const commitEvery = o.commitEvery === undefined ? undefined : intOption(o.commitEvery, "commitEvery", 1, 1 << 20, 64);
  const inFlight = intOption(o.concurrency, "concurrency", 1, 256, 8);
  if (o.onProgress !== undefined && typeof o.onProgress !== "function") throw invalidArgument("onProgress must be a function");
  if (o.statesCache !== undefined && (typeof o.statesCache !== "string" || o.statesCache === "")) throw invalidArgument("statesCache must be a non-empty path");
  if (o.admit !== undefined && typeof o.admit !== "function") throw invalidArgument("admit must be a function");
  return { signal, commitEvery, inFlight, onProgress: o.onProgress, offset: o.offset, limit: o.limit, statesCache: o.statesCache, admit: o.admit };
}

/**
 * A render's budget overflow (a SKILL_INVALID refusing `skillBudget`) with the setting to raise: the
 * skill budget, named by where it came from (`origin`, RouterParts.skillOrigin; `ctx`, the context);
 * a default drawn from the context refuses `contextSize` first.
 */
function withBudgetRemedy(err: GavelError, origin: SkillOrigin, ctx: number): GavelError {
  const remedy = (n: OptionNames) => (origin === "skillBudget" ? `raise ${n("skillBudget")}` : origin === "context" ? `raise ${n("contextSize")} or give a larger ${n("skillBudget")}` : `give a larger ${n("skillBudget")}`);
  const option = origin === "context" ? "contextSize" : "skillBudget";
  return optionError((n) => `${err.message}; the skill budget is ${originWords(origin, ctx, n)}: ${remedy(n)}`, "SKILL_INVALID", option, { cause: err });
}

/** Whether `err` is a render's refusal of a skill that cannot fit the skill budget (render/encode.ts). */
function isBudgetOverflow(err: unknown): err is GavelError {
  return err instanceof GavelError && err.code === "SKILL_INVALID" && err.option === "skillBudget";
}

/** A skill whose content the bank already holds: nothing to compute. */
const UNCHANGED = Symbol("unchanged");

/** Seconds since `t` (a performance.now() reading). */
function secondsSince(t: number): number {
  return (performance.now() - t) / 1000;
}

/** One install run: its settings, its report so far, and when it last committed. */
class Installation {
  readonly report: InstallReport;
  readonly #parts: RouterParts;
  readonly #settings: InstallSettings;
  readonly #states: StatesCache | undefined;
  /**
   * Renders a skill at the key budget (within the context) when that exceeds the skill budget: the
   * keys of a skill whose body r(s) cut are read from this wider render, in one pass. Made per
   * install, so a router that never installs (serve, the hook) does not build it.
   */
  readonly #keyEncoder: RenderEncoder | undefined;
  readonly #total: number;
  /** The budgets this install builds keys with, recorded in each entry it writes. */
  readonly #build: BudgetBuild;
  #done = 0;
  #staged = 0;
  #lastCommit: number;

  /** `started`: when the install began (the commit interval counts from it). */
  constructor(parts: RouterParts, settings: InstallSettings, states: StatesCache | undefined, started: number, skills: readonly Skill[], failed: InstallReport["failed"]) {
    this.#parts = parts;
    this.#build = routerBuild(parts);
    const keyRender = Math.min(parts.keyBudget, parts.model.info.contextSize);
    this.#keyEncoder = keyRender > parts.encoder.skillBudget ? new RenderEncoder(parts.model, keyRender) : undefined;
    this.#states = states;
    this.#lastCommit = started;
    this.#settings = settings;
    this.#total = skills.length;
    const stages: InstallStages = { render: 0, forward: 0, project: 0, cover: 0, store: 0, commit: 0 };
    const warnings = skills.filter((s) => s.warnings.length > 0).map((s) => ({ id: s.id, name: s.name, warnings: [...s.warnings] }));
    this.report = { installed: [], unchanged: [], failed: [...failed], warnings, truncated: [], tokens: 0, keys: 0, rawKeys: 0, seconds: 0, stages };
  }

  #progress(skill: string, status: InstallProgress["status"]): void {
    this.#settings.onProgress?.({ done: ++this.#done, total: this.#total, skill, status });
  }

  /**
   * The skill's keys, or UNCHANGED when the bank holds this content already: its entry and keys, and
   * a stored text that reads back as this content (a lost or damaged text is written again).
   */
  async encode(skill: Skill): Promise<SkillKeys | typeof UNCHANGED> {
    const { library } = this.#parts;
    const built = library.store.get(skill.id)?.build;
    if (library.isCurrent(skill) && sameBuild(built, this.#build, this.#parts.defaultBudgets) && (await library.texts.get(skill.contentHash).then(() => true, () => false))) return UNCHANGED;
    let t = performance.now();
    const lap: StageLap = (stage) => {
      const now = performance.now();
      this.report.stages[stage] += (now - t) / 1000;
      t = now;
    };
    const { model, projections, encoder, keyBudget } = this.#parts;
    const keyEncoder = this.#keyEncoder;
    return encodeSkillKeys(model, projections, encoder, skill, { signal: this.#settings.signal, lap, states: this.#states, keyBudget, ...(keyEncoder ? { keyEncoder } : {}) });
  }

  /**
   * Takes one skill's outcome, in library order: stores its keys and text, or records it as unchanged
   * or failed. An abort or a closed model ends the install; any other error of the skill's encoding
   * or storing fails this skill only. Once it is stored, what follows (the caller's `onProgress`, a
   * due commit) is not the skill's: a throw there ends the install, the skill staying installed.
   */
  async settle(skill: Skill, outcome: Outcome<SkillKeys | typeof UNCHANGED>): Promise<void> {
    if (outcome.ok && outcome.value === UNCHANGED) {
      // The keys stand; the front matter the bank reports is brought up to the file's.
      await this.#parts.library.refreshMeta(skill);
      this.report.unchanged.push(skill.id);
      this.#progress(skill.id, "unchanged");
      return;
    }
    try {
      if (!outcome.ok) throw outcome.error;
      await this.#store(skill, outcome.value as SkillKeys);
    } catch (err) {
      if (err instanceof GavelError && (err.code === "ABORTED" || err.code === "DISPOSED")) throw err;
      const error = isBudgetOverflow(err) ? withBudgetRemedy(err, this.#parts.skillOrigin ?? "skillBudget", this.#parts.model.info.contextSize)
        : err instanceof GavelError ? err : new GavelError(`could not install: ${(err as Error).message}`, "SKILL_INVALID", { cause: err });
      this.report.failed.push({ where: skill.source, error });
      this.#progress(skill.id, "failed");
      return;
    }
    this.#staged++;
    this.#progress(skill.id, "installed");
    if (this.#commitDue()) await this.commit();
  }

  async #store(skill: Skill, enc: SkillKeys): Promise<void> {
    const { library } = this.#parts;
    const t = performance.now();
    const { keys, keyTokens, keyPositions, renderTokens, renderCut } = enc;
    // a replacement waits for the routes in flight: an abort meanwhile ends the install, this skill unwritten
    await library.save(skill, { keyTokens, keyPositions, renderTokens, renderCut, build: this.#build }, keys, this.#settings.signal);
    this.report.stages.store += secondsSince(t);
    library.track(skill.id, keys);
    const r = this.report;
    r.installed.push(skill.id);
    if (enc.truncated) r.truncated.push(skill.id);
    r.tokens += renderTokens;
    r.keys += keyTokens.length;
    r.rawKeys += enc.rawKeys;
  }

  /** Every `commitEvery` skills when set, else once 10 s (`COMMIT_INTERVAL_MS`) have passed. */
  #commitDue(): boolean {
    const { commitEvery } = this.#settings;
    return commitEvery !== undefined ? this.#staged % commitEvery === 0 : performance.now() - this.#lastCommit >= COMMIT_INTERVAL_MS;
  }

  /** Commits the bank, charging the time to the commit stage. */
  async commit(): Promise<void> {
    const t = performance.now();
    await this.#parts.library.commit();
    this.#lastCommit = performance.now();
    this.report.stages.commit += (this.#lastCommit - t) / 1000;
  }
}

/** The budgets a router builds its entries with (what it records as `BankEntry.build`). */
function routerBuild(parts: RouterParts): BudgetBuild {
  return { skillBudget: parts.encoder.skillBudget, keyBudget: parts.keyBudget, contextSize: parts.model.info.contextSize };
}

/**
 * Whether the installed skill `id` was built with budgets other than the router's (`BankEntry.build`,
 * {@link sameBuild}), so that installing it again builds it anew; false when it is not installed.
 */
export function builtOtherwise(parts: RouterParts, id: string): boolean {
  const entry = parts.library.store.get(id);
  return entry !== undefined && !sameBuild(entry.build, routerBuild(parts), parts.defaultBudgets);
}

/**
 * Installs skills (see {@link Router.install}). Up to `concurrency` skills are encoded at once: while
 * one skill's forward pass, projection and cover run natively, the next ones render (on the JS thread)
 * and tokenize (on libuv workers). Results are stored strictly in library order (unchanged skills
 * too), so the bank is the same as with one at a time.
 */
export async function installSkills(parts: RouterParts, source: string | readonly (Skill | SkillInput)[], options?: InstallOptions): Promise<InstallReport> {
  const settings = installSettings(options);
  const { signal } = settings;
  const t0 = performance.now();
  // Read-only: an install never writes the trainer's cache, and its misses are plain passes.
  const states = settings.statesCache === undefined ? undefined : await StatesCache.open(settings.statesCache, parts.model, parts.projections.layer, { readOnly: true });
  const loaded = await loadSkills(source, { offset: settings.offset, limit: settings.limit, signal });
  const { failed } = loaded;
  // asked here, in the install's turn of the write queue: no other write comes between it and the store
  const skills = settings.admit ? loaded.skills.filter((s) => settings.admit!(s, parts.library.store.get(s.id))) : loaded.skills;
  const run = new Installation(parts, settings, states, t0, skills, failed);
  const beforeEach = () => {
    throwIfAborted(signal, "Router.install");
  };
  try {
    await inOrder(skills, { width: settings.inFlight, beforeEach }, (s) => run.encode(s), (s, outcome) => run.settle(s, outcome));
    await flagHubs(parts, run.report, signal);
  } finally {
    // Whatever was encoded before an abort or a failure is kept.
    await run.commit();
  }
  if (states) run.report.statesCache = { hits: states.stats.hits, misses: states.stats.misses, present: states.present };
  run.report.seconds = secondsSince(t0);
  return run.report;
}

/**
 * The breadth probes (probes.ts) over the library after an install: each skill installed now that is
 * the top match of at least {@link HUB_SHARE} of the generic probe tasks gets a `hub:` warning, kept
 * in the bank and added to the report's warnings. A reinstall re-measures it (its old hub warning is
 * replaced).
 */
async function flagHubs(parts: RouterParts, report: InstallReport, signal?: AbortSignal): Promise<void> {
  const { library } = parts;
  // over a library that still holds damaged keys no route runs, and breadth would miss those skills
  if (report.installed.length === 0 || library.damaged().length > 0) return;
  const breadth = await probeBreadth(parts, signal);
  for (const id of report.installed) {
    const b = breadth.get(id);
    const entry = library.store.get(id);
    if (!entry || !b || b.share < HUB_SHARE) continue;
    const w = hubWarning(b, breadth.size);
    const kept = (entry.warnings ?? []).filter((x) => !x.startsWith("hub:"));
    await library.setWarnings(id, [...kept, w]);
    const rec = report.warnings.find((r) => r.id === id);
    if (rec) rec.warnings.push(w);
    else report.warnings.push({ id, name: entry.name, warnings: [w] });
  }
}
