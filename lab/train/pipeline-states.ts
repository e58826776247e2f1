/**
 * The states pass of `gavel train` (pipeline.ts): every skill's keyed tokens and every kept query's
 * task tokens run through the model to ℓ* once (cached on disk when asked), the pseudo-queries' copied
 * characters mapped to masked rows of their positive, twins attached, and BM25 look-alikes mined.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { GavelError, type Model, type Skill } from "gavel-router";
import { inOrder, RenderEncoder, StatesCache, writeFileDurable } from "gavel-router/internal";
import type { TrainingExample } from "./batch.js";
import { keptRows } from "./batch.js";
import { mineBm25Negatives, twinsOf } from "./hard-negatives.js";
import { trainingRender, type Pair } from "./pairs.js";
import { spanRows } from "./spans.js";

/** What the states pass needs of the pipeline's options. */
export interface StatesOptions {
  /** Skill renders without their description (the legacy self-supervised mode). */
  noDescription: boolean;
  skillTokens?: number;
  cache?: string;
  hardNegatives?: number;
  signal?: AbortSignal;
  /** Extra instances of the model that compute states beside it (see StatesCache.addWorkers). */
  statesWorkers?: readonly Model[];
  /**
   * Tokenize only: derive the masks and BM25 look-alikes into the cache's prepared file from the row
   * counts, with no forward pass (a CPU machine prepares what a GPU call would spend minutes on).
   * The pass comes back without states.
   */
  prepareOnly?: boolean;
}

/** Backbone states at ℓ* of every skill's keyed tokens and every kept example's task tokens. */
export interface StatesPass {
  skills: Float32Array[];
  train: TrainingExample[];
  val: TrainingExample[];
  /** Tokens of states held, skills and queries together. */
  stateTokens: number;
  /** Queries dropped because their mask would leave too little of the positive. */
  overMasked: number;
  /** The prepared file (masks, BM25 lists) beside the cached states, when there is a cache. */
  prepared?: string;
}

/** A progress line every ~5% of a (slow, once) states pass. */
function every(n: number): number {
  return Math.max(1, Math.round(n / 20));
}

/** @throws GavelError `ABORTED` once `signal` is aborted. */
export function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new GavelError("training aborted", "ABORTED");
}

/** Hard negatives kept per task: BM25's best look-alikes, of which each step draws a few. */
const HARD_POOL = 20;

/** A mask must leave at least this share of the positive's rows (and 4 rows), or the query is dropped. */
export const MIN_KEPT_SHARE = 0.2;

/**
 * The states pass: skills' keyed tokens, then the train and validation queries' task tokens, all at ℓ*
 * (cached on disk when `o.cache` is set); masks, twins, hard negatives mined when asked.
 */
export async function computeStates(model: Model, o: StatesOptions, layer: number, skills: readonly Skill[], split: { train: Pair[]; val: Pair[] }, log: (line: string) => void): Promise<StatesPass> {
  const { nEmbd, contextSize } = model.info;
  const t0 = performance.now();
  const at = () => `${((performance.now() - t0) / 1000).toFixed(1)} s`;
  const skillTokens = Math.min(o.skillTokens ?? 8192, contextSize);
  const encoder = new RenderEncoder(model, skillTokens);
  const cache = await StatesCache.open(o.cache, model, layer);
  if (o.statesWorkers?.length) await cache.addWorkers(o.statesWorkers);
  // Passes in flight: 4 per model, so the JS thread renders and tokenizes while each model decodes.
  const width = 4 * cache.workers;
  const skillStates = await computeSkillStates(encoder, cache, skills, o, (line) => log(`${line} (${at()})`), width);
  // Rows per skill: all the masks and the kept-query screen need (a prepare-only pass has no states).
  const rows = skillStates.map((st) => (st instanceof Float32Array ? st.length / nEmbd : st));
  const states = o.prepareOnly ? [] : (skillStates as Float32Array[]);
  const pass: StatesPass = { skills: states, train: [], val: [], stateTokens: rows.reduce((n, r) => n + r, 0), overMasked: 0 };
  // Masks and BM25's hard negatives cost minutes at 30K skills (a tokenization per span edge; a BM25
  // query per task) and depend only on the inputs: kept beside the states, a resumed call reads them.
  const prepared = await PreparedFile.open(cache.dir, skills, split, o);
  pass.prepared = prepared.path;
  const allPairs = [...split.train, ...split.val];
  let masks: Map<Pair, number[]>;
  if (prepared.data.masks?.length === allPairs.length) {
    masks = new Map();
    prepared.data.masks.forEach((r, i) => r && masks.set(allPairs[i], r));
    log(`states: masks read from the cache (${at()})`);
  } else {
    masks = await maskRows(encoder, skills, rows, allPairs, o);
    await prepared.save({ masks: allPairs.map((p) => masks.get(p) ?? null) });
    log(`states: masks mapped (${at()})`);
  }
  const twins = twinsOf(skills);
  const texts = new Map<TrainingExample, string>(); // each example's query text, for hard-negative mining
  // Up to `width` queries in flight, as the skills below: a query's forward pass runs natively while the
  // next ones tokenize; examples land in list order, so the result is the same as one at a time.
  const toExamples = async (list: Pair[]): Promise<TrainingExample[]> => {
    const out: TrainingExample[] = [];
    await inOrder(
      list.entries(),
      { width, beforeEach: () => checkAborted(o.signal) },
      async ([i, p]) => {
        if (i % every(list.length) === 0) log(`states: query ${i}/${list.length} (${at()})`);
        const ranges = masks.get(p);
        if (ranges && !enoughLeft(rows[p.positives[0]], ranges)) return { p, overMasked: true };
        return { p, ranges, ex: await queryExample(encoder, cache, contextSize, rows, p, !!o.prepareOnly) };
      },
      (_, outcome) => {
        if (!outcome.ok) throw outcome.error;
        const { p, ranges, ex, overMasked } = outcome.value;
        if (overMasked) {
          pass.overMasked++;
          return;
        }
        if (!ex) return;
        if (ranges?.length) ex.mask = { skill: p.positives[0], ranges };
        const tw = [...new Set(ex.positives.flatMap((g) => twins.get(g) ?? []))].filter((t) => !ex.positives.includes(t));
        if (tw.length) ex.twins = tw;
        pass.stateTokens += ex.query.length / nEmbd; // 0 in a prepare-only pass (no query states)
        out.push(ex);
        texts.set(ex, p.query);
      },
    );
    return out;
  };
  pass.train = await toExamples(split.train);
  pass.val = await toExamples(split.val);
  if ((o.hardNegatives ?? 0) > 0) await attachHardNegatives(pass.train, texts, skills, prepared, log);
  if (pass.overMasked) log(`${pass.overMasked} queries dropped: their copied text covers over ${100 - MIN_KEPT_SHARE * 100}% of their skill's keyed tokens`);
  log(`states: ${skills.length} skills, ${pass.train.length} train + ${pass.val.length} val tasks, ${pass.stateTokens} tokens at layer ${layer} (cache ${cache.stats.hits} hits, ${cache.stats.misses} computed; f16 on disk ≈ ${((pass.stateTokens * nEmbd * 2) / 2 ** 20).toFixed(1)} MiB)`);
  return pass;
}

/** BM25's look-alikes for every train task: read from the prepared file, else mined and kept there. */
async function attachHardNegatives(train: TrainingExample[], texts: ReadonlyMap<TrainingExample, string>, skills: readonly Skill[], prepared: PreparedFile, log: (line: string) => void): Promise<void> {
  const t = performance.now();
  const cached = prepared.data.hard;
  if (cached && cached.length === train.length) {
    cached.forEach((h, i) => h && (train[i].hard = h));
    log(`hard negatives: BM25 look-alikes read from the cache for ${cached.filter(Boolean).length} of ${train.length} train tasks`);
  } else {
    const found = mineBm25Negatives(train, texts, skills, HARD_POOL);
    await prepared.save({ hard: train.map((ex) => ex.hard ?? null) });
    log(`hard negatives: BM25 look-alikes for ${found} of ${train.length} train tasks (${((performance.now() - t) / 1000).toFixed(1)} s)`);
  }
}

/** Whether a mask leaves enough of a positive of `rows` rows ({@link MIN_KEPT_SHARE}, at least 4 rows or all). */
function enoughLeft(rows: number, ranges: readonly number[]): boolean {
  if (ranges.length === 0) return true;
  const kept = keptRows(rows, ranges)?.length ?? 0;
  return kept >= Math.min(rows, Math.max(4, Math.ceil(MIN_KEPT_SHARE * rows)));
}

/** Per pair with source spans, the masked rows of its positive (grouped by skill: one content tokenization each). */
async function maskRows(encoder: RenderEncoder, skills: readonly Skill[], skillRows: readonly number[], pairs: readonly Pair[], o: StatesOptions): Promise<Map<Pair, number[]>> {
  const bySkill = new Map<number, Pair[]>();
  for (const p of pairs) {
    if (!p.spans?.length) continue;
    const s = p.positives[0];
    const list = bySkill.get(s);
    if (list) list.push(p);
    else bySkill.set(s, [p]);
  }
  const out = new Map<Pair, number[]>();
  for (const [s, list] of bySkill) {
    checkAborted(o.signal);
    const rows = skillRows[s];
    const ranges = await spanRows(encoder, trainingRender(skills[s], o.noDescription), list.map((p) => p.spans!), rows);
    list.forEach((p, i) => out.set(p, ranges[i]));
  }
  return out;
}

/** Every skill's keyed-token states at ℓ*, in library order (a prepare-only pass: their row counts). */
async function computeSkillStates(encoder: RenderEncoder, cache: StatesCache, skills: readonly Skill[], o: StatesOptions, log: (line: string) => void, width: number): Promise<(Float32Array | number)[]> {
  const out: (Float32Array | number)[] = [];
  // Up to `width` skills in flight (4 a model): while one skill's forward pass runs natively, the next ones render and
  // tokenize (off the JS thread, which on a GPU would otherwise bound the pass). States land in
  // library order.
  await inOrder(
    skills.entries(),
    { width, beforeEach: () => checkAborted(o.signal) },
    async ([i, s]) => {
      if (i % every(skills.length) === 0) log(`states: skill ${i}/${skills.length}`);
      const enc = await encoder.encodeSkillAsync(trainingRender(s, o.noDescription));
      return o.prepareOnly ? enc.keyEnd - enc.keyStart : cache.get(enc.tokens, enc.keyStart, enc.keyEnd);
    },
    (_, outcome) => {
      if (!outcome.ok) throw outcome.error;
      out.push(outcome.value);
    },
  );
  return out;
}

/**
 * One pair as a training example: its task tokens' states, and the positives that have keyed tokens.
 * Undefined when the task has no tokens, does not fit the context, or no positive has states.
 */
async function queryExample(encoder: RenderEncoder, cache: StatesCache, contextSize: number, skillRows: readonly number[], p: Pair, shapesOnly: boolean): Promise<TrainingExample | undefined> {
  const enc = encoder.encodeTask(p.query, Math.max(16, contextSize - 64));
  if (enc.taskEnd <= enc.taskStart || enc.tokens.length > contextSize) return undefined;
  const positives = p.positives.filter((i) => skillRows[i] > 0);
  if (positives.length === 0) return undefined;
  return { query: shapesOnly ? new Float32Array(0) : await cache.get(enc.tokens, enc.taskStart, enc.taskEnd), positives };
}

/** What {@link PreparedFile} keeps: per pair (train then val) its masked rows, per train task its BM25 list. */
interface PreparedData {
  masks?: (number[] | null)[];
  hard?: (number[] | null)[];
}

/**
 * The states pass's derived inputs, in `<cache>/prepared-<key>.json`, where the key hashes everything
 * they depend on (the skills' training renders, the pairs with their spans, the options that shape
 * them; the folder already keys the model and layer). Nothing is kept without a cache folder.
 */
class PreparedFile {
  private constructor(
    readonly path: string | undefined,
    readonly data: PreparedData,
  ) {}

  static async open(dir: string | undefined, skills: readonly Skill[], split: { train: Pair[]; val: Pair[] }, o: StatesOptions): Promise<PreparedFile> {
    if (!dir) return new PreparedFile(undefined, {});
    const h = createHash("sha256").update(JSON.stringify({ v: 1, noDescription: o.noDescription, skillTokens: o.skillTokens ?? null, pool: HARD_POOL, minKept: MIN_KEPT_SHARE }));
    for (const s of skills) h.update(JSON.stringify(trainingRender(s, o.noDescription)));
    for (const part of [split.train, split.val]) {
      h.update("|");
      for (const p of part) h.update(JSON.stringify([p.query, p.positives, p.spans ?? null]));
    }
    const path = join(dir, `prepared-${h.digest("hex").slice(0, 32)}.json`);
    let data: PreparedData = {};
    try {
      const parsed: unknown = JSON.parse(await readFile(path, "utf8"));
      if (parsed && typeof parsed === "object") data = parsed as PreparedData;
    } catch {
      // absent or damaged: computed afresh and rewritten
    }
    return new PreparedFile(path, data);
  }

  /** Merges `part` in and rewrites the file atomically (a cache: no fsync). */
  async save(part: PreparedData): Promise<void> {
    Object.assign(this.data, part);
    if (this.path) await writeFileDurable(this.path, JSON.stringify(this.data), { sync: false });
  }
}
