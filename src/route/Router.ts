/**
 * The router: GAVEL over one frozen model (paper, section 3). A skill costs one forward pass at
 * installation; a task is ranked against the whole library by the glance, the shortlist gets a
 * verdict under the model's full attention, and a product of experts rules.
 */
import { GavelError, invalidArgument } from "../errors.js";
import type { Model } from "../model/Model.js";
import { abortedError, boolOption, intOption, optionsObject, signalOption } from "../util/validate.js";
import { renderChat, type ChatMessage, type RenderableSkill } from "../render/index.js";
import { loadSkills, type LoadSkillsOptions, type Skill, type SkillFailure, type SkillInput } from "../skills/index.js";
import { BankStore, bankHeaderFor, type BankEntry, type RenderCut } from "../bank/index.js";
import { RenderEncoder, type EncodedTask } from "../render/encode.js";
import { modelFingerprint } from "../model/fingerprint.js";
import { coverFarthestFirstAsync, decayWeights, projectNormalize, voteK } from "../kernels/kernels.js";
import { KeyBank } from "../bank/key-bank.js";
import { inOrder, type Outcome } from "../util/in-order.js";
import { Projections } from "../projections/projections.js";
import { meanLogLikelihood, ruling, shortlist as pickShortlist, yesNoLogOdds } from "./ruling.js";
import { TextStore } from "../bank/texts.js";

/** A routing context: a written task, or a live chat (rendered with the model's chat template). */
export type RouteContext = string | ChatMessage[];

export interface RouterOpenOptions {
  /** The projections (W_q, W_s and the ruling's constants), or the path of their GGUF file. */
  projections: Projections | string;
  /** The bank's directory (created when missing). */
  bankDir: string;
  /** Most tokens of a skill render r(s); default min(30,720, ¾ of the model's context). */
  skillBudget?: number;
  /** Create the bank if it does not exist (default true). */
  create?: boolean;
}

/** One skill's keys as {@link Router.install} computes them. */
interface Encoded {
  keys: Float32Array;
  keyTokens: number[];
  keyPositions: number[];
  renderTokens: number;
  rawKeys: number;
  truncated: boolean;
  renderCut: RenderCut;
}

/** Progress of {@link Router.install}, reported after each skill. */
export interface InstallProgress {
  done: number;
  total: number;
  skill: string;
  status: "installed" | "unchanged" | "failed";
}

export interface InstallOptions extends Pick<LoadSkillsOptions, "offset" | "limit"> {
  onProgress?: (p: InstallProgress) => void;
  signal?: AbortSignal;
  /**
   * Commit the bank every this many installed skills, and at the end. By default it commits at most
   * every {@link COMMIT_INTERVAL_MS} (and at the end): a commit rewrites the manifest, which grows
   * with the bank (~90 MB at 30K skills), so committing every few dozen skills made a large install
   * quadratic. An interrupted install loses at most the skills since the last commit.
   */
  commitEvery?: number;
  /**
   * Skills in flight at once (default 8): while the model runs one skill's forward pass, others are
   * rendered and tokenized, projected and compressed. The bank is the same for any value (skills are
   * stored in library order); a fast backend (a GPU) needs more in flight to stay busy.
   */
  concurrency?: number;
}

export interface InstallReport {
  /** Ids of the skills encoded now. */
  installed: string[];
  /** Ids of the skills already installed with the same content (nothing was computed). */
  unchanged: string[];
  failed: SkillFailure[];
  /** Ids of installed skills whose body was cut to fit the token budget (`skillBudget`). */
  truncated: string[];
  /** Tokens run through the model, and keys kept, for the installed skills. */
  tokens: number;
  keys: number;
  /** Keys before compression (the ε-cover keeps `keys` of them). */
  rawKeys: number;
  seconds: number;
  /**
   * Seconds spent in each stage, summed over the installed skills. Skills in flight overlap, so the
   * stages add up to more than `seconds`; the largest one is what bounds an install.
   */
  stages: InstallStages;
}

/** Where an install's time went (see {@link InstallReport.stages}). */
export interface InstallStages {
  /** Rendering r(s) (JavaScript thread) and tokenizing it (libuv workers), cut search included. */
  render: number;
  /** The model's forward pass to layer ℓ*, queue wait included. */
  forward: number;
  /** Projection W_s h and normalisation. */
  project: number;
  /** The ε-cover. */
  cover: number;
  /** Writing the skill's text and keys to the bank. */
  store: number;
  /** Bank commits (manifest rewrites). */
  commit: number;
}

export interface InstalledSkill {
  id: string;
  name: string;
  description: string;
  source: string;
  keys: number;
  renderTokens: number;
  /** Never chosen automatically (SKILL.md `disable-model-invocation: true`). */
  disableModelInvocation: boolean;
}

export interface GlanceOptions {
  /** How many skills to return, best first (default 20). */
  topK?: number;
  /** Read the context as a live rollout: decayed vote weights 2^(−a_i/64) (default: true for chat messages). */
  live?: boolean;
  signal?: AbortSignal;
}

export interface GlanceHit {
  skill: string;
  name: string;
  g: number;
}

export interface RouteOptions {
  /** Load nothing when the winner's verdict V < 0 (default false). */
  abstain?: boolean;
  live?: boolean;
  /** Explain the choice: which task tokens voted for the winner, and what they matched. */
  explain?: boolean;
  signal?: AbortSignal;
}

export interface Candidate {
  skill: string;
  name: string;
  /** The glance's vote. */
  g: number;
  /** Mean log-likelihood of the task with the skill as prefix. */
  L: number;
  /** Log-odds of yes over no to "Does this skill provide what that task needs?". */
  V: number;
  /** S = g + αL + γV. */
  S: number;
}

/** One task token that voted for the winner. */
export interface Vote {
  /** Position of the token within the task's tokens. */
  position: number;
  token: string;
  /** m_i(winner): its best similarity with the winner's keys. */
  m: number;
  /** The winner's token whose key it matched. */
  matched: string;
}

export interface RouteResult {
  /** The chosen skill's id, or null (empty shortlist, or abstained). */
  skill: string | null;
  name: string | null;
  abstained: boolean;
  /** The verdict's candidates, best S first. */
  shortlist: Candidate[];
  timings: { glanceMs: number; verdictMs: number; totalMs: number };
  /** With `explain`: the task tokens that voted for the winner, strongest first. */
  explanation?: Vote[];
}

/** A chat as the verdict's task text: one "role: content" line per message. */
function chatAsTask(messages: ChatMessage[]): string {
  return messages.map((m) => `${m.role}: ${m.content}`).join("\n");
}

/** How often an install commits the bank by default (see {@link InstallOptions.commitEvery}). */
export const COMMIT_INTERVAL_MS = 10_000;

/** Bank entries know their skill's text by content hash. */
function toBankInput(skill: Skill, keyTokens: number[], keyPositions: number[], renderTokens: number, renderCut: RenderCut) {
  return {
    id: skill.id,
    name: skill.name,
    description: skill.description,
    contentHash: skill.contentHash,
    source: skill.source,
    disableModelInvocation: skill.disableModelInvocation,
    keyTokens,
    keyPositions,
    renderTokens,
    renderCut,
  };
}

interface Queries {
  queries: Float32Array;
  weights: Float32Array;
  /** Query token ids (for explanations). */
  tokens: Int32Array;
  /** The task as the verdict reads it. */
  taskText: string;
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
  readonly model: Model;
  readonly projections: Projections;
  readonly bankDir: string;
  readonly skillBudget: number;
  #store: BankStore;
  #bank: KeyBank;
  #texts: TextStore;
  #encoder: RenderEncoder;
  #handleOf = new Map<string, number>();
  #idOf = new Map<number, string>();
  #closed = false;
  #busy: Promise<unknown> = Promise.resolve();

  private constructor(model: Model, projections: Projections, store: BankStore, bank: KeyBank, skillBudget: number) {
    this.model = model;
    this.projections = projections;
    this.bankDir = store.dir;
    this.#store = store;
    this.#bank = bank;
    this.#texts = new TextStore(store.dir);
    this.skillBudget = skillBudget;
    this.#encoder = new RenderEncoder(model, skillBudget);
  }

  /**
   * Opens (or creates) the bank in `bankDir` for this model and these projections, and loads every
   * installed skill's keys. Fails with PROJECTIONS_MISMATCH when the projections belong to another
   * model, BANK_MISMATCH when the bank was built with another model or projections, BANK_LOCKED when
   * another process has it open.
   */
  static async open(model: Model, options: RouterOpenOptions): Promise<Router> {
    const o = optionsObject(options, "options");
    if (typeof o.bankDir !== "string" || o.bankDir === "") throw invalidArgument("bankDir must be a non-empty string");
    let projections: Projections;
    if (o.projections instanceof Projections) projections = o.projections;
    else if (typeof o.projections === "string") projections = await Projections.load(o.projections);
    else throw invalidArgument("projections must be a Projections object or the path of a projections file");
    projections.checkModel(await modelFingerprint(model));
    const ctx = model.info.contextSize;
    const skillBudget = intOption(o.skillBudget, "skillBudget", 16, 1 << 22, Math.min(30_720, Math.floor(ctx * 0.75)));
    if (skillBudget >= ctx - 16) throw invalidArgument(`skillBudget ${skillBudget} leaves no room for a task in the context of ${ctx} tokens`);
    const router = await Router.#create(model, projections, o.bankDir, boolOption(o.create, "create", true), skillBudget);
    if (router.#taskBudget() < 16) {
      await router.close();
      throw invalidArgument(`skillBudget ${skillBudget} leaves too little room for a task in the context of ${ctx} tokens`);
    }
    return router;
  }

  static async #create(model: Model, projections: Projections, bankDir: string, create: boolean, skillBudget: number): Promise<Router> {
    const store = await BankStore.open(bankDir, bankHeaderFor(projections), { create });
    try {
      const bank = new KeyBank(projections.dim);
      const router = new Router(model, projections, store, bank, skillBudget);
      // In batches of 256 MiB: the native bank copies each skill's keys, so reading the whole bank
      // first would hold it twice.
      await store.forEachKeyBatch(256 * 2 ** 20, (batch) => {
        for (let s = 0; s < batch.entries.length; s++) {
          const e = batch.entries[s];
          router.#track(e.id, bank.add(batch.keys.subarray(batch.offsets[s] * projections.dim, batch.offsets[s + 1] * projections.dim)));
        }
      });
      return router;
    } catch (err) {
      await store.close();
      throw err;
    }
  }

  #track(id: string, handle: number): void {
    this.#handleOf.set(id, handle);
    this.#idOf.set(handle, id);
  }

  #untrack(id: string): void {
    const h = this.#handleOf.get(id);
    if (h === undefined) return;
    this.#bank.remove(h);
    this.#handleOf.delete(id);
    this.#idOf.delete(h);
  }

  #check(): void {
    if (this.#closed) throw new GavelError("this router was closed", "DISPOSED");
  }

  /** Runs install/uninstall one at a time (they write the bank). */
  #exclusive<T>(f: () => Promise<T>): Promise<T> {
    const p = this.#busy.then(f, f);
    this.#busy = p.catch(() => undefined);
    return p;
  }

  /**
   * Installs skills: a folder of skill folders (SKILL.md), one skill folder, a JSONL library (also
   * .jsonl.gz), or skill records. One forward pass each; a skill whose content is unchanged costs
   * nothing, a changed one is re-encoded. A malformed skill is reported in `failed` and the others
   * still install.
   */
  install(source: string | readonly (Skill | SkillInput)[], options?: InstallOptions): Promise<InstallReport> {
    return this.#exclusive(async () => {
      this.#check();
      const o = optionsObject(options, "options") as InstallOptions;
      const signal = signalOption(o.signal);
      const commitEvery = o.commitEvery === undefined ? undefined : intOption(o.commitEvery, "commitEvery", 1, 1 << 20, 64);
      let lastCommit = performance.now();
      const inFlight = intOption(o.concurrency, "concurrency", 1, 256, 8);
      if (o.onProgress !== undefined && typeof o.onProgress !== "function") throw invalidArgument("onProgress must be a function");
      const t0 = performance.now();
      const { skills, failed } = await loadSkills(source, { offset: o.offset, limit: o.limit, signal });
      const stages: InstallStages = { render: 0, forward: 0, project: 0, cover: 0, store: 0, commit: 0 };
      const report: InstallReport = { installed: [], unchanged: [], failed: [...failed], truncated: [], tokens: 0, keys: 0, rawKeys: 0, seconds: 0, stages };
      const total = skills.length;
      let done = 0;
      let staged = 0;
      const progress = (skill: string, status: InstallProgress["status"]) => o.onProgress?.({ done: ++done, total, skill, status });
      // Up to `inFlight` skills are encoded at once: while one skill's forward pass, projection and
      // cover run natively, the next ones render (on the JS thread) and tokenize (on libuv workers).
      // Results are stored strictly in library order (unchanged skills too), so the bank is the same
      // as with one at a time.
      const unchanged = Symbol("unchanged");
      const encode = (skill: Skill): Promise<Encoded | typeof unchanged> => {
        const existing = this.#store.get(skill.id);
        if (existing && existing.contentHash === skill.contentHash && this.#handleOf.has(skill.id)) return Promise.resolve(unchanged);
        return this.#encodeSkill(skill, signal, stages);
      };
      const store = async (skill: Skill, outcome: Outcome<Encoded | typeof unchanged>) => {
        if (outcome.ok && outcome.value === unchanged) {
          report.unchanged.push(skill.id);
          progress(skill.id, "unchanged");
          return;
        }
        try {
          if (!outcome.ok) throw outcome.error;
          const enc = outcome.value as Encoded;
          const t = performance.now();
          await this.#texts.put(skill.contentHash, skill);
          await this.#store.put(toBankInput(skill, enc.keyTokens, enc.keyPositions, enc.renderTokens, enc.renderCut), enc.keys);
          stages.store += (performance.now() - t) / 1000;
          this.#untrack(skill.id);
          this.#track(skill.id, this.#bank.add(enc.keys));
          report.installed.push(skill.id);
          if (enc.truncated) report.truncated.push(skill.id);
          report.tokens += enc.renderTokens;
          report.keys += enc.keyTokens.length;
          report.rawKeys += enc.rawKeys;
          progress(skill.id, "installed");
          staged++;
          if (commitEvery !== undefined ? staged % commitEvery === 0 : performance.now() - lastCommit >= COMMIT_INTERVAL_MS) {
            const t = performance.now();
            await this.#store.commit();
            lastCommit = performance.now();
            stages.commit += (lastCommit - t) / 1000;
          }
        } catch (err) {
          if (err instanceof GavelError && (err.code === "ABORTED" || err.code === "DISPOSED")) throw err;
          const error = err instanceof GavelError ? err : new GavelError(`could not install: ${(err as Error).message}`, "SKILL_INVALID", { cause: err });
          report.failed.push({ where: skill.source, error });
          progress(skill.id, "failed");
        }
      };
      try {
        await inOrder(skills, { width: inFlight, beforeEach: () => { if (signal?.aborted) throw abortedError(); } }, encode, store);
      } finally {
        // Whatever was encoded before an abort or a failure is kept.
        const t = performance.now();
        await this.#store.commit();
        stages.commit += (performance.now() - t) / 1000;
      }
      report.seconds = (performance.now() - t0) / 1000;
      return report;
    });
  }

  /** One forward pass over r(s): keys = ε-cover of normalize(W_s h) over the header and body tokens. */
  async #encodeSkill(skill: Skill, signal?: AbortSignal, stages?: InstallStages): Promise<Encoded> {
    let t = performance.now();
    const lap = (stage: keyof InstallStages) => {
      const now = performance.now();
      if (stages) stages[stage] += (now - t) / 1000;
      t = now;
    };
    // tokenized off the JS thread: with skills in flight the JS thread would otherwise bound the
    // install wherever the forward pass is cheap (on a GPU)
    const enc = await this.#encoder.encodeSkillAsync(skill);
    lap("render");
    const { nEmbd } = this.model.info;
    const { dim, eps, layer, ws } = this.projections;
    const states = await this.model.hiddenStates(enc.tokens, layer, { signal });
    lap("forward");
    const rows = states.subarray(enc.keyStart * nEmbd, enc.keyEnd * nEmbd);
    const all = rows.length > 0 ? await projectNormalize(rows, nEmbd, ws, dim) : new Float32Array(0);
    lap("project");
    const kept = all.length > 0 ? await coverFarthestFirstAsync(all, dim, eps) : new Int32Array(0);
    lap("cover");
    const keys = new Float32Array(kept.length * dim);
    const keyTokens: number[] = [];
    const keyPositions: number[] = [];
    kept.forEach((j, i) => {
      keys.set(all.subarray(j * dim, (j + 1) * dim), i * dim);
      keyTokens.push(enc.tokens[enc.keyStart + j]);
      keyPositions.push(enc.keyStart + j);
    });
    const renderCut = { descriptionChars: enc.descriptionChars, bodyChars: enc.bodyChars };
    return { keys, keyTokens, keyPositions, renderTokens: enc.tokens.length, rawKeys: enc.keyEnd - enc.keyStart, truncated: enc.truncated, renderCut };
  }

  /** Removes an installed skill (by id or name). Resolves to false when there is none. */
  uninstall(idOrName: string): Promise<boolean> {
    return this.#exclusive(async () => {
      this.#check();
      if (typeof idOrName !== "string") throw invalidArgument("uninstall takes a skill id or name");
      const entry = this.#find(idOrName);
      if (!entry) return false;
      await this.#store.remove(entry.id);
      this.#untrack(entry.id);
      await this.#store.commit();
      await this.#texts.prune(new Set(this.#store.entries().map((e) => e.contentHash)));
      return true;
    });
  }

  #find(idOrName: string): BankEntry | undefined {
    return this.#store.get(idOrName) ?? this.#store.entries().find((e) => e.name === idOrName);
  }

  /** The installed skills. */
  list(): InstalledSkill[] {
    this.#check();
    return this.#store.entries().map((e) => ({
      id: e.id,
      name: e.name,
      description: e.description,
      source: e.source,
      keys: e.nKeys,
      renderTokens: e.renderTokens,
      disableModelInvocation: e.disableModelInvocation,
    }));
  }

  /** Bank statistics: skills, keys, bytes on disk and in memory. */
  stats() {
    this.#check();
    return { ...this.#store.stats(), memoryBytes: this.#bank.bytes };
  }

  /** Most task tokens: r(s) (≤ skillBudget) + the verdict's continuation must fit the context. */
  #taskBudget(): number {
    return this.model.info.contextSize - this.skillBudget - this.#encoder.verdictOverhead;
  }

  async #queries(context: RouteContext, live: boolean | undefined, signal?: AbortSignal): Promise<Queries> {
    const { layer, dim, wq } = this.projections;
    const { nEmbd } = this.model.info;
    let enc: EncodedTask;
    let taskText: string;
    let isLive: boolean;
    if (typeof context === "string") {
      isLive = live ?? false;
      taskText = context;
      enc = isLive ? this.#encoder.encodeLive(context, this.#taskBudget()) : this.#encoder.encodeTask(context, this.#taskBudget());
    } else if (Array.isArray(context)) {
      isLive = live ?? true;
      for (const [i, m] of context.entries()) {
        if (!m || typeof m.role !== "string" || typeof m.content !== "string") throw invalidArgument(`context[${i}] must be a chat message { role, content }`);
      }
      if (context.length === 0) throw invalidArgument("context holds no message");
      taskText = chatAsTask(context);
      enc = isLive
        ? this.#encoder.encodeLive(renderChat(this.model.info.chatTemplate ?? null, context), this.#taskBudget())
        : this.#encoder.encodeTask(taskText, this.#taskBudget());
    } else throw invalidArgument("context must be a task string or an array of chat messages");
    if (enc.taskEnd <= enc.taskStart) throw invalidArgument("the task has no tokens");
    const states = await this.model.hiddenStates(enc.tokens, layer, { signal });
    const rows = states.subarray(enc.taskStart * nEmbd, enc.taskEnd * nEmbd);
    const queries = await projectNormalize(rows, nEmbd, wq, dim);
    const n = enc.taskEnd - enc.taskStart;
    const weights = isLive ? decayWeights(n) : new Float32Array(n).fill(1);
    return { queries, weights, tokens: enc.tokens.subarray(enc.taskStart, enc.taskEnd), taskText };
  }

  /** Handles of the skills that may be chosen automatically. */
  #routable(): Int32Array {
    const out: number[] = [];
    for (const e of this.#store.entries()) {
      const h = this.#handleOf.get(e.id);
      if (h !== undefined && !e.disableModelInvocation) out.push(h);
    }
    return Int32Array.from(out);
  }

  async #glanceAll(context: RouteContext, live: boolean | undefined, signal?: AbortSignal) {
    const handles = this.#routable();
    if (handles.length === 0) throw new GavelError("no skill is installed (or every one has disable-model-invocation)", "EMPTY_LIBRARY");
    const q = await this.#queries(context, live, signal);
    const k = voteK(handles.length);
    // The whole bank when every skill is routable: a whole-bank glance is the one a CUDA build runs
    // on the device (a restricted one gathers its columns from a whole-bank pass there too).
    const all = handles.length === this.#bank.size;
    const res = await this.#bank.glance(q.queries, { weights: q.weights, k, handles: all ? undefined : handles, signal });
    const ranked = Array.from(res.handles, (h, s) => {
      const id = this.#idOf.get(h)!;
      return { column: s, skill: id, name: this.#store.get(id)!.name, g: res.g[s] };
    }).sort((a, b) => b.g - a.g || a.column - b.column);
    return { q, res, ranked, k };
  }

  /** Ranks the whole library by the glance alone, best first. */
  async glance(context: RouteContext, options?: GlanceOptions): Promise<GlanceHit[]> {
    this.#check();
    const o = optionsObject(options, "options");
    const topK = intOption(o.topK, "topK", 1, 1 << 30, 20);
    const { ranked } = await this.#glanceAll(context, o.live === undefined ? undefined : boolOption(o.live, "live", false), signalOption(o.signal));
    return ranked.slice(0, topK).map(({ skill, name, g }) => ({ skill, name, g }));
  }

  /**
   * Routes: the glance shortlists the skills whose g is within Δ of the best (at most
   * maxShortlist), one verdict pass per candidate over r(s) + task + question (prefixes KV-cached)
   * gives L and V, and the skill with the highest S = g + αL + γV is chosen.
   */
  async route(context: RouteContext, options?: RouteOptions): Promise<RouteResult> {
    this.#check();
    const o = optionsObject(options, "options");
    const abstain = boolOption(o.abstain, "abstain", false);
    const explain = boolOption(o.explain, "explain", false);
    const signal = signalOption(o.signal);
    const t0 = performance.now();
    const { q, res, ranked, k } = await this.#glanceAll(context, o.live === undefined ? undefined : boolOption(o.live, "live", false), signal);
    const t1 = performance.now();
    const { delta, maxShortlist } = this.projections;
    const shortlist = await this.#verdict(q.taskText, pickShortlist(ranked, delta, maxShortlist), signal);
    const t2 = performance.now();
    const best = shortlist[0];
    const abstained = abstain && best !== undefined && best.V < 0;
    const chosen = abstained || !best ? null : best;
    const result: RouteResult = {
      skill: chosen?.skill ?? null,
      name: chosen?.name ?? null,
      abstained,
      shortlist,
      timings: { glanceMs: t1 - t0, verdictMs: t2 - t1, totalMs: t2 - t0 },
    };
    if (explain && best) {
      const column = ranked.find((r) => r.skill === best.skill)!.column;
      result.explanation = this.#explain(best.skill, column, q, res, k);
    }
    return result;
  }

  /** One verdict pass per candidate (prefixes KV-cached), then S; best S first. */
  async #verdict(taskText: string, candidates: { skill: string; name: string; g: number }[], signal?: AbortSignal): Promise<Candidate[]> {
    if (candidates.length === 0) return [];
    const { alpha, gamma } = this.projections;
    const tail = this.#encoder.encodeVerdictTail(taskText, this.#taskBudget());
    const prefixes = await Promise.all(candidates.map((c) => this.#skillPrefix(c.skill)));
    const nYes = this.#encoder.answers.yes.length;
    const scores = await this.model.scoreMany(prefixes, tail.tokens, { readIds: this.#readIds(), signal });
    return candidates
      .map((c, i) => {
        const L = meanLogLikelihood(scores[i].logprobs, tail.taskStart, tail.taskEnd);
        const V = yesNoLogOdds(scores[i].final, nYes);
        return { skill: c.skill, name: c.name, g: c.g, L, V, S: ruling(c.g, L, V, alpha, gamma) };
      })
      .sort((a, b) => b.S - a.S);
  }

  /**
   * Every read-out for evaluation and calibration: the glance's top `glanceTop` skills, and the
   * verdict (L, V, and S under the current α, γ) for the top `verdictTop` of them by g, whatever Δ.
   */
  async rank(context: RouteContext, options?: { glanceTop?: number; verdictTop?: number; live?: boolean; signal?: AbortSignal }): Promise<{ glance: GlanceHit[]; verdict: Candidate[] }> {
    this.#check();
    const o = optionsObject(options, "options");
    const glanceTop = intOption(o.glanceTop, "glanceTop", 1, 1 << 30, 20);
    const verdictTop = intOption(o.verdictTop, "verdictTop", 0, 1 << 10, this.projections.maxShortlist);
    const signal = signalOption(o.signal);
    const { q, ranked } = await this.#glanceAll(context, o.live === undefined ? undefined : boolOption(o.live, "live", false), signal);
    const verdict = await this.#verdict(q.taskText, ranked.slice(0, verdictTop), signal);
    return { glance: ranked.slice(0, glanceTop).map(({ skill, name, g }) => ({ skill, name, g })), verdict };
  }

  /**
   * r(s) for the verdict: the render install made (its recorded cut, so the verdict resumes the same
   * pass, whatever the encoder's cut search would pick now); cut afresh for banks that predate the
   * record, or when that render exceeds this router's skillBudget.
   */
  async #skillPrefix(id: string): Promise<Int32Array> {
    const entry = this.#store.get(id)!;
    const skill = await this.#texts.get(entry.contentHash);
    // tokenized off the JS thread: a verdict renders up to 20 shortlisted skills at once
    const atCut = entry.renderCut ? await this.#encoder.encodeSkillCutAsync(skill, entry.renderCut) : null;
    return (atCut ?? (await this.#encoder.encodeSkillAsync(skill))).tokens;
  }

  /** The yes spellings' token ids, then the no spellings'. */
  #readIds(): Int32Array {
    const { yes, no } = this.#encoder.answers;
    const readIds = new Int32Array(yes.length + no.length);
    readIds.set(yes, 0);
    readIds.set(no, yes.length);
    return readIds;
  }

  /**
   * The exact token sequences the verdict scores for (context, skill): r(s) as the prefix, the
   * continuation (task, question, closing scaffolding) with the task's span in it, and the answer
   * token ids. For inspection and tests; {@link Router.route} uses the same.
   */
  async verdictInputs(context: RouteContext, skill: string): Promise<{ prefix: Int32Array; continuation: Int32Array; taskStart: number; taskEnd: number; yes: Int32Array; no: Int32Array }> {
    this.#check();
    const entry = this.#find(skill);
    if (!entry) throw new GavelError(`no installed skill ${skill}`, "SKILL_NOT_FOUND");
    const taskText = typeof context === "string" ? context : chatAsTask(context);
    const tail = this.#encoder.encodeVerdictTail(taskText, this.#taskBudget());
    return { prefix: await this.#skillPrefix(entry.id), continuation: tail.tokens, taskStart: tail.taskStart, taskEnd: tail.taskEnd, ...this.#encoder.answers };
  }

  /** The task tokens whose top-k held `skill`, with m_i(skill) and the skill token each matched. */
  #explain(skill: string, column: number, q: Queries, res: { m: Float32Array; argmax: Int32Array; handles: Int32Array }, k: number): Vote[] {
    const n = res.handles.length;
    const entry = this.#store.get(skill)!;
    const votes: Vote[] = [];
    for (let i = 0; i < q.tokens.length; i++) {
      const row = res.m.subarray(i * n, (i + 1) * n);
      const mine = row[column];
      let ahead = 0;
      for (let s = 0; s < n && ahead < k; s++) if (row[s] > mine || (row[s] === mine && s < column)) ahead++;
      if (ahead >= k) continue;
      const j = res.argmax[i * n + column];
      votes.push({
        position: i,
        token: this.model.tokenPiece(q.tokens[i]),
        m: mine,
        matched: j >= 0 ? this.model.tokenPiece(entry.keyTokens[j]) : "",
      });
    }
    return votes.sort((a, b) => b.m - a.m);
  }

  /** Commits and closes the bank (the model stays open: it is the caller's). Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#busy;
    this.#closed = true;
    this.#bank.clear();
    await this.#store.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
