// Model.load's option checks that need neither the file nor the addon: each returns what the native
// LoadParams want, or throws INVALID_ARGUMENT naming the option.
import { invalidArgument } from "../errors.js";

/** Most KV cells a context may hold (contextSize, times sequences with per-sequence streams). */
export const MAX_KV_CELLS = 1 << 24;

export function kvOption(v: unknown): boolean | undefined {
  if (v === undefined) return undefined;
  if (v === "f32") return false;
  if (v === "f16") return true;
  throw invalidArgument(`kvCacheType must be "f32" or "f16", got ${String(v)}`);
}

export function layoutOption(v: unknown): boolean {
  if (v === "unified") return true;
  if (v === undefined || v === "streams") return false;
  throw invalidArgument(`kvLayout must be "unified" or "streams", got ${String(v)}`);
}

export function flashOption(v: unknown): number | undefined {
  if (v === undefined) return undefined;
  if (v === false) return 0;
  if (v === true) return 1;
  if (v === "auto") return -1;
  throw invalidArgument(`flashAttention must be true, false or "auto", got ${String(v)}`);
}

/**
 * `logprobsInGraph`'s value: true or false as given; "auto" (or absent) is true only where the logits
 * live on a GPU, i.e. a CUDA build that found a CUDA device, with layers offloaded.
 */
export function resolveLogprobsInGraph(value: unknown, env: { cuda: boolean; devices: readonly string[]; gpuLayers: number }): boolean {
  if (value === true || value === false) return value;
  if (value !== undefined && value !== "auto") throw invalidArgument(`logprobsInGraph must be true, false or "auto", got ${String(value)}`);
  return env.cuda && env.gpuLayers !== 0 && env.devices.some((d) => /^CUDA\d/.test(d));
}
