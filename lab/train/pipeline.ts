/**
 * `gavel train` end to end on a model: library and pairs (labelled, or pseudo-queries generated from
 * the skills) → backbone states (cached on disk) → W_q and W_s from random init (paper §3.2, appendix
 * C) → optionally W_q alone against the ε-cover banks (§3.3) → a projections GGUF. Both phases
 * checkpoint and resume, so the schedule can span several time-limited processes (`stopAfterSeconds`).
 *
 * @module
 */
import { stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { GavelError, loadSkills, type Model, modelFingerprint, type ModelFingerprint, PROJECTION_DEFAULTS, Projections, type Skill } from "gavel-router";
import { checkLayer, coverKeys, defaultLayer, inOrder, invalidArgument, threadPoolSize } from "gavel-router/internal";
import { excludePairs, queryPairs, readPairs, readTaskTexts, selfSupervisedPairs, splitValidation, type Pair } from "./pairs.js";
import { defaultLayerChoicePath, readLayerChoice } from "./layer.js";
import { computeStates } from "./pipeline-states.js";
import { checkQueryKinds, TaskOverlap, type QueryKind } from "./queries/index.js";
import { assertTrainerDevice, runTraining, TRAIN_DEFAULTS, type RetrievalMetrics, type TrainLoopOptions, type TrainProgress } from "./trainer.js";

/** The training loop's settings {@link trainProjections} passes through (documented once, on TrainLoopOptions). */
type LoopSettings = Pick<
  TrainLoopOptions,
  "lr" | "batchTasks" | "batchTokens" | "negatives" | "hardNegatives" | "glanceNegatives" | "refreshEvery" | "refreshTasks" | "glancePool" | "inBatch" | "seed" | "threads" | "device" | "precision" | "resident"
>;

/** Options of {@link trainProjections}. */
export interface TrainProjectionsOptions extends LoopSettings {
  /** Rows of W_q and W_s (default PROJECTION_DEFAULTS.dim). */
  dim?: number;
  /** AdamW updates of the main phase (a resumed run continues up to this count). */
  steps?: number;
  /** Skill library: a JSONL(.gz) file or a folder of SKILL.md files. */
  library: string;
  /** Labelled pairs (JSONL of { query, gold_skill_ids }); or set `selfSupervised` or `queries`. */
  pairs?: string;
  /**
   * More labelled pairs (JSONL of { query, gold_skill_ids }) added to the training split of whichever
   * mode runs, e.g. unlabeled task statements pseudo-labelled by the lexical expert (scripts/distill),
   * beside the pseudo-queries. The validation split stays the mode's own. Screened like the mode's pairs.
   */
  extraPairs?: string;
  /** Each extra pair is trained on this many times (default 1). */
  extraRepeat?: number;
  /** Legacy self-supervised mode: the description (or a sentence of it) against the skill rendered without it. */
  selfSupervised?: boolean;
  /**
   * Pseudo-queries of these kinds from every skill (docs/TRAINING.md), each against its skill rendered
   * as installed with the copied characters' rows masked out.
   */
  queries?: QueryKind[];
  /** Pseudo-queries per skill (default 2). */
  queriesPerSkill?: number;
  /** Relative weights of the kinds (default queries/mixer.ts DEFAULT_MIX). */
  queryMix?: Partial<Record<QueryKind, number>>;
  /** Output projections file. */
  out: string;
  /** ℓ* (default: `layerFile`'s choice, else floor(0.7 × nLayer)). */
  layer?: number;
  /** A `gavel layer` JSON (read with readLayerChoice, checked against the model). */
  layerFile?: string;
  /** States cache root (default: none, states are recomputed each run). */
  cache?: string;
  /**
   * Extra instances of the same model file that compute states beside `model` (the states pass runs
   * one forward pass per model at a time; `gavel train --states-workers N` loads N − 1 of them).
   */
  statesWorkers?: readonly Model[];
  /** Checkpoint path of the main phase (default `<out>.ckpt`; the fine-tune's is `<out>.finetune.ckpt`). */
  checkpoint?: string;
  checkpointEvery?: number;
  resume?: boolean;
  /**
   * Stop training after this many seconds of this call (checkpoints written, no projections file):
   * the result says `finished: false` and a later call with `resume` goes on.
   */
  stopAfterSeconds?: number;
  /**
   * Only tokenize and prepare: the masks and BM25 look-alikes are written beside the cache (`cache` is
   * required) with no forward pass and no training; the result names the file (`prepared`).
   */
  prepareOnly?: boolean;
  /** W_q fine-tune steps against the ε-cover banks (0: none). */
  finetuneSteps?: number;
  finetuneLr?: number;
  /** ε of the banks (default 0.83). */
  eps?: number;
  /** The glance's vote the projections carry (default TRAIN_DEFAULTS: idf rows, vote share 0.01). */
  glanceRowWeights?: "uniform" | "idf";
  glanceVoteShare?: number;
  /** Skill ids or names that never give a query (nor a gold label). */
  exclude?: string[];
  /**
   * A task file whose texts must never be queries (e.g. SWE-Skills-Bench tasks.jsonl): queries equal to
   * a task text, or sharing a 12-word run with one, are dropped. The skills stay in the library.
   */
  excludeTasks?: string;
  /** Held-out fraction of the pairs for validation (default 0.05; pseudo-queries are held out by skill). */
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
  /** Undefined when the call stopped before the schedule's end (`finished` false). */
  projections?: Projections;
  /** Whether both phases reached their step counts (and the projections file was written). */
  finished: boolean;
  /** The prepared file a `prepareOnly` call wrote (masks and BM25 look-alikes beside the states cache). */
  prepared?: string;
  /** Steps reached by the main phase and the fine-tune. */
  mainSteps: number;
  finetuneSteps: number;
  layer: number;
  skills: number;
  trainPairs: number;
  valPairs: number;
  /** Train pairs by pseudo-query kind (queries mode). */
  kinds?: Partial<Record<QueryKind, number>>;
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
  const t0 = performance.now();
  if (typeof o !== "object" || o === null) throw invalidArgument("trainProjections needs an options object: { library, out, and one of pairs, selfSupervised, queries }");
  const log = o.onLog ?? (() => {});
  if ([!!o.pairs, !!o.selfSupervised, !!o.queries?.length].filter(Boolean).length !== 1) throw invalidArgument("pass exactly one of pairs (a JSONL file), selfSupervised and queries");
  if (o.queries !== undefined) checkQueryKinds(o.queries);
  // A CUDA trainer that cannot run fails here, before the states pass.
  assertTrainerDevice(o.device, o.precision);
  // the vote the file will carry, checked before any work (the file is written only at the end)
  if (o.glanceRowWeights !== undefined && o.glanceRowWeights !== "uniform" && o.glanceRowWeights !== "idf") {
    throw invalidArgument(`glanceRowWeights must be "uniform" or "idf", got ${JSON.stringify(o.glanceRowWeights)}`);
  }
  if (o.glanceVoteShare !== undefined && !(typeof o.glanceVoteShare === "number" && o.glanceVoteShare >= 0 && o.glanceVoteShare <= 1)) {
    throw invalidArgument(`glanceVoteShare must be a number in [0, 1], got ${String(o.glanceVoteShare)}`);
  }
  // the values first, then the file system: the output's folder must exist before any work
  await checkOut(o);
  const seed = o.seed ?? 0;
  const fp = await modelFingerprint(model); // refuses what is not a loaded Model, typed
  const { nEmbd } = model.info;
  const layer = await resolveLayer(model, o, fp, log);
  const dim = o.dim ?? PROJECTION_DEFAULTS.dim;
  const skills = await loadLibrary(o, log);
  const split = await trainingPairs(o, skills, seed, log);
  if (o.prepareOnly && !o.cache) throw invalidArgument("prepareOnly needs a cache folder: the prepared file is kept beside the states");
  const states = await computeStates(model, { ...o, noDescription: !!o.selfSupervised }, layer, skills, split, log);
  if (o.prepareOnly) {
    return {
      finished: false, prepared: states.prepared, mainSteps: 0, finetuneSteps: 0, layer, skills: skills.length, trainPairs: states.train.length, valPairs: states.val.length,
      stateTokens: states.stateTokens, cacheBytes: 0, losses: [], tokensPerSec: 0, stepsPerSec: 0,
    };
  }
  const set = { nEmbd, skills: states.skills, train: states.train, val: states.val };
  if (set.train.length === 0) throw invalidArgument("no training pair is left after the states pass");
  const left = () => (o.stopAfterSeconds === undefined ? undefined : Math.max(0, o.stopAfterSeconds - (performance.now() - t0) / 1000));

  const common: Omit<TrainLoopOptions, "steps"> = {
    dim, batchTasks: o.batchTasks, batchTokens: o.batchTokens, negatives: o.negatives, hardNegatives: o.hardNegatives, inBatch: o.inBatch, seed, threads: o.threads,
    device: o.device, precision: o.precision, resident: o.resident, glanceNegatives: o.glanceNegatives, refreshEvery: o.refreshEvery, refreshTasks: o.refreshTasks, glancePool: o.glancePool,
    checkpointEvery: o.checkpointEvery, resume: o.resume, valEvery: o.valEvery, onProgress: o.onProgress, signal: o.signal,
  };
  const main = await runTraining(set, { ...common, steps: o.steps ?? 1000, lr: o.lr ?? TRAIN_DEFAULTS.lr, checkpoint: o.checkpoint ?? `${o.out}.ckpt`, stopAfterSeconds: left() });
  let { wq } = main;
  const { ws } = main;
  let finetuneVal: RetrievalMetrics | undefined;
  let ft: Awaited<ReturnType<typeof runTraining>> | undefined;
  const eps = o.eps ?? PROJECTION_DEFAULTS.eps;
  if (main.finished && (o.finetuneSteps ?? 0) > 0) {
    // The banks the router would install with these W_s: ε-covers of each skill's unit keys.
    const { keys, keyRows } = await installedKeys(states.skills, nEmbd, { ws, dim, eps });
    ft = await runTraining(set, {
      ...common, phase: "finetune", keys, keyRows, init: { wq, ws }, steps: o.finetuneSteps!, stopAfterSeconds: left(),
      lr: o.finetuneLr ?? TRAIN_DEFAULTS.finetuneLr, checkpoint: `${o.out}.finetune.ckpt`,
    });
    wq = ft.wq;
    finetuneVal = ft.val;
  }
  const finished = main.finished && (ft?.finished ?? true);
  const kinds = countKinds(split.train);
  let projections: Projections | undefined;
  if (finished) {
    projections = new Projections({
      wq, ws, layer, model: fp, dim, tau: TRAIN_DEFAULTS.tau, eps,
      glanceRowWeights: o.glanceRowWeights ?? TRAIN_DEFAULTS.glanceRowWeights, glanceVoteShare: o.glanceVoteShare ?? TRAIN_DEFAULTS.glanceVoteShare,
      trainedBy: o.trainedBy ?? `gavel train (${o.queries ? `queries ${o.queries.join(",")}` : o.selfSupervised ? "self-supervised" : "pairs"}, ${main.steps} steps, seed ${seed})`,
    });
    await projections.save(o.out);
  } else log(`stopped at main step ${main.steps}${ft ? `, fine-tune step ${ft.steps}` : ""} (time budget): run again with resume to go on`);
  const { stateTokens } = states;
  return {
    projections, finished, mainSteps: main.steps, finetuneSteps: ft?.steps ?? 0, layer, skills: skills.length, trainPairs: states.train.length, valPairs: states.val.length,
    kinds, stateTokens, cacheBytes: stateTokens * nEmbd * 2, losses: main.losses, val: main.val, finetuneVal,
    tokensPerSec: main.tokensPerSec, stepsPerSec: main.stepsPerSec,
  };
}

/** Pairs per pseudo-query kind (undefined when none has a kind). */
function countKinds(pairs: readonly Pair[]): Partial<Record<QueryKind, number>> | undefined {
  const out: Partial<Record<QueryKind, number>> = {};
  for (const p of pairs) if (p.kind) out[p.kind] = (out[p.kind] ?? 0) + 1;
  return Object.keys(out).length ? out : undefined;
}

/**
 * ℓ*: the option, else `layerFile`'s choice (they must agree when both are given), else the choice
 * `gavel layer` wrote beside the output (gavel-layer.json next to `out`, when it is this model's),
 * else the default. Logs which, and why.
 */
async function resolveLayer(model: Model, o: TrainProjectionsOptions, fp: ModelFingerprint, log: (line: string) => void): Promise<number> {
  const { nLayer } = model.info;
  let layer = o.layer;
  let from = "the layer option";
  if (o.layerFile !== undefined) {
    const choice = await readLayerChoice(o.layerFile, fp);
    if (layer !== undefined && layer !== choice.layer) throw invalidArgument(`--layer ${layer} contradicts ${o.layerFile} (layer ${choice.layer})`);
    layer = choice.layer;
    from = o.layerFile;
  } else if (layer === undefined) {
    const beside = defaultLayerChoicePath({ projections: o.out });
    try {
      layer = (await readLayerChoice(beside, fp)).layer;
      from = `${beside} (gavel layer's choice beside the output)`;
    } catch (err) {
      // none there is the usual case; one that is not this model's is said
      if ((err as GavelError).code !== "FILE_NOT_FOUND") log(`${beside} is not a layer choice for this model (${(err as Error).message}): not used`);
    }
  }
  if (layer === undefined) {
    layer = defaultLayer(nLayer);
    from = `the default, 70% of ${nLayer} layers (no layer option, layer file or gavel-layer.json beside the output)`;
  }
  checkLayer(layer, nLayer);
  log(`layer ℓ* ${layer}, from ${from}`);
  return layer;
}

/**
 * The output path checked before any work: a non-empty string whose folder exists and is a folder
 * (the run writes its checkpoints there, and the projections at the end).
 */
async function checkOut(o: TrainProjectionsOptions): Promise<void> {
  if (typeof o.out !== "string" || o.out === "") throw invalidArgument("out (the projections file to write) must be a non-empty path");
  const folder = dirname(resolve(o.out));
  const st = await stat(folder).catch(() => null);
  if (!st) throw new GavelError(`the output's folder ${folder} does not exist (out: ${o.out})`, "FILE_NOT_FOUND");
  if (!st.isDirectory()) throw invalidArgument(`the output's folder ${folder} is not a folder (out: ${o.out})`);
}

/** The skill library; entries that fail to load are left out (and logged). */
async function loadLibrary(o: TrainProjectionsOptions, log: (line: string) => void): Promise<Skill[]> {
  const { skills, failed } = await loadSkills(o.library, { limit: o.limit, signal: o.signal });
  if (failed.length) log(`${failed.length} library entries failed to load and are left out`);
  if (skills.length < 2) throw new GavelError("training needs at least two skills", "EMPTY_LIBRARY");
  return skills;
}

/** The labelled, self-supervised or pseudo-query pairs, exclusions applied, split into train and validation. */
async function trainingPairs(o: TrainProjectionsOptions, skills: readonly Skill[], seed: number, log: (line: string) => void): Promise<{ train: Pair[]; val: Pair[] }> {
  let pairs: Pair[];
  if (o.pairs) {
    const r = await readPairs(o.pairs, skills);
    r.dropped.slice(0, 5).forEach(log);
    if (r.dropped.length > 5) log(`… ${r.dropped.length} pairs dropped in all (gold skills not in the library)`);
    pairs = r.pairs;
  } else if (o.queries?.length) pairs = queryPairs(skills, { kinds: o.queries, perSkill: o.queriesPerSkill, weights: o.queryMix, seed });
  else pairs = selfSupervisedPairs(skills, seed);
  const taskTexts = o.excludeTasks ? await readTaskTexts(o.excludeTasks) : undefined;
  const overlap = taskTexts ? new TaskOverlap(taskTexts) : undefined;
  const ex = excludePairs(pairs, skills, { exclude: o.exclude, taskTexts, overlap });
  if (ex.excludedSkills || ex.excludedTasks) log(`excluded ${ex.excludedSkills} pairs of excluded skills and ${ex.excludedTasks} pairs equal to or overlapping a task text`);
  // Pseudo-queries are held out by skill: validation asks for skills no training query came from.
  const split = splitValidation(ex.pairs, o.valFraction ?? 0.05, seed, o.queries?.length ? (p) => p.positives[0] : undefined);
  if (o.extraPairs) split.train.push(...(await extraTrainPairs(o, skills, { taskTexts, overlap }, log)));
  if (split.train.length === 0) throw invalidArgument("no training pair is left");
  return split;
}

/** The extra labelled pairs, screened, each `extraRepeat` times. */
async function extraTrainPairs(
  o: TrainProjectionsOptions,
  skills: readonly Skill[],
  screen: { taskTexts?: ReadonlySet<string>; overlap?: TaskOverlap },
  log: (line: string) => void,
): Promise<Pair[]> {
  const repeat = o.extraRepeat ?? 1;
  if (!Number.isInteger(repeat) || repeat < 1) throw invalidArgument(`extraRepeat must be an integer ≥ 1, got ${repeat}`);
  const r = await readPairs(o.extraPairs!, skills);
  const ex = excludePairs(r.pairs, skills, { exclude: o.exclude, ...screen });
  log(`extra pairs: ${ex.pairs.length} of ${r.pairs.length + r.dropped.length} kept (${r.dropped.length} gold not in the library, ${ex.excludedSkills} excluded skills, ${ex.excludedTasks} overlapping a task text), ×${repeat}`);
  const out: Pair[] = [];
  for (let k = 0; k < repeat; k++) out.push(...ex.pairs);
  return out;
}

/** Covers in flight at once: the libuv pool's size (UV_THREADPOOL_SIZE, default 4). */
function coverWidth(): number {
  return threadPoolSize();
}

/** The keys the router would install for each skill's states under these W_s and ε (see route's coverKeys), with their state rows. */
async function installedKeys(skillStates: readonly Float32Array[], nEmbd: number, p: { ws: Float32Array; dim: number; eps: number }): Promise<{ keys: Float32Array[]; keyRows: Int32Array[] }> {
  const keys: Float32Array[] = [];
  const keyRows: Int32Array[] = [];
  // Each cover runs off the JS thread: keep the libuv pool busy (30K skills one at a time took minutes).
  await inOrder(skillStates, { width: coverWidth() }, (st) => coverKeys(st, nEmbd, p), (_st, out) => {
    if (!out.ok) throw out.error;
    keys.push(out.value.keys);
    keyRows.push(out.value.kept);
  });
  return { keys, keyRows };
}
