/**
 * What a route decides after the glance: the first stage over the whole library by
 * g + βB (the glance's vote and the lexical expert, the two experts that read every skill), the
 * Δ-shortlist of it, the verdict on the shortlist when it can change something, the ruling
 * S = g + αL + γV + βB, and abstention.
 *
 * The verdict runs only when it is asked for (`verdict`, default on) and can matter: with one
 * candidate the ruling's winner is already known, so it is skipped unless abstention reads V.
 *
 * @module
 */
import { GavelError, clip } from "../errors.js";
import { quoteForMessage } from "../gguf/regular-file.js";
import { bandFor, needsVerdict, readsFeature, type AbstentionModel } from "../projections/abstention-model.js";
import { abstentionFeatures, applyLibraryCut, defaultLexical, decideAbstention, type AbstentionDecision, type LibraryCut } from "./abstention.js";
import { checkFiniteReadouts, firstStage, firstStageShortlist, rule } from "./ruling.js";
import { judge } from "./verdict.js";
import { cheapTop, fullScores, rerankPool, verdictNeeded } from "./rerank.js";
import type { LexicalExpert } from "./lexical-expert.js";
import type { Ranked } from "./glance.js";
import type { RouterParts } from "./parts.js";
import { skillHandle } from "./skill-record.js";
import { termsCoverage } from "../lexical/reference-idf.js";
import { bm25Query, type Bm25Query, type QueryText } from "../lexical/postings.js";
import type { Candidate, RouteResult } from "./types.js";

/** How one route runs its stages after the glance. */
export interface DecideOptions {
  /** Compute B for the library (the first stage and S weigh it by β). */
  lexical: boolean;
  /** Run the verdict when it can change the outcome (false: never). */
  verdict: boolean;
  /**
   * Abstain: by the projections' calibrated model when there is one, else when the winner's V < 0.
   * Off: never.
   */
  abstain: boolean;
  /**
   * A small library's own cut (src/route/library-cut.ts), applied beside the model's when this route
   * computes the score as it was measured (B as a default route computes it; without a re-ranker, the
   * verdict on); absent: none.
   */
  libraryCut?: LibraryCut | null;
  /** The text abstention's domain score reads (context.ts `domainTextOf`); absent: the task text. */
  domainText?: string;
  /**
   * The text the verdict reads; absent: the task's text. A route of chat messages: their "role:
   * content" lines, where BM25 reads their contents without the system prompt; a live selection: the
   * conversation's end within the task budget, where BM25 reads the longer end a live route reads.
   */
  verdictText?: string;
  signal?: AbortSignal;
}

/** What {@link decide} returns. */
export interface Decision {
  /** The shortlist, best S first. */
  shortlist: Candidate[];
  /** Whether the verdict ran on it, was skipped (nothing it could change), or was turned off. */
  verdict: "ran" | "skipped" | "off";
  /** The abstention decision, when abstention was on and something was shortlisted. */
  abstention: AbstentionDecision | null;
  lexicalMs?: number;
  verdictMs: number;
}

/** The fields a route and a live selection share, from a {@link Decision}: the winner (none when it abstained), and its load handle. */
export type DecisionOutcome = Pick<RouteResult, "skill" | "name" | "abstained" | "abstention" | "shortlist" | "verdict" | "load">;

/** {@link DecisionOutcome} of `d` over the library of `parts` (one reading for `router.route` and `selectLive`). */
export function decisionOutcome(parts: Pick<RouterParts, "library">, d: Decision): DecisionOutcome {
  const best = d.shortlist[0];
  const abstained = d.abstention?.abstain === true;
  const chosen = abstained || !best ? null : best;
  const { library } = parts;
  return {
    skill: chosen?.skill ?? null,
    name: chosen?.name ?? null,
    abstained,
    ...(d.abstention ? { abstention: { reason: d.abstention.reason, score: d.abstention.score } } : {}),
    shortlist: d.shortlist,
    verdict: d.verdict,
    load: chosen ? skillHandle(library.entry(chosen.skill), library.dir) : null,
  };
}

/** The rule that abstains when the winner's V < 0: what `abstain` meant before calibrated models. */
function negativeV(winner: Candidate): AbstentionDecision {
  // V is finite here (checkFiniteReadouts ran on the verdict's read-outs); never read NaN < 0 as "keep".
  if (!Number.isFinite(winner.V)) return { abstain: true, score: winner.V, reason: `V of the winner is ${winner.V}, not a number: abstaining` };
  const abstain = winner.V < 0;
  return { abstain, score: winner.V, reason: `V of the winner ${winner.V.toPrecision(3)} is ${abstain ? "below" : "at or above"} 0 (no calibrated abstention model in the projections)` };
}

/** Whether a text holds a letter or a digit (what the lexical expert's words are made of). */
const HAS_WORD = /[\p{L}\p{N}]/u;

/**
 * The decision for a task without a letter or a digit (punctuation, emoji): it shares no word with
 * any skill, so it is declined whatever the scores say (its lexical features read as neutral: over
 * one example skill the calibrated model declined it by 0.03 of probability, and a review saw one
 * load a skill).
 */
const WORDLESS: AbstentionDecision = { abstain: true, score: NaN, reason: "the task holds no word (no letter or digit) that a skill could match: abstaining" };

/**
 * The stages after the glance, for `ranked` (the glance's ranking of the routable library) and
 * `handles` (the glance's skills in column order, which `ranked[i].column` indexes). `task`: the
 * task's text, or its query for BM25 with the paste reading the route made (`Queries.bm25Query`);
 * every BM25 read of the route reads that one query.
 */
export async function decide(parts: RouterParts, lexical: LexicalExpert, task: QueryText, ranked: readonly Ranked[], handles: Int32Array, o: DecideOptions): Promise<Decision> {
  const { projections, library } = parts;
  const query: Bm25Query = typeof task === "string" ? bm25Query(task) : task;
  const taskText = query.text;
  // A NaN g sorts anywhere and would shortlist arbitrarily: refuse it before the first stage.
  for (const r of ranked) {
    if (!Number.isFinite(r.g)) {
      throw new GavelError(`the glance g of skill ${JSON.stringify(clip(r.skill))} is ${r.g}, not a finite number (model ${clip(parts.model.path)}, bank ${clip(library.dir)}): damaged keys or model; no skill is chosen`, "INTERNAL");
    }
  }
  let lexicalMs: number | undefined;
  let lift: number | undefined;
  let coverage: number | undefined;
  let reach: number | undefined;
  let logN: number | undefined;
  let short: { skill: string; name: string; g: number; B?: number }[];
  let post: Awaited<ReturnType<LexicalExpert["posteriorByColumn"]>> | undefined;
  // β weighs B only when B was computed; a route with B off rules as the paper's (β = 0).
  const beta = o.lexical ? projections.beta : 0;
  if (o.lexical) {
    const t = performance.now();
    post = await lexical.posteriorByColumn(library, query, projections.lexicalTemperature, handles, { k1: projections.lexicalK1, b: projections.lexicalB });
    const B = post.B;
    // B read by glance column, with no object per skill: only the shortlist gets one
    const bOf = (c: Ranked) => B[c.column];
    const union = { glance: projections.shortlistGlance, lexical: projections.shortlistLexical };
    short = firstStageShortlist(ranked, projections.delta, projections.maxShortlist, beta, bOf, union).map((c) => ({ skill: c.skill, name: c.name, g: c.g, B: bOf(c) }));
    await refuseLost(parts, short);
    logN = Math.log(post.size);
    lift = post.maxB + logN;
    coverage = post.coverage;
    reach = post.reach;
    lexicalMs = performance.now() - t;
  } else {
    short = firstStageShortlist(ranked, projections.delta, projections.maxShortlist, 0, undefined, { glance: projections.shortlistGlance }).map(({ skill, name, g }) => ({ skill, name, g }));
  }
  const model: AbstentionModel | null = projections.abstention;
  const noWords = o.abstain && !HAS_WORD.test(taskText); // see WORDLESS
  // the library's cut was measured as a default route reads (library-cut.ts): a route that computes
  // the score otherwise (B off, or on where the default leaves it off) applies the model's cut alone
  const cut = o.libraryCut && o.lexical === defaultLexical(projections, true) ? o.libraryCut : null;
  if (projections.rerank && post && post.size >= projections.rerank.minSkills) {
    // abstention on the first stage (the re-ranker only picks among the leaders), then the re-ranker
    const first = short.map((c) => ({ ...c, L: NaN, V: NaN, S: firstStage(c.g, c.B, beta) }));
    const winner = o.abstain && first.length > 0 ? { ...winnerWords(parts, model, logN, taskText, first[0].skill), ...taskDomain(parts, model, logN, o.domainText ?? taskText) } : {};
    const decided = o.abstain && first.length > 0
      ? noWords ? WORDLESS : model ? applyLibraryCut(decideAbstention(model, abstentionFeatures(first, { lift, coverage, reach, logN, ...winner })), cut, model, logN) : { abstain: false, score: NaN, reason: "no calibrated abstention model in the projections: a re-ranked route does not abstain" }
      : null;
    // "the winner" there is the first stage's leader, which the re-ranker may put anywhere: named
    const abstention = decided && model && !noWords ? { ...decided, reason: `${decided.reason} ("the winner" here is the first stage's leader, ${first[0].skill}; the re-ranker then chooses among the leaders)` } : decided;
    // the verdict reads the re-ranker's best only from its size on (below, the cheap stage picks), and
    // not when the route abstains: it loads nothing, so the verdict could change nothing it returns
    // (the shortlist it reports is then the cheap stage's order)
    const verdict = o.verdict && abstention?.abstain !== true && post.size >= projections.rerank.verdictMinSkills;
    const r = await reranked(parts, lexical, query, ranked, handles, post, { verdict, verdictText: o.verdictText, signal: o.signal });
    return { shortlist: r.shortlist, verdict: r.ran ? "ran" : o.verdict ? "skipped" : "off", abstention, ...(lexicalMs !== undefined ? { lexicalMs } : {}), verdictMs: r.verdictMs };
  }
  const abstentionReadsV = o.abstain && (model ? needsVerdict(model) : true);
  const run = o.verdict && short.length > 0 && (short.length > 1 || abstentionReadsV);
  const t = performance.now();
  let shortlist: Candidate[];
  if (run) {
    const judged = await judge(parts, o.verdictText ?? taskText, short, o.signal);
    shortlist = rule(
      judged.map((c, i) => ({ ...c, ...(short[i].B !== undefined ? { B: short[i].B } : {}) })),
      { alpha: projections.alpha, gamma: projections.gamma, beta },
    );
  } else shortlist = short.map((c) => ({ ...c, L: NaN, V: NaN, S: firstStage(c.g, c.B, beta) })); // no verdict: L and V unknown, S the first stage's
  const verdictMs = run ? performance.now() - t : 0;
  checkFiniteReadouts(shortlist, run, parts.model.path); // NaN or ±Inf would pick arbitrarily and silence abstention
  let abstention: AbstentionDecision | null = null;
  if (o.abstain && shortlist.length > 0) {
    if (noWords) abstention = WORDLESS;
    else if (abstentionReadsV && !run) abstention = { abstain: false, score: NaN, reason: "abstention reads the verdict's V, and the verdict was off: no abstention" };
    else abstention = model ? applyLibraryCut(decideAbstention(model, abstentionFeatures(shortlist, lift === undefined ? taskDomain(parts, model, logN, o.domainText ?? taskText) : { lift, coverage, reach, logN, ...winnerWords(parts, model, logN, taskText, shortlist[0].skill), ...taskDomain(parts, model, logN, o.domainText ?? taskText) })), o.verdict ? cut : null, model, logN) : negativeV(shortlist[0]);
  }
  return { shortlist, verdict: run ? "ran" : o.verdict ? "skipped" : "off", abstention, ...(lexicalMs !== undefined ? { lexicalMs } : {}), verdictMs };
}

/**
 * Refuses a route whose candidates hold a skill the lexicon records as lost (its text was gone when
 * lexicon.bin was rebuilt, so BM25 gives it no score and its B is −∞): `CORRUPT_FILE` naming the lost
 * text, as the verdict gives when it reads it, not a B of −∞ taken for the model's failure.
 */
async function refuseLost({ library }: Pick<RouterParts, "library">, candidates: readonly { skill: string }[]): Promise<void> {
  const lost = library.lexicon.lost;
  if (lost.length === 0) return;
  const set = new Set(lost);
  for (const c of candidates) {
    if (!set.has(c.skill)) continue;
    await library.text(library.entry(c.skill)); // CORRUPT_FILE: the bank has lost the text …; reinstall the skill
    throw new GavelError(`lexicon.bin records skill ${quoteForMessage(c.skill)} as lost, but its text is there: BM25 never scores it (delete lexicon.bin to have it rebuilt)`, "CORRUPT_FILE");
  }
}

/**
 * What abstention reads of the winner's words in the bank's BM25 index, computed only when the band
 * of `model` that decides for a library of e^logN skills reads it: its reference coverage of the task
 * (`gcov`: the task's words, each weighed by the projections' reference idf, that the skill's text
 * holds; `gcov2` the same with each weighed by its idf squared; absent without a reference idf) and `skillWords`, ln of its distinct words. Both absent when
 * the lexicon lacks the skill.
 */
function winnerWords({ projections, library }: Pick<RouterParts, "projections" | "library">, model: AbstentionModel | null, logN: number | undefined, taskText: string, skill: string): { gcov?: number; gcov2?: number; skillWords?: number } {
  const band = model ? bandFor(model, logN) : null;
  const ref = projections.referenceIdf;
  const gcov = ref !== null && readsFeature(band, "gcov");
  const gcov2 = ref !== null && readsFeature(band, "gcov2");
  const words = readsFeature(band, "skillWords");
  if (!gcov && !gcov2 && !words) return {};
  const index = library.lexicon.index;
  const doc = index.docTerms(skill);
  if (!doc) return {};
  return {
    ...(gcov ? { gcov: termsCoverage(ref, index.vocabulary, doc, taskText) } : {}),
    ...(gcov2 ? { gcov2: termsCoverage(ref, index.vocabulary, doc, taskText, 2) } : {}),
    ...(words ? { skillWords: Math.log(Math.max(1, doc.terms.length)) } : {}),
  };
}

/**
 * The task's domain score (the projections' domain table, src/lexical/domain.ts), computed only when
 * the band of `model` that decides for a library of e^logN skills reads it; absent without a table or
 * when the task holds none of its words.
 */
function taskDomain({ projections }: Pick<RouterParts, "projections">, model: AbstentionModel | null, logN: number | undefined, taskText: string): { domain?: number } {
  const table = projections.domain;
  if (table === null || !readsFeature(model ? bandFor(model, logN) : null, "domain")) return {};
  const domain = table.score(taskText);
  return domain === undefined ? {} : { domain };
}

/**
 * The re-ranker's shortlist (src/route/rerank.ts): the cheap stage's best `verdictTop` of the pool,
 * ordered by the full stage once the verdict has read them (by the cheap stage when the verdict is
 * off, there is one candidate, or the cheap stage's best leads by the model's `verdictMargin`).
 */
async function reranked(parts: RouterParts, lexical: LexicalExpert, query: Bm25Query, ranked: readonly Ranked[], handles: Int32Array, post: { B: Float64Array; raw: Float64Array }, o: { verdict: boolean; verdictText?: string; signal?: AbortSignal }): Promise<{ shortlist: Candidate[]; ran: boolean; verdictMs: number }> {
  const { projections, library } = parts;
  const rr = projections.rerank!;
  const taskText = query.text;
  const lucene = await lexical.scoresByColumn(library, query, handles, rr.lucene);
  const top = cheapTop(rerankPool(rr, taskText, ranked, post.raw, lucene, projections.lexicalTemperature), rr.verdictTop);
  await refuseLost(parts, top);
  const run = o.verdict && verdictNeeded(rr, top);
  const t = performance.now();
  const judged = run ? await judge(parts, o.verdictText ?? taskText, top, o.signal) : null;
  const verdictMs = run ? performance.now() - t : 0;
  const R = judged ? fullScores(rr, top, judged.map((j) => j.L), judged.map((j) => j.V)) : top.map((c) => c.cheap);
  const shortlist: Candidate[] = top.map((c, i) => {
    const B = post.B[c.column];
    const L = judged ? judged[i].L : NaN, V = judged ? judged[i].V : NaN;
    const S = judged ? c.g + projections.alpha * L + projections.gamma * V + projections.beta * B : firstStage(c.g, B, projections.beta);
    return { skill: c.skill, name: c.name, g: c.g, L, V, S, B, R: R[i] };
  });
  checkFiniteReadouts(shortlist, run, parts.model.path);
  for (const c of shortlist) {
    if (!Number.isFinite(c.R)) throw new GavelError(`the re-ranker's score of skill ${JSON.stringify(c.skill.slice(0, 200))} is ${c.R}, not a finite number (projections ${projections.trainedBy ?? "?"}): no skill is chosen`, "INTERNAL");
  }
  // best R first; ties keep the pool's order
  shortlist.sort((a, b) => b.R! - a.R!);
  return { shortlist, ran: run, verdictMs };
}
