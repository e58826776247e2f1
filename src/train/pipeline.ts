/**
 * `gavel train` end to end on a model: library and pairs → backbone states (cached on disk) → W_q and
 * W_s from random init (paper §3.2, appendix C) → optionally W_q alone against the ε-cover banks
 * (§3.3) → a projections GGUF.
 *
 * @module
 */
import { GavelError, invalidArgument } from "../errors.js";
import type { Model } from "../model/Model.js";
import { RenderEncoder } from "../render/encode.js";
import { modelFingerprint } from "../model/fingerprint.js";
import { coverFarthestFirstAsync, projectNormalize } from "../kernels/kernels.js";
import { defaultLayer, Projections, PROJECTION_DEFAULTS } from "../projections/projections.js";
import { loadSkills } from "../skills/index.js";
import { Bm25Index } from "../lexical/bm25.js";
import { excludePairs, readPairs, readTaskTexts, selfSupervisedPairs, splitValidation, trainingRender, type Pair } from "./pairs.js";
import { readLayerChoice } from "./layer.js";
import { StatesCache } from "./states-cache.js";
import { inOrder } from "../util/in-order.js";
import { runTraining, TRAIN_DEFAULTS, type RetrievalMetrics, type TrainingExample, type TrainProgress } from "./trainer.js";

/** Options of {@link trainProjections}. */
export interface TrainProjectionsOptions {
  /** Skill library: a JSONL(.gz) file or a folder of SKILL.md files. */
  library: string;
  /** Labelled pairs (JSONL of { query, gold_skill_ids }); or set `selfSupervised`. */
  pairs?: string;
  selfSupervised?: boolean;
  /** Output projections file. */
  out: string;
  /** ℓ* (default: `layerFile`'s choice, else floor(0.7 × nLayer)). */
  layer?: number;
  /** A `gavel layer` JSON (read with readLayerChoice, checked against the model). */
  layerFile?: string;
  dim?: number;
  steps?: number;
  lr?: number;
  batchTasks?: number;
  batchTokens?: number;
  negatives?: number;
  /** Negatives per task drawn from its BM25 look-alikes (default 0: all random). */
  hardNegatives?: number;
  /** In-batch negatives (see PackOptions.inBatch). */
  inBatch?: boolean;
  seed?: number;
  threads?: number;
  /** States cache root (default: none, states are recomputed each run). */
  cache?: string;
  /** Checkpoint path of the main phase (default `<out>.ckpt`; the fine-tune's is `<out>.finetune.ckpt`). */
  checkpoint?: string;
  checkpointEvery?: number;
  resume?: boolean;
  /** W_q fine-tune steps against the ε-cover banks (0: none). */
  finetuneSteps?: number;
  finetuneLr?: number;
  /** ε of the banks (default 0.83). */
  eps?: number;
  /** Skill ids or names that never give a query (nor a gold label). */
  exclude?: string[];
  /** A task file whose texts must never be queries (e.g. SWE-Skills-Bench tasks.jsonl). */
  excludeTasks?: string;
  /** Held-out fraction of the pairs for validation (default 0.05). */
  valFraction?: number;
  valEvery?: number;
  /** Most keyed tokens per skill (default 8,192, appendix C; capped by the context). */
  skillTokens?: number;
  /** Load only this many library entries. */
  limit?: number;
  trainedBy?: string;
  onProgress?: (p: TrainProgress) => void;
  /** Free-text notes (what was dropped, cache use, …). */
  onLog?: (line: string) => void;
  signal?: AbortSignal;
}

/** What {@link trainProjections} returns. */
export interface TrainProjectionsResult {
  projections: Projections;
  layer: number;
  skills: number;
  trainPairs: number;
  valPairs: number;
  /** Tokens of states held (skills' keyed tokens + queries' task tokens) and their f16 disk size. */
  stateTokens: number;
  cacheBytes: number;
  losses: number[];
  val?: RetrievalMetrics;
  finetuneVal?: RetrievalMetrics;
  tokensPerSec: number;
  stepsPerSec: number;
}

/** Trains projections for `model` (see the module comment). */
export async function trainProjections(model: Model, o: TrainProjectionsOptions): Promise<TrainProjectionsResult> {
  const log = o.onLog ?? (() => {});
  if (!o.pairs === !o.selfSupervised) throw invalidArgument("pass exactly one of pairs (a JSONL file) and selfSupervised");
  const seed = o.seed ?? 0;
  const { nEmbd, nLayer, contextSize } = model.info;
  const fp = await modelFingerprint(model);
  let layer = o.layer;
  if (o.layerFile !== undefined) {
    const choice = await readLayerChoice(o.layerFile, fp);
    if (layer !== undefined && layer !== choice.layer) throw invalidArgument(`--layer ${layer} contradicts ${o.layerFile} (layer ${choice.layer})`);
    layer = choice.layer;
  }
  layer ??= defaultLayer(nLayer);
  if (!Number.isInteger(layer) || layer < 0 || layer >= nLayer) throw new GavelError(`layer ${layer} is out of range (0..${nLayer - 1})`, "LAYER_OUT_OF_RANGE");
  const dim = o.dim ?? PROJECTION_DEFAULTS.dim;

  const { skills, failed } = await loadSkills(o.library, { limit: o.limit, signal: o.signal });
  if (failed.length) log(`${failed.length} library entries failed to load and are left out`);
  if (skills.length < 2) throw new GavelError("training needs at least two skills", "EMPTY_LIBRARY");

  let pairs: Pair[];
  if (o.pairs) {
    const r = await readPairs(o.pairs, skills);
    r.dropped.slice(0, 5).forEach(log);
    if (r.dropped.length > 5) log(`… ${r.dropped.length} pairs dropped in all (gold skills not in the library)`);
    pairs = r.pairs;
  } else pairs = selfSupervisedPairs(skills, seed);
  const taskTexts = o.excludeTasks ? await readTaskTexts(o.excludeTasks) : undefined;
  const ex = excludePairs(pairs, skills, { exclude: o.exclude, taskTexts });
  if (ex.excludedSkills || ex.excludedTasks) log(`excluded ${ex.excludedSkills} pairs of excluded skills and ${ex.excludedTasks} pairs equal to a task text`);
  const split = splitValidation(ex.pairs, o.valFraction ?? 0.05, seed);
  if (split.train.length === 0) throw invalidArgument("no training pair is left");

  // States: every skill's keyed tokens and every query's task tokens, at ℓ*.
  const skillTokens = Math.min(o.skillTokens ?? 8192, contextSize);
  const encoder = new RenderEncoder(model, skillTokens);
  const cache = await StatesCache.open(o.cache, model, layer);
  const skillStates: Float32Array[] = [];
  let stateTokens = 0;
  // Progress of the (slow, once) states pass: a line every ~5%.
  const every = (n: number) => Math.max(1, Math.round(n / 20));
  // Up to 4 skills in flight: while one skill's forward pass runs natively, the next ones render and
  // tokenize (off the JS thread, which on a GPU would otherwise bound the pass). States land in
  // library order.
  await inOrder(
    skills.entries(),
    { width: 4, beforeEach: () => { if (o.signal?.aborted) throw new GavelError("training aborted", "ABORTED"); } },
    async ([i, s]) => {
      if (i % every(skills.length) === 0) log(`states: skill ${i}/${skills.length}`);
      const enc = await encoder.encodeSkillAsync(trainingRender(s, !!o.selfSupervised));
      return cache.get(enc.tokens, enc.keyStart, enc.keyEnd);
    },
    (_, outcome) => {
      if (!outcome.ok) throw outcome.error;
      skillStates.push(outcome.value);
      stateTokens += outcome.value.length / nEmbd;
    },
  );
  const taskMax = Math.max(16, contextSize - 64);
  const texts = new Map<TrainingExample, string>(); // each example's query text, for hard-negative mining
  const toExamples = async (list: Pair[]): Promise<TrainingExample[]> => {
    const out: TrainingExample[] = [];
    for (const [i, p] of list.entries()) {
      if (o.signal?.aborted) throw new GavelError("training aborted", "ABORTED");
      if (i % every(list.length) === 0) log(`states: query ${i}/${list.length}`);
      const enc = encoder.encodeTask(p.query, taskMax);
      if (enc.taskEnd <= enc.taskStart || enc.tokens.length > contextSize) continue;
      const positives = p.positives.filter((i) => skillStates[i].length > 0);
      if (positives.length === 0) continue;
      const q = await cache.get(enc.tokens, enc.taskStart, enc.taskEnd);
      stateTokens += q.length / nEmbd;
      out.push({ query: q, positives });
      texts.set(out[out.length - 1], p.query);
    }
    return out;
  };
  const train = await toExamples(split.train);
  const val = await toExamples(split.val);
  if ((o.hardNegatives ?? 0) > 0) {
    const t = performance.now();
    const found = mineHardNegatives(train, texts, skills, HARD_POOL);
    log(`hard negatives: BM25 look-alikes for ${found} of ${train.length} train tasks (${((performance.now() - t) / 1000).toFixed(1)} s)`);
  }
  log(`states: ${skills.length} skills, ${train.length} train + ${val.length} val tasks, ${stateTokens} tokens at layer ${layer} (cache ${cache.stats.hits} hits, ${cache.stats.misses} computed; f16 on disk ≈ ${((stateTokens * nEmbd * 2) / 2 ** 20).toFixed(1)} MiB)`);
  const set = { nEmbd, skills: skillStates, train, val };

  const common = {
    dim, batchTasks: o.batchTasks, batchTokens: o.batchTokens, negatives: o.negatives, hardNegatives: o.hardNegatives, inBatch: o.inBatch, seed, threads: o.threads,
    checkpointEvery: o.checkpointEvery, resume: o.resume, valEvery: o.valEvery, onProgress: o.onProgress, signal: o.signal,
  };
  const ckpt = o.checkpoint ?? `${o.out}.ckpt`;
  const main = await runTraining(set, { ...common, steps: o.steps ?? 1000, lr: o.lr ?? TRAIN_DEFAULTS.lr, checkpoint: ckpt });
  let { wq } = main;
  const { ws } = main;
  let finetuneVal: RetrievalMetrics | undefined;
  const eps = o.eps ?? PROJECTION_DEFAULTS.eps;
  if ((o.finetuneSteps ?? 0) > 0) {
    // The banks the router would install with these W_s: ε-covers of each skill's unit keys.
    const keys: Float32Array[] = [];
    for (const st of skillStates) {
      if (st.length === 0) {
        keys.push(new Float32Array(0));
        continue;
      }
      const all = await projectNormalize(st, nEmbd, ws, dim);
      const kept = await coverFarthestFirstAsync(all, dim, eps);
      const k = new Float32Array(kept.length * dim);
      kept.forEach((j, i) => k.set(all.subarray(j * dim, (j + 1) * dim), i * dim));
      keys.push(k);
    }
    const ft = await runTraining(set, {
      ...common, phase: "finetune", keys, init: { wq, ws }, steps: o.finetuneSteps!,
      lr: o.finetuneLr ?? TRAIN_DEFAULTS.finetuneLr, checkpoint: `${o.out}.finetune.ckpt`,
    });
    wq = ft.wq;
    finetuneVal = ft.val;
  }
  const projections = new Projections({
    wq, ws, layer, model: fp, dim, tau: TRAIN_DEFAULTS.tau, eps,
    trainedBy: o.trainedBy ?? `gavel train (${o.selfSupervised ? "self-supervised" : "pairs"}, ${main.steps} steps, seed ${seed})`,
  });
  await projections.save(o.out);
  return {
    projections, layer, skills: skills.length, trainPairs: train.length, valPairs: val.length, stateTokens,
    cacheBytes: stateTokens * nEmbd * 2, losses: main.losses, val: main.val, finetuneVal,
    tokensPerSec: main.tokensPerSec, stepsPerSec: main.stepsPerSec,
  };
}


/** Hard negatives kept per task: BM25's best look-alikes, of which each step draws a few. */
const HARD_POOL = 20;

/**
 * Fills each example's `hard` list: the library skills BM25 ranks highest for its query text that are
 * neither a gold nor a copy of one (the same name or the same description: a public library holds
 * many copies of one skill, and training them apart would teach noise). Bodies are indexed up to
 * 4,000 characters. Returns how many examples got at least one.
 */
function mineHardNegatives(
  examples: readonly TrainingExample[],
  texts: ReadonlyMap<TrainingExample, string>,
  skills: readonly { name: string; description: string; body: string }[],
  pool: number,
): number {
  const index = new Bm25Index(skills.map((s, i) => ({ id: String(i), name: s.name, description: s.description, body: s.body.slice(0, 4000) })));
  const norm = (t: string) => t.trim().toLowerCase();
  let found = 0;
  for (const ex of examples) {
    const text = texts.get(ex);
    if (text === undefined) continue;
    const gold = new Set(ex.positives);
    const names = new Set(ex.positives.map((i) => norm(skills[i].name)));
    const descs = new Set(ex.positives.map((i) => norm(skills[i].description)).filter((d) => d !== ""));
    const hard: number[] = [];
    for (const hit of index.search(text, pool * 3)) {
      const i = Number(hit.id);
      if (gold.has(i) || names.has(norm(skills[i].name)) || descs.has(norm(skills[i].description))) continue;
      hard.push(i);
      if (hard.length === pool) break;
    }
    if (hard.length > 0) {
      ex.hard = hard;
      found++;
    }
  }
  return found;
}
