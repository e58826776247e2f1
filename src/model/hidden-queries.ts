/**
 * The glance's queries of a task ({@link hiddenQueries}): one forward pass to a layer, then the task's
 * rows projected and normalised; routed through the resident router's scheduler when it is attached.
 *
 * @module
 */
import { GavelError, invalidArgument } from "../errors.js";
import { loadBinding } from "../native/binding.js";
import { checkLayer, toTokens } from "../util/validate.js";
import type { Model } from "./Model.js";
import type { QueryProjection } from "./states-many.js";

/** A projection's bounds and shapes checked (W's values are checked where it is used). */
export function checkProjection(p: QueryProjection, nEmbd: number, nTokens: number): QueryProjection {
  if (typeof p !== "object" || p === null) throw invalidArgument("projection must be an object");
  const { from, to, W, dim } = p;
  if (!Number.isInteger(from) || from < 0) throw invalidArgument("projection.from must be an integer >= 0");
  if (!Number.isInteger(to) || to <= from || to > nTokens) throw invalidArgument(`projection.to must be an integer in projection.from + 1 .. ${nTokens} (the tokens)`);
  if (!Number.isInteger(dim) || dim < 1) throw invalidArgument("projection.dim must be a positive integer");
  if (!(W instanceof Float32Array) || W.length !== dim * nEmbd) throw invalidArgument(`projection.W must be a Float32Array of dim × nEmbd (${dim} × ${nEmbd})`);
  return { from, to, W, dim };
}

/**
 * The glance's queries of one task: rows `[from, to)` of `model`'s residual stream after `layer`,
 * each projected by `W` (`dim` × nEmbd, row-major) and normalised, as kernels.ts's `projectNormalize`
 * gives them for {@link Model.hiddenStates}'s rows: (to − from) × dim. By default exactly those two
 * calls; when the model's calls are routed (the resident router's scheduler, through
 * {@link Model.routeHiddenStates}), the passes and projections of concurrent requests run together,
 * with the same result.
 */
export async function hiddenQueries(model: Model, tokens: Int32Array, layer: number, projection: QueryProjection, options?: { signal?: AbortSignal }): Promise<Float32Array> {
  const { nEmbd, nVocab, nLayer, contextSize } = model.info;
  const p = checkProjection(projection, nEmbd, tokens.length);
  const via = model.queriesVia;
  if (!via) {
    const states = await model.hiddenStates(tokens, layer, options);
    // kernels.ts's projectNormalize without its wrapper (shapes checked above, values by the addon)
    return loadBinding().projectNormalize(states.subarray(p.from * nEmbd, p.to * nEmbd), nEmbd, p.W, p.dim);
  }
  const t = toTokens(tokens, "tokens", nVocab);
  checkLayer(layer, nLayer);
  if (t.length > contextSize) throw new GavelError(`hiddenStates: ${t.length} tokens exceed the context size ${contextSize}`, "CONTEXT_OVERFLOW");
  return via(t, layer, p, options?.signal);
}
