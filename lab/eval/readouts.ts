/**
 * What `gavel eval` reads of the router for one task: the glance's top k and the verdict, either on
 * the route's own shortlist ({@link readRoute}, the default) or on a wide pool ({@link readRouter}).
 */
import type { Router } from "gavel-router";
import { chooseByRuling, type RulingParams, type VerdictRecord } from "gavel-router/internal";

/** The router's part of a per-query record (see `PerQueryRecord` in evaluate.ts). */
export interface RouterReadouts {
  /** The glance's top k. */
  glance?: { skill: string; g: number; s?: number }[];
  /**
   * With `lexicalPool`: BM25's leaders outside the glance's top k, with their g (in glance order), so
   * that a first stage fusing both experts replays exactly.
   */
  also?: { skill: string; g: number; s?: number }[];
  /**
   * How the verdict's candidates were chosen (present when the verdict was read): `"route"`, the
   * route's own shortlist (`router.route(task)`, the default); a number N, the wide pool of the
   * glance's top N whatever Δ (`pool: N`, `gavel eval --pool N`). Records without it were made with
   * the wide pool of the projections' maxShortlist.
   */
  pool?: "route" | number;
  /**
   * The verdict's read-outs, in glance order (g descending): with `pool: N`, the top N by g (whatever
   * Δ) and the lexical pool; with the route's shortlist, exactly the skills the route gave the verdict
   * (none when it skipped it: one candidate, and abstention does not read V).
   */
  verdict?: (VerdictRecord & { s?: number })[];
  /**
   * With the route's shortlist: what `router.route(task)` did: its shortlist (best S first), whether
   * the verdict ran, whether it declined the task (abstention), and its time in ms.
   */
  route?: { shortlist: string[]; verdict: "ran" | "skipped" | "off"; abstained: boolean; ms: number };
  /** What each ruling variant commits to (null: nothing was shortlisted). */
  chosen?: { ruling?: string | null; rulingNoB?: string | null; gL?: string | null; gV?: string | null };
}

/**
 * Asks the router once ({@link Router.rank}) and fills the record: the glance's top k and, when
 * needed, the verdict in glance order and what the ruling and its ablations commit to.
 */
export async function readRouter(rec: RouterReadouts, router: Router, text: string, o: { k: number; needVerdict: boolean; ruling: RulingParams; verdictTop: number; also: string[]; signal?: AbortSignal }): Promise<void> {
  // The glance list is at least as long as the verdict pool, and `also` comes in glance order after
  // it, so each candidate's glance position (route()'s tie order) is known.
  const glanceTop = Math.max(o.k, o.verdictTop);
  const { glance, verdict, also } = await router.rank(text, { glanceTop, verdictTop: o.needVerdict ? o.verdictTop : 0, also: o.also, signal: o.signal });
  const position = new Map([...glance, ...(also ?? [])].map((h, i) => [h.skill, i]));
  rec.glance = glance.slice(0, o.k).map(({ skill, g }) => ({ skill, g }));
  // BM25's leaders the kept glance list lacks (those ranked k…glanceTop, then the rest), in glance order
  if (o.also.length) {
    const kept = new Set(rec.glance.map((h) => h.skill));
    const wanted = new Set(o.also);
    rec.also = [...glance, ...(also ?? [])].filter((h) => wanted.has(h.skill) && !kept.has(h.skill)).map(({ skill, g }) => ({ skill, g }));
  }
  if (!o.needVerdict) return;
  rec.pool = o.verdictTop;
  rec.verdict = verdict.map(({ skill, g, L, V }) => ({ skill, g, L, V })).sort((a, b) => position.get(a.skill)! - position.get(b.skill)!);
  rec.chosen = {
    // at β = 0 here; addLexical rules again with B when BM25 ran beside (keeping this as rulingNoB)
    ruling: chooseByRuling(rec.verdict, { ...o.ruling, beta: 0 }),
    rulingNoB: chooseByRuling(rec.verdict, { ...o.ruling, beta: 0 }),
    gL: chooseByRuling(rec.verdict, { ...o.ruling, gamma: 0, beta: 0 }),
    gV: chooseByRuling(rec.verdict, { ...o.ruling, alpha: 0, beta: 0 }),
  };
}

/**
 * The route's own shortlist: the glance's top k (for R@k), then `router.route(task)` as a user's route
 * runs it (first stage g + βB, the shortlist of src/route/ruling.ts's firstStageShortlist, the verdict
 * on it when it can change something, the ruling, abstention), whose read-outs fill the record.
 * `ruling` is the route's winner (before abstention, which the record keeps apart, as Hit@1 scores the
 * ranking); the ablations rule the same shortlist again, at β = 0 (no verdict is read twice).
 */
export async function readRoute(rec: RouterReadouts, router: Router, text: string, o: { k: number; ruling: RulingParams; signal?: AbortSignal }): Promise<void> {
  const glance = await router.glance(text, { topK: o.k, signal: o.signal });
  rec.glance = glance.map(({ skill, g }) => ({ skill, g }));
  const routed = await router.route(text, { signal: o.signal });
  const short = routed.shortlist;
  rec.pool = "route";
  rec.route = { shortlist: short.map((c) => c.skill), verdict: routed.verdict, abstained: routed.abstained, ms: Math.round(routed.timings.totalMs) };
  // in glance order (a stable sort: the route's order on equal g), as records keep the verdict
  const judged = routed.verdict === "ran" ? [...short].sort((a, b) => b.g - a.g) : [];
  rec.verdict = judged.map(({ skill, g, L, V }) => ({ skill, g, L, V }));
  const winner = short[0]?.skill ?? null;
  // the whole shortlist ruled again (Δ already applied by the route): the winner alone when no verdict ran
  const again = (p: Partial<RulingParams>) => (judged.length ? chooseByRuling(rec.verdict!, { ...o.ruling, ...p, delta: Infinity, maxShortlist: judged.length }) : winner);
  rec.chosen = {
    ruling: winner,
    rulingNoB: again({ beta: 0 }),
    gL: again({ gamma: 0, beta: 0 }),
    gV: again({ alpha: 0, beta: 0 }),
  };
}
