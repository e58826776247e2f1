/**
 * The glance (paper, section 3.3): every task token votes for the skills whose keys it matches best,
 * and the library is ranked by the votes g. One pass over the whole key bank in native memory.
 *
 * @module
 */
import { GavelError } from "../errors.js";
import { throwIfAborted } from "../util/validate.js";
import type { KeyBankGlanceResult } from "../bank/key-bank.js";
import type { Library } from "../bank/library.js";
import { glancePruned } from "../bank/glance-index.js";
import { glanceIndexOf, keyIvfForGlance, keyIvfGlance, prunes, readsKeyIvf } from "./glance-index-use.js";
import { glanceVia } from "./glance-many.js";
import { routeVoteK } from "../kernels/kernels.js";
import { config } from "../config.js";
import type { Queries } from "./context.js";
import type { RouterParts } from "./parts.js";

/** One skill as the glance ranks it. */
export interface Ranked {
  /** The skill's column in the glance's result (its m and argmax). */
  column: number;
  skill: string;
  name: string;
  g: number;
}

/** A glance over the routable library: the queries, the raw result, the ranking (best g first) and k. */
export interface Glanced {
  q: Queries;
  /** The glance; its per-token m and argmax (nq × skills) only when asked for (`tokenScores`). */
  res: KeyBankGlanceResult;
  ranked: Ranked[];
  /** Top-k of the vote: how many skills each task token votes for. */
  k: number;
}

/**
 * Glances over every skill that may be chosen automatically. `queriesOf` encodes the context; it is
 * called only once the library is known to hold a routable skill. `keep`, when given, filters the
 * skill columns the glance ranks (excluded sources and flags): an excluded skill takes no
 * task token's vote and is in no ranking, so it can neither be shortlisted nor push a kept skill out
 * of a top list.
 *
 * `tokenScores`: keep the glance's per-token m and argmax (an explanation reads them).
 *
 * @throws GavelError `ABORTED` when `signal` is already aborted (before anything else is checked);
 *   `EMPTY_LIBRARY` when no skill is routable, or `keep` excludes every one.
 */
export async function glanceLibrary({ library, projections }: RouterParts, queriesOf: () => Promise<Queries>, signal?: AbortSignal, keep?: (id: string) => boolean, tokenScores = false): Promise<Glanced> {
  throwIfAborted(signal, "glance"); // an aborted call stops first: not EMPTY_LIBRARY
  let handles = library.routable();
  if (handles.length === 0) throw new GavelError("no skill is installed (or every one has disable-model-invocation)", "EMPTY_LIBRARY");
  if (keep) {
    // the excluded skills' columns leave the glance itself: they take no task token's vote
    handles = handles.filter((h) => keep(library.idOf(h)));
    if (handles.length === 0) throw new GavelError("every routable skill is excluded by excludeFlagged or excludeSources", "EMPTY_LIBRARY");
  }
  const q = await queriesOf();
  // a written task's vote size follows the projections' share; live contexts keep the paper's k (unless GAVEL_LIVE_VOTE_SHARE)
  const k = routeVoteK(handles.length, q.live && config().liveVoteShare === "off" ? 0 : (config().glanceVoteShare ?? projections?.glanceVoteShare ?? 0));
  // The whole bank when every skill is routable: a whole-bank glance is the one a CUDA build runs
  // on the device (a restricted one gathers its columns from a whole-bank pass there too).
  const all = handles.length === library.keys.size;
  // m and argmax of every (token, skill) only for an explanation: at 30K skills and 1,000 task tokens
  // they are 240 MB, copied from the device and into JavaScript, that a route does not read.
  // A resident server batches the plain glances of concurrent requests (glance-many.ts: same g)
  const via = tokenScores ? undefined : glanceVia(library.keys);
  // the key IVF over some of the bank's skills needs an addon that restricts it (else the exact glance)
  const found = !tokenScores && readsKeyIvf(handles.length) ? await keyIvfForGlance(library) : null;
  const ivf = found && (all || found.restricts) ? found : null;
  const res = ivf
    ? await keyIvfGlance(library, ivf, q.queries, q.weights, k, signal, all ? undefined : Int32Array.from(handles))
    : !tokenScores && prunes(handles.length)
      ? await prunedGlance(library, handles, all, q, k, signal)
      : via
        ? await via(library.keys, { queries: q.queries, weights: q.weights }, { k, ...(all ? {} : { handles }), ...(signal ? { signal } : {}) })
        : await library.keys.glance(q.queries, { weights: q.weights, k, handles: all ? undefined : handles, signal, ...(tokenScores ? {} : { detail: 0 }) });
  return { q, res, ranked: rankColumns(library, res), k };
}

/** A glance's columns as skills, best g first (ties: the lower column). */
export function rankColumns(library: Pick<Library, "label">, res: { g: Float32Array; handles: Int32Array }): Ranked[] {
  // a plain loop into a sized array: Array.from over the typed order with a mapping function cost
  // about twice as much over 30K columns
  const order = orderByG(res.g);
  const out: Ranked[] = new Array(order.length);
  for (let i = 0; i < order.length; i++) {
    const s = order[i];
    const { id, name } = library.label(res.handles[s]);
    out[i] = { column: s, skill: id, name, g: res.g[s] };
  }
  return out;
}

/**
 * The columns of `g` best first, ties by the lower column: the order of
 * `sort((a, b) => g[b] - g[a] || a - b)`, made by a stable radix sort (three passes of 11, 11 and 10
 * bits) over g's float32 bits made monotone and complemented, instead of a comparator called
 * ~n·log n times (over 30K skills that sort was milliseconds of every route). −0 counts as 0; a NaN
 * (which the comparator leaves anywhere, and the route refuses) sorts by its bits.
 */
export function orderByG(g: Float32Array): Uint32Array {
  const n = g.length;
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  let key = new Uint32Array(n);
  let idx = new Uint32Array(n);
  for (let s = 0; s < n; s++) {
    f[0] = g[s] + 0; // −0 → +0
    const bits = u[0];
    // ascending in the value: negatives' bits reversed, positives above them; then complemented
    const mono = bits & 0x80000000 ? ~bits >>> 0 : (bits | 0x80000000) >>> 0;
    key[s] = ~mono >>> 0;
    idx[s] = s;
  }
  let key2 = new Uint32Array(n);
  let idx2 = new Uint32Array(n);
  const count = new Uint32Array(2048);
  for (const [shift, width] of [[0, 11], [11, 11], [22, 10]]) {
    const mask = (1 << width) - 1;
    count.fill(0);
    for (let i = 0; i < n; i++) count[(key[i] >>> shift) & mask]++;
    let at = 0;
    for (let d = 0; d <= mask; d++) {
      const c = count[d];
      count[d] = at;
      at += c;
    }
    for (let i = 0; i < n; i++) {
      const p = count[(key[i] >>> shift) & mask]++;
      key2[p] = key[i];
      idx2[p] = idx[i];
    }
    [key, key2] = [key2, key];
    [idx, idx2] = [idx2, idx];
  }
  return idx;
}

/**
 * The glance through the bank's glance index: the exact max-sim and vote (with the whole library's
 * vote size k) on the skills the index's centroids keep, every other routable skill at g = 0 (the
 * vote it gets from the exact glance unless a task token ranks it among its k best, which the
 * pruning wagers against; docs/BENCHMARKS.md, "The glance index", measures how often that holds).
 * Columns stay those of `handles`, so the stages after the glance read the whole library (the
 * lexical expert can still lift a skill the index left out).
 */
async function prunedGlance(library: RouterParts["library"], handles: Int32Array, all: boolean, q: Queries, k: number, signal?: AbortSignal): Promise<KeyBankGlanceResult> {
  const index = await glanceIndexOf(library);
  const kept = all ? undefined : new Set(handles);
  const pr = await glancePruned(library.keys, index, q.queries, { weights: q.weights, k, signal, detail: 0, ...(kept ? { keep: (h: number) => kept.has(h) } : {}) });
  const gOf = new Map<number, number>();
  for (let s = 0; s < pr.handles.length; s++) gOf.set(pr.handles[s], pr.g[s]);
  const g = new Float32Array(handles.length);
  for (let s = 0; s < handles.length; s++) g[s] = gOf.get(handles[s]) ?? 0;
  const { search: _search, ...res } = pr;
  return { ...res, handles: Int32Array.from(handles), g };
}
