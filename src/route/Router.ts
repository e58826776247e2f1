/**
 * The router: GAVEL over one frozen model (paper, section 3). A skill costs one forward pass at
 * installation; a task is ranked against the whole library by the glance, the shortlist gets a
 * verdict under the model's full attention, and a product of experts rules.
 *
 * `Router` only checks options, orders the stages and owns the bank's lifecycle; each stage lives in
 * its own module: install.ts and keys.ts (installation), context.ts (the task's queries), glance.ts,
 * verdict.ts, ruling.ts and explain.ts.
 */
import { GavelError, invalidArgument, clip } from "../errors.js";
import type { Model } from "../model/Model.js";
import { abortable, abortedError, boolOption, describeValue, intOption, optionsObject, signalOption, afterTurn, throwIfAborted } from "../util/validate.js";
import type { Skill, SkillInput } from "../skills/index.js";
import { RenderEncoder, type TaskKeep } from "../render/encode.js";
import { modelFingerprint } from "../model/fingerprint.js";
import { Projections } from "../projections/projections.js";
import { Library, type LibraryState } from "../bank/library.js";
import { config } from "../config.js";
import { encodeQueries, pasteOf, taskTextOf } from "./context.js";
import { glanceIndexOf, prunes, readsKeyIvf, refreshKeyIvf, warmKeyIvf, type KeyIvfWarm } from "./glance-index-use.js";
import { glanceLibrary, type Glanced } from "./glance.js";
import { routeGlances, type GlanceVia } from "./glance-many.js";
import { judge, verdictInputsOf, type Shortlisted, type VerdictInputs } from "./verdict.js";
import { checkFiniteReadouts, rule } from "./ruling.js";
import { LexicalExpert } from "./lexical-expert.js";
import { decide, decisionOutcome } from "./decide.js";
import { defaultLexical } from "./abstention.js";
import { routeCut } from "./library-cut.js";
import { explainVotes } from "./explain.js";
import { builtOtherwise, installSkills } from "./install.js";
import { LiveContext } from "./live.js";
import { glanceTrusted, preferTrusted, priorityOf, sourceClass, trustActive, trustSettings, winnerFlags, type TrustSettings } from "./trust.js";
import { type RouterParts, taskBudgets } from "./parts.js";
import { noRoomForTask, resolveBudgets, type ResolvedBudgets } from "./budgets.js";
import { readSkillRecord, type SkillRecord } from "./skill-record.js";
import { installedSkill } from "./installed.js";
import { alsoOption, GLANCE_KEYS, INSTALL_KEYS, liveOption, openSettings, RANK_KEYS, ROUTE_KEYS } from "./option-keys.js";
import type { Candidate, GlanceHit, GlanceOptions, InstalledSkill, InstallOptions, InstallReport, RankOptions, RankResult, RouteContext, RouteOptions, RouteResult, RouterOpenOptions } from "./types.js";

/** The ranking without its glance columns, as the public results give it. */
function glanceHits(ranked: readonly GlanceHit[]): GlanceHit[] {
  return ranked.map(({ skill, name, g }) => ({ skill, name, g }));
}

/**
 * Routes tasks to skills with GAVEL.
 *
 * @example
 * ```ts
 * const model = await Model.load("agent.gguf");
 * const router = await Router.open(model, { projections: "agent.projections.gguf", bankDir: ".gavel" });
 * await router.install("./skills", { onProgress: (p) => console.log(p.done, "/", p.total) });
 * const { skill, shortlist } = await router.route("Extract the tables from report.pdf");
 * await router.close();
 * ```
 */
export class Router {
  /** The model the router reads (the caller's: {@link Router.close} leaves it open). */
  readonly model: Model;
  /** The projections W_q, W_s and the ruling's constants in use. */
  readonly projections: Projections;
  /** The bank's folder. */
  readonly bankDir: string;
  /** Most tokens of a skill render r(s) ({@link RouterOpenOptions.skillBudget}, resolved). */
  readonly skillBudget: number;
  /** Most tokens of a skill's text its keys are read from ({@link RouterOpenOptions.keyBudget}, resolved). */
  readonly keyBudget: number;
  readonly #parts: RouterParts;
  /** close() was called: every call after it is refused (DISPOSED), the writes called before it finish. */
  #closing: Promise<void> | null = null;
  /** The writes called before close() have finished: the library is closing or closed. */
  #closed = false;
  #busy: Promise<unknown> = Promise.resolve();
  /** Installs and uninstalls queued or running (see #exclusive). */
  #writes = 0;
  readonly #lexical = new LexicalExpert();

  private constructor(model: Model, projections: Projections, library: Library, budgets: ResolvedBudgets, keep: TaskKeep) {
    // first: a `new Router(…)` from JavaScript passes anything, budgets included
    if (!(library instanceof Library)) throw new TypeError("a Router is opened with Router.open(model, { projections, bankDir }), not new Router()");
    const { skillBudget, keyBudget } = budgets;
    [this.model, this.projections, this.bankDir, this.skillBudget, this.keyBudget] = [model, projections, library.dir, skillBudget, keyBudget];
    const encoder = new RenderEncoder(model, skillBudget);
    if (encoder.answers.yes.length === 0 || encoder.answers.no.length === 0) warnNoAnswerTokens(model.path);
    const { taskBudget, glanceBudget } = taskBudgets(model.info.contextSize, skillBudget, encoder);
    this.#parts = { model, projections, encoder, library, taskBudget, glanceBudget, keyBudget, keep, skillOrigin: budgets.skillOrigin, defaultBudgets: budgets.defaults };
  }

  /**
   * Opens (or creates) the bank in `bankDir` for this model and these projections, and loads every
   * installed skill's keys. Fails with PROJECTIONS_MISMATCH when the projections belong to another
   * model, BANK_MISMATCH when the bank was built with another model or projections, BANK_LOCKED when
   * another process has it open for writing. With `readOnly`, the router reads the bank's last
   * committed snapshot without its lock (never BANK_LOCKED, whoever installs meanwhile), moves to a
   * newer commit at the start of each route, glance or rank, and refuses install and uninstall.
   */
  static async open(model: Model, options: RouterOpenOptions): Promise<Router> {
    // every option's type and range first: nothing is read or created for a call that is refused
    const { o, bankDir, keep, readOnly, create, keyType } = openSettings(options);
    const projections = o.projections instanceof Projections ? o.projections : await Projections.load(o.projections as string);
    projections.checkModel(await modelFingerprint(model));
    const ctx = model.info.contextSize;
    const budgets = resolveBudgets(o, projections, ctx);
    const library = readOnly ? await Library.openSnapshot(bankDir, projections, { keyType }) : await Library.open(bankDir, projections, { create, keyType });
    let router: Router;
    try {
      router = new Router(model, projections, library, budgets, keep);
    } catch (err) {
      await library.close();
      throw err;
    }
    if (router.#parts.taskBudget < 16) {
      await router.close();
      throw noRoomForTask(budgets, ctx, "too little");
    }
    return router;
  }

  /** DISPOSED once close() was called; at a queued write's `turn`, once the library is closing (close() waits for the writes called before it). */
  #check(turn = false): void {
    if (turn ? this.#closed : this.#closing !== null) throw new GavelError("this router was closed", "DISPOSED");
  }

  /**
   * Runs install/uninstall one at a time (they write the bank); refused on a read-only router. With
   * none queued it starts at once, so an uninstall claims the library before a route called after it.
   * A call queued behind another rejects as soon as its `signal` aborts while it waits (`verb`'s
   * ABORTED); when its turn comes `f` refuses it without work, so the queue goes on as before.
   */
  #exclusive<T>(f: () => Promise<T>, verb: string, signal?: AbortSignal): Promise<T> {
    if (this.#parts.library.readOnly) {
      return Promise.reject(invalidArgument(`this router opened bank ${clip(this.bankDir)} read-only (readOnly: true); open one without readOnly to install or uninstall`));
    }
    const { run, reply } = this.#writes === 0 ? { run: f(), reply: (p: Promise<T>) => p } : afterTurn(this.#busy, f, verb, signal);
    this.#writes++;
    const p = run.finally(() => this.#writes--);
    this.#busy = p.catch(() => undefined);
    return reply(p);
  }

  /**
   * Installs skills: a folder of skill folders (SKILL.md), one skill folder, a JSONL library (also
   * .jsonl.gz), or skill records. One forward pass each; a skill whose content and budgets are
   * unchanged costs nothing, a changed one (or one built with another skill or key budget: `BankEntry.build`) is re-encoded. A malformed skill is reported in `failed` and the others
   * still install.
   */
  install(source: string | readonly (Skill | SkillInput)[], options?: InstallOptions): Promise<InstallReport> {
    let signal: AbortSignal | undefined;
    try {
      this.#check();
      signal = signalOption(optionsObject(options, "install options", INSTALL_KEYS).signal);
    } catch (err) {
      return Promise.reject(err);
    }
    // an aborted install neither waits for the writes queued before it nor reads its source
    if (signal?.aborted) return Promise.reject(abortedError("Router.install", signal));
    return this.#exclusive(() => abortable("Router.install", signal, async () => {
      this.#check(true);
      try {
        const report = await installSkills(this.#parts, source, options);
        // dead key rows reclaimed once they match the live ones; texts no entry names deleted (its wait
        // for the routes in flight ends with an abort: the skills stay committed, the next write tidies)
        await this.#parts.library.tidy(signal);
        // a library the route will glance through its index gets it now, not at the first route
        const { library } = this.#parts;
        // (while damaged keys remain, routes refuse: they are built by the first route after the repair)
        // (and a bank without a key row has nothing to build an index from: an install whose skills all
        // failed into an empty bank returns its report)
        if (library.damaged().length === 0 && library.keys.keys > 0) {
          const routable = library.routable().length;
          if (prunes(routable)) await glanceIndexOf(library);
          if (readsKeyIvf(routable)) await refreshKeyIvf(library);
        }
        return report;
      } finally {
        this.#lexical.invalidate();
      }
    }, true), "Router.install", signal);
  }

  /**
   * Removes an installed skill (by id or name). Resolves to false when there is none. It waits for the
   * installs and uninstalls called before it, then for the routes in flight; `signal` aborting while
   * it waits rejects with ABORTED at once, nothing removed (a removal under way finishes).
   */
  async uninstall(idOrName: string, options?: { signal?: AbortSignal; /** @internal Only when its recorded source is this one now (false otherwise): a sync's removal. */ ifSource?: string }): Promise<boolean> {
    this.#check();
    const o = optionsObject(options, "uninstall options", { signal: true, ifSource: true });
    const signal = signalOption(o.signal);
    if (typeof idOrName !== "string") throw invalidArgument("uninstall takes a skill id or name");
    if (o.ifSource !== undefined && typeof o.ifSource !== "string") throw invalidArgument(`ifSource must be a string, got ${describeValue(o.ifSource)}`);
    throwIfAborted(signal, "Router.uninstall");
    return this.#exclusive(() => abortable("Router.uninstall", signal, async () => {
      this.#check(true);
      const entry = this.#parts.library.find(idOrName);
      if (!entry || (o.ifSource !== undefined && entry.source !== o.ifSource)) return false;
      try {
        await this.#parts.library.remove(entry.id, signal);
      } finally {
        this.#lexical.invalidate();
      }
      return true;
    }, true), "Router.uninstall", signal);
  }

  /** The installed skills. */
  list(): InstalledSkill[] {
    this.#check();
    return this.#parts.library.store.entries().map(installedSkill);
  }

  /** @internal What {@link list} would list now, as a state: the same store and `entries` count, the same skills (a watcher's cache key). */
  listState(): LibraryState {
    this.#check();
    return this.#parts.library.state();
  }

  /** @internal The installed skill `id` now, or undefined: a server's lookup of a route's winner (maybe installed a moment ago). */
  installed(id: string): InstalledSkill | undefined {
    this.#check();
    const e = this.#parts.library.store.get(id);
    return e ? installedSkill(e) : undefined;
  }

  /**
   * @internal What a sync compares a SKILL.md read now with, from the bank's entry alone ({@link get}
   * reads the file and the texts again): the content hash skill `id` was installed with, and whether
   * installing it again would build it anew (its entry built with other budgets); undefined when not installed.
   */
  installedState(id: string): { contentHash: string; builtOtherwise: boolean } | undefined {
    this.#check();
    const e = this.#parts.library.store.get(id);
    return e && { contentHash: e.contentHash, builtOtherwise: builtOtherwise(this.#parts, id) };
  }

  /**
   * An installed skill whole, by id or name: its body, front matter, `allowed-tools`, the absolute
   * path of its SKILL.md (or library row) and folder, its content hash and its provenance (see
   * {@link SkillRecord}). What a host needs to load a skill the route chose, or one asked for by name.
   *
   * @throws GavelError `SKILL_NOT_FOUND` when no installed skill has this id or name
   */
  async get(idOrName: string): Promise<SkillRecord> {
    this.#check();
    return this.#parts.library.reading(() => readSkillRecord(this.#parts.library, idOrName));
  }

  /**
   * @internal Sends this router's plain glance calls (one task each) through `via`, or directly
   * again (null): a resident server batches those of concurrent requests (src/route/glance-many.ts).
   */
  routeGlances(via: GlanceVia | null): void {
    this.#check();
    routeGlances(this.#parts.library.keys, via);
  }

  /** Bank statistics: skills, keys, bytes on disk and in memory, and how the keys are held in memory (`keyType`). */
  stats() {
    this.#check();
    const { store, keys } = this.#parts.library;
    return { ...store.stats(), memoryBytes: keys.bytes, keyType: keys.keyType };
  }

  /** The glance over the routable library, for a context (less the skills `trust` excludes). */
  #glance(context: RouteContext, live: boolean | undefined, signal?: AbortSignal, trust?: TrustSettings, tokenScores = false): Promise<Glanced> {
    const queriesOf = () => encodeQueries(this.#parts, context, live, signal);
    if (trust && trustActive(trust)) return glanceTrusted(this.#parts, queriesOf, trust, signal, tokenScores);
    return glanceLibrary(this.#parts, queriesOf, signal, undefined, tokenScores);
  }

  /** The verdict over the candidates (in glance order), then the ruling S = g + αL + γV, best first. */
  async #judgeAndRule(taskText: string, candidates: readonly Shortlisted[], signal?: AbortSignal): Promise<Candidate[]> {
    const ruled = rule(await judge(this.#parts, taskText, candidates, signal), this.projections);
    checkFiniteReadouts(ruled, true, this.model.path); // NaN/Inf read-outs: a typed error, not an order
    return ruled;
  }

  /**
   * Makes ready what the first routes would otherwise make on their way: over a library whose glance
   * reads the key IVF (`GAVEL_KEY_IVF`: by default on the CPU from 3,000 skills), the index opened
   * and, with `GAVEL_KEY_IVF_I8=on` (the default), every list's int8 codes. Takes seconds of CPU over
   * tens of thousands of skills (routes started meanwhile wait for it); nothing to do otherwise.
   * `gavel serve` calls it once it listens.
   *
   * @throws GavelError `ABORTED` when `signal` aborted before the call (whether or not there is
   *   anything to warm) or while it runs (a coding glance under way runs on to its end, its codes kept).
   */
  async warm(options?: { signal?: AbortSignal }): Promise<KeyIvfWarm> {
    this.#check();
    const o = optionsObject(options, "warm options", { signal: true });
    const signal = signalOption(o.signal);
    return abortable("Router.warm", signal, () => this.#parts.library.reading(() => warmKeyIvf(this.#parts.library, signal), signal));
  }

  /** Ranks the whole library by the glance alone, best first. */
  async glance(context: RouteContext, options?: GlanceOptions): Promise<GlanceHit[]> {
    this.#check();
    const o = optionsObject(options, "glance options", GLANCE_KEYS);
    const topK = intOption(o.topK, "topK", 1, 1 << 30, 20);
    const trust = trustSettings(o, this.projections.delta);
    const signal = signalOption(o.signal);
    const { ranked } = await abortable("Router.glance", signal, () => this.#parts.library.reading(() => this.#glance(context, liveOption(o.live), signal, trust), signal));
    return glanceHits(ranked.slice(0, topK));
  }

  /**
   * Routes: the first stage ranks the whole library by g + βB (the glance's vote, plus the lexical
   * expert B when the projections' β > 0 or `lexical` is set) and shortlists the skills
   * within Δ of the best (at most maxShortlist); one verdict pass per candidate over
   * r(s) + task + question (prefixes KV-cached) gives L and V, and the skill with the highest
   * S = g + αL + γV + βB is chosen. The verdict is skipped when it cannot change anything (one
   * candidate, and abstention does not read V). With a calibrated abstention model in the
   * projections, a route may load nothing: `abstained: true` and the reason.
   *
   * A route reads one state of the library from start to end: an uninstall (or a reinstall that
   * replaces a skill) waits for the routes in flight, and routes that start meanwhile wait for it (one
   * whose `signal` aborts while it waits rejects at once); skills installed while it runs are not
   * ranked by it.
   */
  async route(context: RouteContext, options?: RouteOptions): Promise<RouteResult> {
    this.#check();
    const o = optionsObject(options, "route options", ROUTE_KEYS);
    const signal = signalOption(o.signal);
    return abortable("Router.route", signal, () => this.#parts.library.reading(() => this.#route(context, o), signal));
  }

  async #route(context: RouteContext, o: Record<string, unknown>): Promise<RouteResult> {
    const model = this.projections.abstention;
    const abstain = boolOption(o.abstain, "abstain", model !== null);
    const ownCut = boolOption(o.libraryCut, "libraryCut", config().libraryCut === "on");
    const explain = boolOption(o.explain, "explain", false);
    const verdict = boolOption(o.verdict, "verdict", true);
    const lexical = boolOption(o.lexical, "lexical", defaultLexical(this.projections, abstain));
    const signal = signalOption(o.signal);
    const trust = trustSettings(o, this.projections.delta);
    const t0 = performance.now();
    const glanced = await this.#glance(context, liveOption(o.live), signal, trust, explain);
    const t1 = performance.now();
    const { library } = this.#parts;
    // trust per source: lower-priority skills within tieMargin of the best g lose the tie
    const ranked = trust.trust.size > 0 ? preferTrusted(glanced.ranked, (id) => priorityOf(sourceClass(library.entry(id), library.dir), trust.trust), trust.tieMargin) : glanced.ranked;
    // a small library's own cut: measured once per state of the library (the reference prompts routed over it)
    const cut = abstain && ownCut ? await routeCut(this.#parts, this.#lexical, signal) : null;
    // every BM25 read of the route (B, the ceiling, the re-ranker, the result's word weight) reads the
    // query the glance's encoding made, with its paste reading; its text is also abstention's domain
    // text (lexicalDomainText of the context: a string's kept side, a chat's contents without the system prompt)
    const d = await decide(this.#parts, this.#lexical, glanced.q.bm25Query, ranked, glanced.res.handles, { lexical, verdict, abstain, libraryCut: cut, domainText: glanced.q.bm25Query.text, verdictText: glanced.q.verdictText, signal });
    const t2 = performance.now();
    const result: RouteResult = {
      ...decisionOutcome(this.#parts, d),
      timings: { glanceMs: t1 - t0, verdictMs: d.verdictMs, totalMs: t2 - t0, ...(d.lexicalMs !== undefined ? { lexicalMs: d.lexicalMs } : {}) },
      ...(glanced.q.truncation ? { truncation: glanced.q.truncation } : {}),
      ...pasteOf(glanced.q, d.lexicalMs !== undefined),
    };
    const flags = result.skill !== null ? await winnerFlags(this.#parts.library, glanced.q.bm25Query.text, result.skill) : [];
    if (flags.length > 0) result.flags = flags;
    const best = d.shortlist[0];
    if (explain && best) {
      const column = glanced.ranked.find((r) => r.skill === best.skill)!.column;
      result.explanation = explainVotes(this.model, this.#parts.library.entry(best.skill), column, glanced);
    }
    return result;
  }

  /**
   * Every read-out for evaluation and calibration: the glance's top `glanceTop` skills, and the
   * verdict (L, V, and S under the current α, γ) for the top `verdictTop` of them by g, whatever Δ.
   */
  async rank(context: RouteContext, options?: RankOptions): Promise<RankResult> {
    this.#check();
    const o = optionsObject(options, "rank options", RANK_KEYS);
    const signal = signalOption(o.signal);
    return abortable("Router.rank", signal, () => this.#parts.library.reading(() => this.#rank(context, o), signal));
  }

  async #rank(context: RouteContext, o: Record<string, unknown>): Promise<RankResult> {
    const glanceTop = intOption(o.glanceTop, "glanceTop", 1, 1 << 30, 20);
    const verdictTop = intOption(o.verdictTop, "verdictTop", 0, 1 << 10, this.projections.maxShortlist);
    const also = alsoOption(o.also);
    const signal = signalOption(o.signal);
    const { q, ranked } = await this.#glance(context, liveOption(o.live), signal);
    // `also`: skills outside the glance's leaders (e.g. BM25's) get their g and a verdict too, so
    // that records can replay a first stage that fuses both experts.
    const wanted = new Set(also);
    const extra = ranked.filter((r, i) => wanted.has(r.skill) && i >= glanceTop);
    const pool = [...ranked.slice(0, verdictTop), ...ranked.filter((r, i) => wanted.has(r.skill) && i >= verdictTop)];
    const verdict = await this.#judgeAndRule(q.taskText, pool, signal);
    return { glance: glanceHits(ranked.slice(0, glanceTop)), verdict, ...(also.length ? { also: glanceHits(extra) } : {}) };
  }

  /**
   * The exact token sequences the verdict scores for (context, skill): r(s) as the prefix, the
   * continuation (task, question, closing scaffolding) with the task's span in it, and the answer
   * token ids. For inspection and tests; {@link Router.route} uses the same.
   */
  async verdictInputs(context: RouteContext, skill: string): Promise<VerdictInputs> {
    this.#check();
    if (typeof skill !== "string" || skill === "") throw invalidArgument("skill must be a skill's id or name, a non-empty string");
    const taskText = taskTextOf(context);
    return this.#parts.library.reading(async () => {
      const entry = this.#parts.library.find(skill);
      if (!entry) throw new GavelError(`no installed skill ${clip(skill)}`, "SKILL_NOT_FOUND");
      return verdictInputsOf(this.#parts, taskText, entry.id);
    });
  }

  /**
   * Commits and closes the bank (the model stays open: it is the caller's), once the installs and
   * uninstalls called before it have finished. Every call after it, even in the same tick, is refused
   * with DISPOSED at once, and live contexts report their router closed. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#busy;
      this.#closed = true;
      await this.#parts.library.close();
    })();
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * A live context over this router's library: append the ℓ* states of each new token (from
   * `model.generate(…, { captureLayer: live.layer })`) and read the decayed glance scores per token,
   * with no re-encoding of the context (src/route/live.ts).
   */
  live(): LiveContext {
    this.#check();
    return new LiveContext(this.#parts, () => this.#closing !== null);
  }
}

const warnedNoAnswers = new Set<string>();
/**
 * Once per model file: its vocabulary spells "yes" or "no" with no single token, so the verdict's V
 * (the yes/no log-odds) is 0 for every skill, and V-based abstention never fires.
 */
function warnNoAnswerTokens(path: string): void {
  if (warnedNoAnswers.has(path)) return;
  warnedNoAnswers.add(path);
  process.emitWarning(`${clip(path)}: the model has no single token for "yes" or "no" (nor "Yes", " yes", …), so the verdict's V is 0 for every skill and abstention that reads V never fires; the route still reads the glance, BM25 and L`, { code: "GAVEL_NO_ANSWER_TOKENS" });
}
