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
import { modelFingerprint, type ModelFingerprint } from "../model/fingerprint.js";
import { coverKeys } from "../route/index.js";
import { defaultLayer, Projections, PROJECTION_DEFAULTS } from "../projections/projections.js";
import { loadSkills, type Skill } from "../skills/index.js";
import { Bm25Index } from "../lexical/bm25.js";
import { excludePairs, readPairs, readTaskTexts, selfSupervisedPairs, splitValidation, trainingRender, type Pair } from "./pairs.js";
import { readLayerChoice } from "./layer.js";
import { StatesCache } from "./states-cache.js";
import { inOrder } from "../util/in-order.js";
import { checkLayer } from "../util/validate.js";
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
  const { nEmbd } = model.info;
  const fp = await modelFingerprint(model);
  const layer = await resolveLayer(model, o, fp);
  const dim = o.dim ?? PROJECTION_DEFAULTS.dim;
  const skills = await loadLibrary(o, log);
  const split = await trainingPairs(o, skills, seed, log);
  const states = await computeStates(model, o, layer, skills, split, log);
  const set = { nEmbd, skills: states.skills, train: states.train, val: states.val };

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
    const keys = await installedKeys(states.skills, nEmbd, { ws, dim, eps });
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
  const { stateTokens } = states;
  return {
    projections, layer, skills: skills.length, trainPairs: states.train.length, valPairs: states.val.length, stateTokens,
    cacheBytes: stateTokens * nEmbd * 2, losses: main.losses, val: main.val, finetuneVal,
    tokensPerSec: main.tokensPerSec, stepsPerSec: main.stepsPerSec,
  };
}

/** ℓ*: the option, else `layerFile`'s choice (they must agree when both are given), else the default. */
async function resolveLayer(model: Model, o: TrainProjectionsOptions, fp: ModelFingerprint): Promise<number> {
  const { nLayer } = model.info;
  let layer = o.layer;
  if (o.layerFile !== undefined) {
    const choice = await readLayerChoice(o.layerFile, fp);
    if (layer !== undefined && layer !== choice.layer) throw invalidArgument(`--layer ${layer} contradicts ${o.layerFile} (layer ${choice.layer})`);
    layer = choice.layer;
  }
  layer ??= defaultLayer(nLayer);
  checkLayer(layer, nLayer);
  return layer;
}

/** The skill library; entries that fail to load are left out (and logged). */
async function loadLibrary(o: TrainProjectionsOptions, log: (line: string) => void): Promise<Skill[]> {
  const { skills, failed } = await loadSkills(o.library, { limit: o.limit, signal: o.signal });
  if (failed.length) log(`${failed.length} library entries failed to load and are left out`);
  if (skills.length < 2) throw new GavelError("training needs at least two skills", "EMPTY_LIBRARY");
  return skills;
}

/** The labelled (or self-supervised) pairs, exclusions applied, split into train and validation. */
async function trainingPairs(o: TrainProjectionsOptions, skills: readonly Skill[], seed: number, log: (line: string) => void): Promise<{ train: Pair[]; val: Pair[] }> {
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
  return split;
}

/** Backbone states at ℓ* of every skill's keyed tokens and every kept example's task tokens. */
interface StatesPass {
  skills: Float32Array[];
  train: TrainingExample[];
  val: TrainingExample[];
  /** Tokens of states held, skills and queries together. */
  stateTokens: number;
}

/** A progress line every ~5% of a (slow, once) states pass. */
function every(n: number): number {
  return Math.max(1, Math.round(n / 20));
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new GavelError("training aborted", "ABORTED");
}

/**
 * The states pass: skills' keyed tokens, then the train and validation queries' task tokens, all at ℓ*
 * (cached on disk when `o.cache` is set); hard negatives mined when asked.
 */
async function computeStates(model: Model, o: TrainProjectionsOptions, layer: number, skills: readonly Skill[], split: { train: Pair[]; val: Pair[] }, log: (line: string) => void): Promise<StatesPass> {
  const { nEmbd, contextSize } = model.info;
  const skillTokens = Math.min(o.skillTokens ?? 8192, contextSize);
  const encoder = new RenderEncoder(model, skillTokens);
  const cache = await StatesCache.open(o.cache, model, layer);
  const skillStates = await computeSkillStates(encoder, cache, skills, o, log);
  const pass: StatesPass = { skills: skillStates, train: [], val: [], stateTokens: skillStates.reduce((n, st) => n + st.length / nEmbd, 0) };
  const texts = new Map<TrainingExample, string>(); // each example's query text, for hard-negative mining
  const toExamples = async (list: Pair[]): Promise<TrainingExample[]> => {
    const out: TrainingExample[] = [];
    for (const [i, p] of list.entries()) {
      checkAborted(o.signal);
      if (i % every(list.length) === 0) log(`states: query ${i}/${list.length}`);
      const ex = await queryExample(encoder, cache, contextSize, skillStates, p);
      if (!ex) continue;
      pass.stateTokens += ex.query.length / nEmbd;
      out.push(ex);
      texts.set(ex, p.query);
    }
    return out;
  };
  pass.train = await toExamples(split.train);
  pass.val = await toExamples(split.val);
  if ((o.hardNegatives ?? 0) > 0) {
    const t = performance.now();
    const found = mineHardNegatives(pass.train, texts, skills, HARD_POOL);
    log(`hard negatives: BM25 look-alikes for ${found} of ${pass.train.length} train tasks (${((performance.now() - t) / 1000).toFixed(1)} s)`);
  }
  log(`states: ${skills.length} skills, ${pass.train.length} train + ${pass.val.length} val tasks, ${pass.stateTokens} tokens at layer ${layer} (cache ${cache.stats.hits} hits, ${cache.stats.misses} computed; f16 on disk ≈ ${((pass.stateTokens * nEmbd * 2) / 2 ** 20).toFixed(1)} MiB)`);
  return pass;
}

/** Every skill's keyed-token states at ℓ*, in library order. */
async function computeSkillStates(encoder: RenderEncoder, cache: StatesCache, skills: readonly Skill[], o: TrainProjectionsOptions, log: (line: string) => void): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  // Up to 4 skills in flight: while one skill's forward pass runs natively, the next ones render and
  // tokenize (off the JS thread, which on a GPU would otherwise bound the pass). States land in
  // library order.
  await inOrder(
    skills.entries(),
    { width: 4, beforeEach: () => checkAborted(o.signal) },
    async ([i, s]) => {
      if (i % every(skills.length) === 0) log(`states: skill ${i}/${skills.length}`);
      const enc = await encoder.encodeSkillAsync(trainingRender(s, !!o.selfSupervised));
      return cache.get(enc.tokens, enc.keyStart, enc.keyEnd);
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
async function queryExample(encoder: RenderEncoder, cache: StatesCache, contextSize: number, skillStates: readonly Float32Array[], p: Pair): Promise<TrainingExample | undefined> {
  const enc = encoder.encodeTask(p.query, Math.max(16, contextSize - 64));
  if (enc.taskEnd <= enc.taskStart || enc.tokens.length > contextSize) return undefined;
  const positives = p.positives.filter((i) => skillStates[i].length > 0);
  if (positives.length === 0) return undefined;
  return { query: await cache.get(enc.tokens, enc.taskStart, enc.taskEnd), positives };
}

/** The keys the router would install for each skill's states under these W_s and ε (see route's coverKeys). */
async function installedKeys(skillStates: readonly Float32Array[], nEmbd: number, p: { ws: Float32Array; dim: number; eps: number }): Promise<Float32Array[]> {
  const keys: Float32Array[] = [];
  for (const st of skillStates) keys.push((await coverKeys(st, nEmbd, p)).keys);
  return keys;
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
