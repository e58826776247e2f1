/**
 * `gavel eval`: routes benchmark tasks with BM25, the glance, the full ruling and its two ablations,
 * and scores each by raw Hit@1 and R@20 (the benchmark's rules: ../shared/README.md).
 */
import { Bm25Index, type Bm25Options, GavelError, type Router } from "gavel-router";
import { abortedError, chooseByRuling, firstStageOrder, invalidArgument, type RulingParams } from "gavel-router/internal";
import { lexicalB, lexicalReadouts, type LexicalRecord } from "./lexical-fit.js";
import { readRoute, readRouter, type RouterReadouts } from "./readouts.js";
import { acceptedIds, hitAt1, LibraryIndex, recallAt, type LibraryEntry } from "./metrics.js";
import type { EvalTask } from "./tasks.js";

/**
 * The ranking methods. `gL` and `gV` are the ablations g + αL (γ = 0) and g + γV (α = 0) over the
 * same shortlist as `ruling` (with the route's own shortlist, the default: that shortlist; with a wide
 * pool: the Δ-shortlist at β = 0 replayed from it).
 */
export type EvalMethod = "bm25" | "glance" | "gB" | "ruling" | "rulingNoB" | "gL" | "gV";

/** Every method, in table order. */
export const EVAL_METHODS: readonly EvalMethod[] = ["bm25", "glance", "gB", "ruling", "rulingNoB", "gL", "gV"];

/**
 * How each method is labelled in tables. `bm25` is also B alone (B is a monotone map of BM25 within a
 * task); `gB` (the first stage g + βB, no verdict) and `rulingNoB` (the ruling at β = 0) need BM25 and
 * the router together; `ruling` is route()'s own ruling, with B when the projections' β > 0.
 */
export const METHOD_LABELS: Readonly<Record<EvalMethod, string>> = {
  bm25: "bm25",
  glance: "glance",
  gB: "g+βB (first stage)",
  ruling: "ruling (g+αL+γV+βB)",
  rulingNoB: "ruling without B (β=0)",
  gL: "g+αL",
  gV: "g+γV",
};

const ALIASES: Record<string, EvalMethod> = {
  bm25: "bm25",
  glance: "glance",
  g: "glance",
  ruling: "ruling",
  route: "ruling",
  gl: "gL",
  "g+αl": "gL",
  "g+al": "gL",
  "g+alphal": "gL",
  gv: "gV",
  gb: "gB",
  "g+βb": "gB",
  "g+bb": "gB",
  rulingnob: "rulingNoB",
  "ruling0": "rulingNoB",
  "g+γv": "gV",
  "g+gv": "gV",
  "g+gammav": "gV",
};

/** Parses a comma-separated method list (`bm25,glance,ruling,gL,gV`; `g+αL` and `g+aL` also name gL). */
export function parseMethods(spec: string): EvalMethod[] {
  const out: EvalMethod[] = [];
  for (const raw of spec.split(",")) {
    const name = raw.trim();
    if (name === "") continue;
    if (name.toLowerCase() === "all") return [...EVAL_METHODS];
    const m = ALIASES[name.toLowerCase()];
    if (!m) throw invalidArgument(`unknown method "${name}" (methods: ${EVAL_METHODS.join(", ")})`);
    if (!out.includes(m)) out.push(m);
  }
  if (out.length === 0) throw invalidArgument("no method given");
  return EVAL_METHODS.filter((m) => out.includes(m));
}

/** A library skill as eval reads it: what BM25 indexes and the gold rule compares. */
export interface EvalLibrarySkill extends LibraryEntry {
  body?: string;
  /** Never routed to (SKILL.md `disable-model-invocation`): BM25 leaves it out too, as the glance does. */
  disableModelInvocation?: boolean;
}

/** One per-query record: every read-out needed to score the methods again, and to calibrate. */
export interface PerQueryRecord extends RouterReadouts {
  id: string;
  batch?: string | number;
  /** The task's gold ids. */
  golds: string[];
  /** The ids that count as a hit (golds in the library and their identical copies). */
  accepted: string[];
  /** BM25's top k ids. */
  bm25?: string[];
  /** An off-domain prompt (no skill of the library serves it): scored for abstention, not for Hit@1. */
  offDomain?: boolean;
  /** BM25 over the library for the lexical expert B (`s` above is each entry's raw BM25). */
  lexical?: LexicalRecord;
  /** With BM25 and the router: the first stage g + βB's top k over the glance's list and `also`. */
  firstStage?: string[];
}

/** One row of the results table. */
export interface EvalRow {
  method: EvalMethod;
  label: string;
  /** Fraction of tasks whose committed (first) skill is accepted. */
  hitAt1: number;
  /**
   * Fraction of tasks with an accepted skill in the top k (k = 20). The ruling and its ablations
   * re-rank the glance's own top candidates, so their recall is the glance's, by definition.
   */
  recallAt20: number;
  /** The k of the recall (20 unless evaluate's `k` says otherwise). */
  k: number;
  /** Tasks scored. */
  n: number;
}

/** Progress of {@link evaluate}, after each task. */
export interface EvalProgress {
  done: number;
  total: number;
  task: string;
}

/** Options of {@link evaluate}. */
export interface EvaluateOptions {
  /** The router whose bank holds the library; needed by every method but bm25. */
  router?: Router;
  tasks: readonly EvalTask[];
  /** The library the tasks are routed against (several sources concatenated; ids unique). */
  library: readonly EvalLibrarySkill[];
  /** Default: every method when a router is given, else bm25. */
  methods?: readonly EvalMethod[];
  /** The k of R@k and the length of ranked lists kept per query (default 20). */
  k?: number;
  /**
   * The verdict's candidates. Absent (the default): the route's own shortlist: each task is routed
   * with `router.route(task)` (its first stage, shortlist, verdict and abstention, under the
   * projections' constants), so the verdict runs on exactly the skills the route gives it and `ruling`
   * is the route's choice. A number N: the wide pool of calibration studies: the glance's top N get a
   * verdict whatever Δ, and the ruling is replayed from them (`gavel calibrate` needs this to fit Δ).
   */
  pool?: number;
  /**
   * With `pool`: how many of BM25's leaders also get their g and a verdict from the router (default
   * 0), when BM25 and a router method run together: the records then replay a first stage g + βB or
   * the union of both experts' lists exactly.
   */
  lexicalPool?: number;
  /**
   * With `pool`: more skills, per task id, that get their g and a verdict beside the lexical pool
   * (with BM25 and a router method), e.g. BM25's leaders over a text the evaluating machine does not hold.
   */
  also?: ReadonlyMap<string, readonly string[]>;
  /** BM25 parameters, or an index already built over `library` (building one over 30K skills takes ~25 s). */
  bm25?: Bm25Options | Bm25Index;
  /**
   * Check that the bank holds every library skill, with the same name and description (default
   * true). A missing skill would silently lower every glance-based number.
   */
  checkInstalled?: boolean;
  /**
   * Records of an earlier, interrupted run (e.g. read back from its `--per-query` file): a task whose
   * record holds every read-out the methods need is not routed again, and its record joins the result.
   */
  previous?: readonly PerQueryRecord[];
  /**
   * Called with each new record as soon as its task is scored (awaited), so that a long run can keep
   * what it has done when it is stopped: `gavel eval --per-query` appends it to the file.
   */
  onRecord?: (record: PerQueryRecord) => void | Promise<void>;
  signal?: AbortSignal;
  onProgress?: (p: EvalProgress) => void;
}

/** What {@link evaluate} returns. */
export interface EvalResult {
  table: EvalRow[];
  perQuery: PerQueryRecord[];
  /** Ids of tasks skipped because none of their golds is in the library. */
  skipped: string[];
  /** Things worth knowing that did not stop the run (e.g. bank skills outside the library). */
  warnings: string[];
}

/**
 * Library skills the router's bank lacks, or holds with another name or description: eval refuses
 * to run over them. Also returns the bank's skills that are not in the library (the glance still
 * ranks those, so they are a warning).
 */
export function checkBank(router: Router, library: readonly LibraryEntry[]): { missing: string[]; differing: string[]; extra: string[] } {
  const installed = new Map(router.list().map((s) => [s.id, s]));
  const missing: string[] = [];
  const differing: string[] = [];
  const inLibrary = new Set<string>();
  for (const s of library) {
    inLibrary.add(s.id);
    const e = installed.get(s.id);
    if (!e) missing.push(s.id);
    else if (e.name !== s.name || e.description !== s.description) differing.push(s.id);
  }
  const extra = [...installed.keys()].filter((id) => !inLibrary.has(id));
  return { missing, differing, extra };
}

function sample(ids: string[], n = 5): string {
  return ids.slice(0, n).join(", ") + (ids.length > n ? `, … (${ids.length - n} more)` : "");
}

/**
 * Routes every task with each method and scores it. Tasks none of whose golds is in the library are
 * skipped (and listed). BM25 ranks the library; the glance, ruling and ablations rank the router's
 * bank, which must hold the library.
 *
 * By default each task is routed as a user's route is ({@link Router.route}: the verdict runs on the
 * route's own shortlist only), plus the glance's top k for R@k; `ruling` is the route's choice, and
 * `gL`/`gV`/`rulingNoB` rule the same shortlist again with γ = 0 / α = 0 / β = 0.
 * With `pool: N` the router is asked once ({@link Router.rank}): the glance's top k and the verdict for
 * the top N by g. `ruling` then replays route()'s Δ-shortlist and S = g + αL + γV from those
 * read-outs (the same arithmetic, so the same choice while the Δ-shortlist lies in the pool), and
 * `gL`/`gV` replay it with γ = 0 / α = 0.
 *
 * @throws GavelError `INVALID_ARGUMENT` for bad options or a model method without a router,
 *   `SKILL_NOT_FOUND` when the bank lacks library skills, `ABORTED` when `signal` fires.
 */
export async function evaluate(options: EvaluateOptions): Promise<EvalResult> {
  const plan = evaluationPlan(options);
  const { router, tasks, library, signal, onProgress } = options;
  const warnings = checkLibrary(options, plan);
  const index = new LibraryIndex(library);
  // BM25 scores with the router's lexical constants (k1, b) when there is a router and no options
  // were given, so `bm25`, B and the lexical pool read the same expert the route does.
  const lexicalParams = options.bm25 ?? (router ? { k1: router.projections.lexicalK1, b: router.projections.lexicalB } : undefined);
  const bm25 = plan.methods.includes("bm25") ? bm25Over(library, lexicalParams, warnings) : undefined;
  const maxShortlist = router?.projections.maxShortlist ?? 0;
  const verdictTop = plan.pool === "route" ? 0 : plan.pool;
  const p = router?.projections;
  // the ruling as route() rules: with β when BM25 runs beside the router (B known), else at β = 0
  const ruling = p ? { alpha: p.alpha, gamma: p.gamma, delta: p.delta, beta: plan.methods.includes("bm25") ? p.beta : 0, maxShortlist } : undefined;

  const perQuery: PerQueryRecord[] = [];
  const skipped: string[] = [];
  const scored = tasks.filter((t) => {
    if (t.off_domain || acceptedIds(t.gold_skill_ids, index).size > 0) return true;
    skipped.push(t.id);
    return false;
  });
  const reusable = reusableRecords(options.previous, { bm25: !!bm25, ...plan }, maxShortlist);
  const bm25Row = bm25 && plan.needRouter ? new Map(bm25.ids.map((id, i) => [id, i])) : undefined;
  let done = 0;
  for (const task of scored) {
    if (signal?.aborted) throw abortedError("evaluate", signal);
    const earlier = reusable.get(task.id);
    if (earlier) {
      perQuery.push(earlier);
      onProgress?.({ done: ++done, total: scored.length, task: task.id });
      continue;
    }
    const accepted = acceptedIds(task.gold_skill_ids, index);
    const rec: PerQueryRecord = { id: task.id, ...(task.batch !== undefined ? { batch: task.batch } : {}), golds: [...task.gold_skill_ids], accepted: [...accepted], ...(task.off_domain ? { offDomain: true } : {}) };
    const lexTop = bm25 ? bm25.search(task.text, Math.max(plan.k, plan.lexicalPool)).map((h) => h.id) : [];
    if (bm25) rec.bm25 = lexTop.slice(0, plan.k);
    const given = plan.lexicalPool > 0 || options.also ? options.also?.get(task.id) ?? [] : [];
    const also = [...new Set([...given, ...lexTop.slice(0, plan.lexicalPool)])];
    if (plan.needRouter && plan.needVerdict && plan.pool === "route") await readRoute(rec, router!, task.text, { k: plan.k, ruling: ruling!, signal });
    else if (plan.needRouter) await readRouter(rec, router!, task.text, { k: plan.k, needVerdict: plan.needVerdict, ruling: ruling!, verdictTop, also, signal });
    if (bm25Row) addLexical(rec, bm25!, bm25Row, task.text, ruling!, router!.projections.lexicalTemperature, plan.k);
    perQuery.push(rec);
    await options.onRecord?.(rec);
    onProgress?.({ done: ++done, total: scored.length, task: task.id });
  }
  return { table: scoreRecords(perQuery, plan.methods, plan.k), perQuery, skipped, warnings };
}

/**
 * With both BM25 and the router, the record also keeps the lexical expert's read-outs:
 * each glance and verdict entry's raw BM25 `s` and the `lexical` part, which `gavel calibrate` reads
 * to fit β and T.
 */
function addLexical(rec: PerQueryRecord, index: Bm25Index, row: ReadonlyMap<string, number>, text: string, ruling: RulingParams, temperature: number, k: number): void {
  const { lexical, scoreOf } = lexicalReadouts(index, row, text, rec.accepted);
  rec.lexical = lexical;
  if (rec.glance) rec.glance = rec.glance.map((c) => ({ ...c, s: scoreOf(c.skill) }));
  if (rec.also) rec.also = rec.also.map((c) => ({ ...c, s: scoreOf(c.skill) }));
  if (rec.verdict) rec.verdict = rec.verdict.map((c) => ({ ...c, s: scoreOf(c.skill) }));
  // The rows with B: the first stage over what the record knows g of, and route()'s ruling with β
  const B = (s: number | undefined) => lexicalB(rec.lexical, s, temperature);
  const known = [...(rec.glance ?? []), ...(rec.also ?? [])].map((c) => ({ ...c, B: B(c.s) }));
  rec.firstStage = firstStageOrder(known, ruling.beta ?? 0).slice(0, k).map((c) => c.skill);
  // (the route's own ruling already weighed its B: only a replayed one is ruled again with β)
  if (rec.verdict && rec.chosen && rec.pool !== "route") {
    rec.chosen.rulingNoB = rec.chosen.ruling;
    rec.chosen.ruling = chooseByRuling(rec.verdict.map((c) => ({ ...c, B: B(c.s) })), ruling);
  }
}

/** What an evaluation runs: its methods, its k, and which read-outs they need. */
interface EvaluationPlan {
  methods: EvalMethod[];
  k: number;
  /** Some method reads the router (every method but bm25). */
  needRouter: boolean;
  /** Some method reads the verdict (the ruling and its ablations). */
  needVerdict: boolean;
  /** BM25's leaders that also get g and a verdict (0 unless BM25 and the router both run). */
  lexicalPool: number;
  /** The verdict's candidates: the route's own shortlist, or the glance's top N whatever Δ. */
  pool: "route" | number;
}

/** Checks the options and settles the methods (default: every one with a router, else bm25) and k. */
function evaluationPlan(options: EvaluateOptions): EvaluationPlan {
  if (typeof options !== "object" || options === null) throw invalidArgument("evaluate needs an options object: { tasks, library, router?, methods? }");
  const { router, tasks, library } = options;
  if (!Array.isArray(tasks)) throw invalidArgument("evaluate: tasks must be an array");
  if (!Array.isArray(library)) throw invalidArgument("evaluate: library must be an array of skills");
  if (options.methods !== undefined) {
    if (!Array.isArray(options.methods)) throw invalidArgument(`evaluate: methods must be an array of ${EVAL_METHODS.join(", ")}`);
    for (const m of options.methods) if (!(EVAL_METHODS as readonly unknown[]).includes(m)) throw invalidArgument(`evaluate: unknown method ${JSON.stringify(m)} (methods: ${EVAL_METHODS.join(", ")})`);
  }
  const methods = options.methods ? EVAL_METHODS.filter((m) => options.methods!.includes(m)) : router ? [...EVAL_METHODS] : (["bm25"] as EvalMethod[]);
  if (methods.length === 0) throw invalidArgument("evaluate: no method");
  const k = options.k ?? 20;
  if (!Number.isInteger(k) || k < 1) throw invalidArgument("evaluate: k must be a positive integer");
  const needRouter = methods.some((m) => m !== "bm25");
  const needVerdict = methods.some((m) => m === "ruling" || m === "rulingNoB" || m === "gL" || m === "gV");
  const needsB = methods.filter((m) => m === "gB");
  if (needsB.length && !methods.includes("bm25")) throw invalidArgument("evaluate: method gB (g + βB) needs bm25 among the methods (B is read from it)");
  if (needRouter && !router) throw invalidArgument(`evaluate: methods ${methods.filter((m) => m !== "bm25").join(", ")} need a router`);
  const pool = options.lexicalPool ?? 0;
  if (!Number.isInteger(pool) || pool < 0 || pool > 1000) throw invalidArgument("evaluate: lexicalPool must be an integer in [0, 1000]");
  const lexicalPool = needRouter && methods.includes("bm25") ? pool : 0;
  const wide = options.pool;
  if (wide !== undefined && (!Number.isInteger(wide) || wide < 1 || wide > 1024)) throw invalidArgument("evaluate: pool must be an integer in [1, 1024]");
  if (wide === undefined && (pool > 0 || options.also)) throw invalidArgument("evaluate: lexicalPool and also widen the verdict's pool: give pool (the glance's top N) too");
  return { methods, k, needRouter, needVerdict, lexicalPool, pool: wide ?? "route" };
}

/**
 * Library ids must be unique and, when the router is read (and `checkInstalled` is not false), the
 * bank must hold every library skill as it is. Returns the warnings worth giving.
 */
function checkLibrary(options: EvaluateOptions, plan: EvaluationPlan): string[] {
  const { router, library } = options;
  const warnings: string[] = [];
  const ids = new Set<string>();
  for (const s of library) {
    if (ids.has(s.id)) throw invalidArgument(`evaluate: library id ${s.id} appears twice`);
    ids.add(s.id);
  }
  if (plan.needRouter && options.checkInstalled !== false) {
    const { missing, differing, extra } = checkBank(router!, library);
    if (missing.length > 0 || differing.length > 0) {
      const parts: string[] = [];
      if (missing.length) parts.push(`${missing.length} of the ${library.length} library skills are not installed in the bank (${sample(missing)})`);
      if (differing.length) parts.push(`${differing.length} are installed with another name or description (${sample(differing)})`);
      throw new GavelError(`${parts.join("; ")}: install the library first (gavel install <library> --bank ${router!.bankDir})`, "SKILL_NOT_FOUND");
    }
    if (extra.length) warnings.push(`the bank holds ${extra.length} skills outside the library (${sample(extra)}); the glance ranks them too`);
  }
  return warnings;
}

/** BM25 over the routable library skills: the index given (warning when it was built elsewhere), or a new one. */
function bm25Over(library: readonly EvalLibrarySkill[], given: EvaluateOptions["bm25"], warnings: string[]): Bm25Index {
  const routable = library.filter((s) => !s.disableModelInvocation);
  if (!(given instanceof Bm25Index)) return new Bm25Index(routable, given);
  if (given.size !== routable.length) warnings.push("the BM25 index given was not built over this library");
  return given;
}

/**
 * Earlier records that hold what every asked method reads, by task id. A record whose verdict was
 * read from another pool (the route's shortlist against a wide pool, or another N) is not reused;
 * records without `pool` were made with the wide pool of the projections' maxShortlist.
 */
function reusableRecords(previous: readonly PerQueryRecord[] | undefined, need: { bm25: boolean; needRouter: boolean; needVerdict: boolean; pool: "route" | number }, maxShortlist: number): Map<string, PerQueryRecord> {
  const reusable = new Map<string, PerQueryRecord>();
  for (const r of previous ?? []) {
    const samePool = !need.needVerdict || (r.pool ?? maxShortlist) === need.pool;
    const complete = samePool && (!need.bm25 || Array.isArray(r.bm25)) && (!need.needRouter || Array.isArray(r.glance)) && (!need.needVerdict || Array.isArray(r.verdict));
    if (complete) reusable.set(r.id, r);
  }
  return reusable;
}

/**
 * The results table from per-query records (also those read back from a `--per-query` file).
 * A method is scored over the records that hold its read-outs.
 */
export function scoreRecords(records: readonly PerQueryRecord[], methods: readonly EvalMethod[] = EVAL_METHODS, k = 20): EvalRow[] {
  const rows: EvalRow[] = [];
  for (const method of methods) {
    let hits = 0;
    let recall = 0;
    let n = 0;
    for (const r of records) {
      if (r.offDomain) continue;
      const accepted = new Set(r.accepted);
      if (method === "bm25" || method === "glance" || method === "gB") {
        const ranked = method === "bm25" ? r.bm25 : method === "gB" ? r.firstStage : r.glance?.map((c) => c.skill);
        if (!ranked) continue;
        hits += hitAt1(ranked, accepted);
        recall += recallAt(ranked, accepted, k);
      } else {
        if (!r.chosen || !(method in r.chosen) || !r.glance) continue;
        const chosen = r.chosen[method];
        hits += chosen != null && accepted.has(chosen) ? 1 : 0;
        // The verdict only re-orders the glance's leading candidates: recall is the glance's.
        recall += recallAt(r.glance, accepted, k);
      }
      n++;
    }
    rows.push({ method, label: METHOD_LABELS[method], hitAt1: n ? hits / n : 0, recallAt20: n ? recall / n : 0, k, n });
  }
  return rows;
}
