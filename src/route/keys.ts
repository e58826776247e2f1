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
import type { SkillKeysRecord } from "../bank/types.js";
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
 * each with its token id and position in r(s). With a `keyEncoder` (a render budget over the skill
 * budget: the router's key budget, within the context) and a body cut to fit the skill budget, the
 * keys come instead from one pass over that wider render, whose first tokens are r(s)'s: r(s)'s keys
 * as before, and the body past r(s)'s cut read in the same sequence. A key budget over the context
 * reads the body past the wider render's cut too, its next tokens up to the key budget, in windows of
 * their own ({@link KEY_WINDOW}), at positions counted on from that render's end. The verdict still
 * reads r(s) alone. `lap` is told as render, forward, project and cover end.
 * With `states` (a read-only cache of the same model and layer: `install --states-cache`), the keyed
 * rows are read from it when it holds these very tokens and span (as the trainer's states pass stores
 * them), and no forward pass runs; a miss runs the pass as without it and stores nothing.
 */
export async function encodeSkillKeys(
  model: Model,
  projections: Projections,
  encoder: RenderEncoder,
  skill: Skill,
  options: { signal?: AbortSignal; lap?: StageLap; states?: StatesCache; keyBudget?: number; keyEncoder?: RenderEncoder } = {},
): Promise<SkillKeys> {
  const { signal, lap, states: cache, keyEncoder } = options;
  // tokenized off the JS thread: with skills in flight the JS thread would otherwise bound the
  // install wherever the forward pass is cheap (on a GPU)
  const enc = await encoder.encodeSkillAsync(skill);
  // the render the keys are read from: r(s), or, when r(s) cut the body, the key budget's wider render
  const wide = enc.truncated && keyEncoder && keyEncoder.skillBudget > encoder.skillBudget ? await keyEncoder.encodeSkillAsync(skill) : null;
  const k = wide ?? enc;
  const readTo = wide ? keyEncoder!.skillBudget : encoder.skillBudget;
  lap?.("render");
  const { nEmbd } = model.info;
  // A hit holds exactly the keyed rows, rounded through f16 (the cache's format); a miss is the plain
  // float32 pass, so skills the cache lacks get the keys an install without it gives, bit for bit.
  const cached = await cache?.lookup(k.tokens, k.keyStart, k.keyEnd);
  const renderRows = cached ?? (await model.hiddenStates(k.tokens, projections.layer, { signal })).subarray(k.keyStart * nEmbd, k.keyEnd * nEmbd);
  const nRender = k.keyEnd - k.keyStart;
  // The body past the render's cut, read apart in windows, while the key budget lasts.
  const more = k.truncated ? await continuationRows(model, projections.layer, skill.body.slice(k.bodyChars), (options.keyBudget ?? 0) - readTo, signal) : null;
  const rows = more ? concatRows(renderRows, more.rows) : renderRows;
  lap?.("forward");
  const { keys, kept } = await coverKeys(rows, nEmbd, projections, lap);
  // A continuation key's position counts on from the render's end, as if the body went on there.
  const at = (j: number): number => (j < nRender ? k.keyStart + j : k.tokens.length + (j - nRender));
  const tokenAt = (j: number): number => (j < nRender ? k.tokens[k.keyStart + j] : more!.tokens[j - nRender]);
  return {
    keys,
    keyTokens: Array.from(kept, tokenAt),
    keyPositions: Array.from(kept, at),
    renderTokens: enc.tokens.length,
    renderCut: { descriptionChars: enc.descriptionChars, bodyChars: enc.bodyChars },
    rawKeys: nRender + (more?.tokens.length ?? 0),
    truncated: enc.truncated,
  };
}

/** Most tokens of one continuation window (each read as its own sequence, after a BOS where the model takes one). */
export const KEY_WINDOW = 1024;

/**
 * The hidden states at `layer` of the first `budget` tokens of `text` (a body's continuation past the
 * widest render's cut, where the key budget exceeds the context), read in windows of at most
 * {@link KEY_WINDOW} tokens (and the context), each its own sequence. Null when there is no budget or
 * no text.
 */
async function continuationRows(model: Model, layer: number, text: string, budget: number, signal?: AbortSignal): Promise<{ rows: Float32Array; tokens: Int32Array } | null> {
  if (budget <= 0 || text.length === 0) return null;
  // Never tokenize a long body whole: a token spans a few characters, rarely more than 16.
  const tokens = (await model.tokenizeAsync(text.slice(0, budget * 16), { special: false, addBos: false, signal })).subarray(0, budget);
  if (tokens.length === 0) return null;
  const { nEmbd, addBos, bos, contextSize } = model.info;
  const lead = addBos && bos !== undefined ? 1 : 0;
  const window = Math.max(1, Math.min(KEY_WINDOW, contextSize - lead));
  const rows = new Float32Array(tokens.length * nEmbd);
  for (let at = 0; at < tokens.length; at += window) {
    const part = tokens.subarray(at, Math.min(tokens.length, at + window));
    const input = lead ? Int32Array.from([bos!, ...part]) : part;
    const h = await model.hiddenStates(input, layer, { signal });
    rows.set(h.subarray(lead * nEmbd, (lead + part.length) * nEmbd), at * nEmbd);
  }
  return { rows, tokens: tokens.slice() };
}

function concatRows(a: Float32Array, b: Float32Array): Float32Array {
  const out = new Float32Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
