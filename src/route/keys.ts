/**
 * One skill's keys (paper, section 3.3): render r(s), run the model to layer ℓ*, project the keyed
 * tokens' states with W_s and normalise them, keep an ε-cover of them, and gather the kept keys with
 * their tokens and positions. {@link Router.install} encodes every skill with {@link encodeSkillKeys};
 * training builds the banks it fine-tunes W_q against with {@link coverKeys}, the same projection and
 * cover over states it already holds.
 *
 * @module
 */
import type { Model } from "../model/Model.js";
import type { StatesCache } from "../model/states-cache.js";
import type { Projections } from "../projections/projections.js";
import type { RenderEncoder } from "../render/encode.js";
import type { Skill } from "../skills/index.js";
import type { SkillKeysRecord } from "../bank/library.js";
import { coverFarthestFirstAsync, projectNormalize } from "../kernels/kernels.js";
import type { InstallStages } from "./types.js";

/** Called as each step ends, to charge its time to an install stage. */
export type StageLap = (stage: keyof InstallStages) => void;

/** The ε-cover keys of one skill's states, and which rows they came from. */
export interface CoveredKeys {
  /** kept × dim unit keys, in cover order. */
  keys: Float32Array;
  /** Row (within the states given) of each kept key. */
  kept: Int32Array;
}

/**
 * keys = ε-cover of normalize(W_s h) over the given rows of hidden states (n × nEmbd, row-major).
 * No rows give no keys.
 */
export async function coverKeys(
  states: Float32Array,
  nEmbd: number,
  p: Pick<Projections, "ws" | "dim" | "eps">,
  lap?: StageLap,
): Promise<CoveredKeys> {
  const { dim, eps, ws } = p;
  const all = states.length > 0 ? await projectNormalize(states, nEmbd, ws, dim) : new Float32Array(0);
  lap?.("project");
  const kept = all.length > 0 ? await coverFarthestFirstAsync(all, dim, eps) : new Int32Array(0);
  lap?.("cover");
  const keys = new Float32Array(kept.length * dim);
  kept.forEach((j, i) => keys.set(all.subarray(j * dim, (j + 1) * dim), i * dim));
  return { keys, kept };
}

/** One skill's keys and what the bank records beside them. */
export interface SkillKeys extends SkillKeysRecord {
  keys: Float32Array;
  /** Keyed tokens before the cover. */
  rawKeys: number;
  /** Whether the body was cut to fit the skill budget. */
  truncated: boolean;
}

/**
 * One forward pass over r(s): keys = ε-cover of normalize(W_s h) over the header and body tokens,
 * each with its token id and position in r(s). `lap` is told as render, forward, project and cover end.
 * With `states` (a read-only cache of the same model and layer: `install --states-cache`), the keyed
 * rows are read from it when it holds these very tokens and span (as the trainer's states pass stores
 * them), and no forward pass runs; a miss runs the pass as without it and stores nothing.
 */
export async function encodeSkillKeys(
  model: Model,
  projections: Projections,
  encoder: RenderEncoder,
  skill: Skill,
  options: { signal?: AbortSignal; lap?: StageLap; states?: StatesCache } = {},
): Promise<SkillKeys> {
  const { signal, lap, states: cache } = options;
  // tokenized off the JS thread: with skills in flight the JS thread would otherwise bound the
  // install wherever the forward pass is cheap (on a GPU)
  const enc = await encoder.encodeSkillAsync(skill);
  lap?.("render");
  const { nEmbd } = model.info;
  // A hit holds exactly the keyed rows, rounded through f16 (the cache's format); a miss is the plain
  // float32 pass, so skills the cache lacks get the keys an install without it gives, bit for bit.
  const cached = await cache?.lookup(enc.tokens, enc.keyStart, enc.keyEnd);
  const rows = cached ?? (await model.hiddenStates(enc.tokens, projections.layer, { signal })).subarray(enc.keyStart * nEmbd, enc.keyEnd * nEmbd);
  lap?.("forward");
  const { keys, kept } = await coverKeys(rows, nEmbd, projections, lap);
  const keyPositions = Array.from(kept, (j) => enc.keyStart + j);
  return {
    keys,
    keyTokens: keyPositions.map((pos) => enc.tokens[pos]),
    keyPositions,
    renderTokens: enc.tokens.length,
    renderCut: { descriptionChars: enc.descriptionChars, bodyChars: enc.bodyChars },
    rawKeys: enc.keyEnd - enc.keyStart,
    truncated: enc.truncated,
  };
}
