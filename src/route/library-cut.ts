/**
 * A small library's own abstention cut. The projections' abstention model places one cut for every
 * library size, and over a few skills its score shifts with the library: the same cut lets a different
 * share of off-domain requests through over 4 skills than over 24. With an abstention reference in the
 * projections (`Projections.abstentionReference`: off-domain prompts, `pass`, `below`), a library of
 * fewer than `below` routable skills routes each prompt over itself once, and a route there also
 * abstains when its score is at or above the (`pass` + 1)-th lowest prompt score: at most `pass` of
 * the prompts would load a skill there. An off-domain request exchangeable with the prompts then loads
 * a skill with probability at most (`pass` + 1) / (n + 1) over any such library (the conformal bound).
 *
 * The cut is computed the first time a route needs it after the library changed (an install, an
 * uninstall, a refresh), and kept until the next change: n routes over a library of fewer than
 * `below` skills, each a glance and the cheap stages, with the verdict only where a route would run it.
 * It is also kept in `<bank>/library-cut.bin` (checksummed; a cache, written whole or not at all),
 * under a key of everything it depends on (the routable skills' ids and content hashes, the
 * projections' weights and constants, the model's file), so that a new process over an unchanged
 * library (`gavel route` run once) reads it instead of routing the prompts again.
 * It applies only where the deciding band of the model is logistic (its score the logit of
 * p(off-domain), higher for off-domain).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { bandFor } from "../projections/abstention-model.js";
import { readCacheFile, readFramedFile, writeFramedFile } from "../util/framed-file.js";
import { GavelError } from "../errors.js";
import type { LibraryState } from "../bank/library.js";
import { defaultLexical, type LibraryCut } from "./abstention.js";
import { encodeQueries, encodeTasksMany, type Queries } from "./context.js";
import { decide } from "./decide.js";
import { glanceLibrary } from "./glance.js";
import type { LexicalExpert } from "./lexical-expert.js";
import type { RouterParts } from "./parts.js";

export type { LibraryCut } from "./abstention.js";

/** Scores one prompt as a default route over the library: the abstention model's score (NaN: none). */
export type ScorePrompt = (prompt: string) => Promise<number>;

const cache = new WeakMap<RouterParts, { state: LibraryState; cut: Promise<LibraryCut | null> }>();

/**
 * The library's own cut, or null when none applies (no reference or model in the projections, the
 * library has `below` routable skills or more, or its deciding band is not logistic). Computed once
 * per state of the library; call it inside a read of the library (`Library.reading`), which keeps the
 * state fixed while it runs.
 */
export function libraryCut(parts: RouterParts, score: ScorePrompt): Promise<LibraryCut | null> {
  const { projections, library } = parts;
  const ref = projections.abstentionReference;
  const model = projections.abstention;
  if (!ref || !model) return Promise.resolve(null);
  const had = cache.get(parts);
  if (had && !library.changedSince(had.state)) return had.cut;
  const state = library.state();
  const skills = library.routable().length;
  const cut = skills === 0 || skills >= ref.below || bandFor(model, Math.log(skills)).kind !== "logistic" ? Promise.resolve(null) : kept(parts, skills, () => measure(ref.prompts, ref.pass, skills, score));
  const entry = { state, cut };
  cache.set(parts, entry);
  // a failed measurement is not kept: the next route measures again
  cut.catch(() => {
    if (cache.get(parts) === entry) cache.delete(parts);
  });
  return cut;
}

/** The file a bank keeps its cut in, and its first bytes. */
export const LIBRARY_CUT_FILE = "library-cut.bin";
const MAGIC = "GVLCUT01";

/** What the cut of `parts` depends on, as one hash: the routable skills, the projections, the model. */
function cutKey({ library, projections, model }: RouterParts): string {
  const skills = [...library.routable()].map((h) => library.idOf(h)).sort().map((id) => [id, library.entry(id).contentHash]);
  return createHash("sha256").update(JSON.stringify({ skills, projections: projections.hash, meta: projections.meta, model: model.path })).digest("hex");
}

/**
 * The cut the bank's file keeps for this state of the library (of `skills` routable skills), else `measured()`'s, written to the
 * file (best effort: a bank folder this process cannot write is measured again next time).
 */
async function kept(parts: RouterParts, skills: number, measured: () => Promise<LibraryCut | null>): Promise<LibraryCut | null> {
  const path = join(parts.library.dir, LIBRARY_CUT_FILE);
  const key = cutKey(parts);
  const ref = parts.projections.abstentionReference!;
  // bounded, never a blocking read: a FIFO or a device in its place is measured over
  const bytes = await readCacheFile(path).catch(() => null);
  const read = bytes && typeof bytes !== "string" ? readFramedFile(bytes, MAGIC, "library cut") : null;
  if (read && typeof read !== "string" && read.header.key === key) {
    const h = read.header;
    // a damaged or foreign file is measured over, never trusted
    if (h.cut === null) return null;
    if (typeof h.cut === "number" && Number.isFinite(h.cut) && h.pass === ref.pass && h.prompts === ref.prompts.length && h.skills === skills) return { cut: h.cut, pass: ref.pass, prompts: ref.prompts.length, skills };
  }
  const cut = await measured();
  await writeFramedFile(path, MAGIC, { key, cut: cut?.cut ?? null, pass: ref.pass, prompts: ref.prompts.length, skills }, []).catch(() => undefined);
  return cut;
}

async function measure(prompts: readonly string[], pass: number, skills: number, score: ScorePrompt): Promise<LibraryCut | null> {
  const scores: number[] = [];
  for (const p of prompts) {
    const z = await score(p);
    // a prompt the model cannot score (nothing shortlisted) reads as the most off-domain
    scores.push(Number.isNaN(z) ? Infinity : z);
  }
  scores.sort((a, b) => a - b);
  const cut = scores[pass];
  return Number.isFinite(cut) ? { cut, pass, prompts: scores.length, skills } : null;
}

/**
 * Scores a prompt as a default route over the library would (the glance, the lexical expert, the
 * verdict where such a route runs it, no library cut): the abstention model's score, NaN when the
 * route shortlists nothing. Stops with ABORTED when `signal` aborts. The projections' reference
 * prompts are encoded together on the first one's call ({@link encodeTasksMany}: a few wide forward
 * passes instead of one a prompt), so their scores equal single routes' up to float summation order.
 */
export function promptScorer(parts: RouterParts, lexical: LexicalExpert, signal?: AbortSignal): ScorePrompt {
  // the reference prompts' forward passes, decoded together on the first prompt's call
  let reference: Promise<Map<string, Queries>> | null = null;
  const queriesOf = async (prompt: string): Promise<Queries> => {
    const prompts = parts.projections.abstentionReference?.prompts ?? [];
    if (prompts.includes(prompt)) {
      reference ??= encodeTasksMany(parts, prompts, signal).then((qs) => new Map(prompts.map((p, i) => [p, qs[i]])));
      const q = (await reference).get(prompt);
      if (q) return q;
    }
    return encodeQueries(parts, prompt, false, signal);
  };
  return async (prompt) => {
    const g = await glanceLibrary(parts, () => queriesOf(prompt), signal);
    const d = await decide(parts, lexical, g.q.bm25Query, g.ranked, g.res.handles, { lexical: defaultLexical(parts.projections, true), verdict: true, abstain: true, ...(signal ? { signal } : {}) });
    return d.abstention?.score ?? NaN;
  };
}

/**
 * The cut a route over `parts` applies (null: none), for a route that runs inside a read of the
 * library. The first route to need it measures it, under its own read and `signal`; routes that come
 * meanwhile wait for that measurement, and one that stopped because its route was aborted is measured
 * again by a waiting route whose own signal still runs, so no route gets another's ABORTED.
 * (`scorer`: how a prompt is scored, {@link promptScorer}; tests give another.)
 */
export async function routeCut(parts: RouterParts, lexical: LexicalExpert, signal?: AbortSignal, scorer: typeof promptScorer = promptScorer): Promise<LibraryCut | null> {
  for (;;) {
    try {
      return await libraryCut(parts, scorer(parts, lexical, signal));
    } catch (err) {
      if (!(err instanceof GavelError && err.code === "ABORTED") || signal?.aborted) throw err;
    }
  }
}
