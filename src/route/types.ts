/**
 * The router's public option and result types: what {@link Router.open}, {@link Router.install},
 * {@link Router.glance}, {@link Router.route} and {@link Router.rank} take and give.
 *
 * @module
 */
import type { ChatMessage } from "../render/index.js";
import type { LoadSkillsOptions, Skill, SkillFailure } from "../skills/index.js";
import type { Projections } from "../projections/projections.js";
import type { SkillHandle } from "./skill-record.js";

/**
 * A routing context: a written task, or a live chat (rendered with the model's chat template) that
 * holds at least one message besides the system prompt. Of a live chat, the glance reads the
 * rendering's end within the task budget, its leading system messages from their last 256 characters
 * and their rows with a vote weight of 0; BM25, abstention and the verdict read its messages without
 * the system prompt.
 */
export type RouteContext = string | ChatMessage[];

/** Options of {@link Router.open}. */
export interface RouterOpenOptions {
  /** The projections (W_q, W_s and the ruling's constants), or the non-empty path of their GGUF file. */
  projections: Projections | string;
  /** The bank's directory, a non-empty path (created when missing). */
  bankDir: string;
  /**
   * Most tokens of a skill render r(s) (what the verdict reads): an integer from 16 to 2^22 that
   * leaves at least 16 tokens of the model's context for a task. Default the projections' own
   * (`Projections.skillBudget`; 512 for the embedded pair) where they carry one that leaves room for a
   * task, else min(30,720, ¾ of the model's context).
   */
  skillBudget?: number;
  /**
   * Most tokens of a skill an install reads its keys from. A skill whose body r(s) cut to the skill
   * budget is rendered again at the key budget (within the context) and keyed from that one pass, whose
   * first tokens are r(s)'s; past the context, the body's next tokens up to the key budget are read
   * apart, in windows. The verdict still reads r(s) alone. Default: the projections' own
   * (`Projections.keyBudget`, 1,536 for the embedded pair) or the skill budget, whichever is larger
   * (the skill budget alone: keys from r(s) alone); 16 to 2^20.
   */
  keyBudget?: number;
  /**
   * Which part of a written task longer than a stage's budget the glance and the verdict read: "end"
   * (default: a request usually comes last, after pasted context) or "start". A live rollout always
   * keeps its end. The result's `truncation` says what was read (docs/RELIABILITY.md, "Long tasks").
   */
  truncate?: "start" | "end";
  /** Create the bank if it does not exist (default true; never with `readOnly`). */
  create?: boolean;
  /**
   * Read the bank's last committed snapshot without its lock (default false): never BANK_LOCKED
   * while another process installs, moves to newer commits by itself; install and uninstall are
   * refused. What `gavel route`, `glance` and `list` use.
   */
  readOnly?: boolean;
  /**
   * How the bank's keys are held in memory: "f32", or "f16" (IEEE half, rounded to nearest even):
   * half the memory of the keys, the largest part of a large bank's (about 11 GB of float32 keys
   * over 30,593 skills as `gavel` installs them). Each inner product stays within 2⁻¹¹ of float32's
   * for unit keys, so g may differ in its last digits and near ties may swap. The bank on disk keeps
   * float32 keys either way, so any router can open it either way. Default `GAVEL_KEY_TYPE`, else "f32".
   */
  keyType?: "f32" | "f16";
}

/** How often an install commits the bank by default (see {@link InstallOptions.commitEvery}). */
export const COMMIT_INTERVAL_MS = 10_000;

/** Progress of {@link Router.install}, reported after each skill. */
export interface InstallProgress {
  done: number;
  total: number;
  skill: string;
  status: "installed" | "unchanged" | "failed";
}

/** Options of {@link Router.install}. */
export interface InstallOptions extends Pick<LoadSkillsOptions, "offset" | "limit"> {
  /** Called after each skill, in library order; a throw from it ends the install and is what it rejects with (what was stored stays installed). */
  onProgress?: (p: InstallProgress) => void;
  signal?: AbortSignal;
  /**
   * Commit the bank every this many installed skills, and at the end. By default it commits at most
   * every 10 s (`COMMIT_INTERVAL_MS`) (and at the end): a commit rewrites the manifest, which grows
   * with the bank (~90 MB at 30K skills), so committing every few dozen skills made a large install
   * quadratic. An interrupted install loses at most the skills since the last commit.
   */
  commitEvery?: number;
  /**
   * Skills in flight at once (default 8): while the model runs one skill's forward pass, others are
   * rendered and tokenized, projected and compressed. The bank is the same for any value (skills are
   * stored in library order); a fast backend (a GPU) needs more in flight to stay busy.
   */
  concurrency?: number;
  /**
   * The root of a `gavel train --cache` folder trained on this model file (`install --states-cache`):
   * a skill whose keyed tokens (render, skill budget, cut) and layer are exactly those of an entry
   * there takes its states from it instead of a forward pass. Hits are the trainer's states rounded
   * through f16; misses (another budget or render, a skill the trainer skipped, another model file or
   * layer: a clean miss, see {@link InstallReport.statesCache}) are computed as without the option. Only
   * read: nothing is written there. The folder must exist (`FILE_NOT_FOUND` otherwise).
   */
  statesCache?: string;
  /**
   * @internal Asked in the install's turn of the write queue (no other install or uninstall runs until
   * it ends), for each skill read, with the skill of that id installed now (its recorded source and
   * content hash; undefined when none): false leaves the skill out, not installed and not reported.
   * How a sync installs only what its plan saw (serve/sync-plan.ts, serve/watch.ts).
   */
  admit?: (skill: Skill, installed: { readonly source: string; readonly contentHash: string } | undefined) => boolean;
}

/** What {@link Router.install} did, and where its time went. */
export interface InstallReport {
  /** Ids of the skills encoded now. */
  installed: string[];
  /** Ids of the skills already installed with the same content (nothing was computed). */
  unchanged: string[];
  failed: SkillFailure[];
  /**
   * The loader's warnings about the skills read (installed or unchanged), one record per skill that
   * has any: spec violations, steering phrases, non-boolean flags. The bank keeps them with the skill
   * ({@link InstalledSkill.warnings}).
   */
  warnings: SkillWarnings[];
  /** Ids of installed skills whose body was cut to fit the token budget (`skillBudget`). */
  truncated: string[];
  /** Tokens run through the model, and keys kept, for the installed skills. */
  tokens: number;
  keys: number;
  /** Keys before compression (the ε-cover keeps `keys` of them). */
  rawKeys: number;
  seconds: number;
  /**
   * Seconds spent in each stage, summed over the installed skills. Skills in flight overlap, so the
   * stages add up to more than `seconds`; the largest one is what bounds an install.
   */
  stages: InstallStages;
  /** With {@link InstallOptions.statesCache}: skills whose states it held, skills computed, and whether it held any state of this model file and layer. */
  statesCache?: { hits: number; misses: number; present: boolean };
}

/** One skill's loader warnings (see {@link InstallReport.warnings}). */
export interface SkillWarnings {
  id: string;
  name: string;
  warnings: string[];
}

/** Where an install's time went (see {@link InstallReport.stages}). */
export interface InstallStages {
  /** Rendering r(s) (JavaScript thread) and tokenizing it (libuv workers), cut search included. */
  render: number;
  /** The model's forward pass to layer ℓ*, queue wait included. */
  forward: number;
  /** Projection W_s h and normalisation. */
  project: number;
  /** The ε-cover. */
  cover: number;
  /** Writing the skill's text and keys to the bank. */
  store: number;
  /** Bank commits (manifest rewrites). */
  commit: number;
}

/** One installed skill, as {@link Router.list} reports it. */
export interface InstalledSkill {
  id: string;
  name: string;
  description: string;
  source: string;
  keys: number;
  renderTokens: number;
  /** Never chosen automatically (SKILL.md `disable-model-invocation: true`). */
  disableModelInvocation: boolean;
  /** The loader's warnings when it was installed; absent when there were none (or the bank predates them). */
  warnings?: string[];
}

/**
 * Which skills a route or glance may rank. A source selector is a source kind (`folder`,
 * `library`, `input`), a scope (`project`, `user`: a host folder directly under the home folder,
 * like `~/.claude/skills`), a host (`claude-code`, `codex`, `agents`, `github-copilot`, also spelt
 * `copilot`) or an absolute path prefix (a host folder, a library file); another word is refused with
 * `INVALID_ARGUMENT`, so a misspelt selector cannot switch an exclusion off.
 */
export interface ExclusionOptions {
  /**
   * Leave out skills carrying these flags: `hub` (the breadth probes at install found it the top
   * match of too many generic tasks), `injection` (a steering phrase), `echo` (its text holds a long
   * verbatim run of the task's words). The excluded skills' columns leave the glance itself.
   */
  excludeFlagged?: ("hub" | "echo" | "injection")[];
  /** Leave out skills from these sources (selectors, see above). */
  excludeSources?: string[];
}

/** Options of {@link Router.glance}. */
export interface GlanceOptions extends ExclusionOptions {
  /** How many skills to return, best first (default 20). */
  topK?: number;
  /** Read the context as a live rollout: decayed vote weights 2^(−a_i/64) and the paper's vote size (GAVEL_LIVE_ROW_WEIGHTS and GAVEL_LIVE_VOTE_SHARE can weigh the rows by idf and widen the vote), a chat's leading system messages' rows weighted 0 (default: true for chat messages). */
  live?: boolean;
  signal?: AbortSignal;
}

/** One skill ranked by the glance alone: its vote g. */
export interface GlanceHit {
  skill: string;
  name: string;
  g: number;
}

/** Options of {@link Router.route}. */
export interface RouteOptions extends ExclusionOptions {
  /**
   * Priority per source (selector → number, see {@link ExclusionOptions}): among the skills whose
   * glance vote g is within `tieMargin` of the best, only those from the highest-priority source stay
   * in the ranking (the others lose the near-tie), e.g. `{ project: 2, user: 1, library: 0 }`. A skill
   * no selector matches has priority 0; several matches take the highest.
   */
  trust?: Record<string, number>;
  /** The near-tie margin in g for `trust` (default the projections' Δ, the shortlist's own margin). */
  tieMargin?: number;
  /**
   * Abstain (load nothing) when the projections' calibrated abstention model says the task is served
   * by no installed skill; without a model, when the winner's verdict V < 0. Default: on when the
   * projections carry a model (`gavel calibrate --off-domain`), else off.
   */
  abstain?: boolean;
  /**
   * With `abstain`, also abstain at the library's own cut when the projections carry an abstention
   * reference and the library is small (default true; `GAVEL_LIBRARY_CUT=off` makes it false): the first route after a change to such a
   * library routes the reference's off-domain prompts over it (40 for the embedded projections, a
   * few milliseconds each), and routes then also abstain on any task that scores as off-domain as the
   * fourth most in-domain-looking of them (docs/projections-format.md, "A library's own cut"). A route
   * whose `lexical` differs from the default (or, without a re-ranker, with `verdict: false`) scores
   * otherwise than the cut was measured, and applies the model's cut alone.
   */
  libraryCut?: boolean;
  /**
   * Run the verdict on the shortlist (default true). Even when on, it is skipped when it cannot change
   * the outcome: one candidate, and abstention does not read V; with the projections' re-ranker, also
   * when its cheap stage's best leads by its `verdictMargin` or more, the routable library is under
   * its `verdictMinSkills` (then the cheap stage picks), or the route abstains (it loads nothing; the
   * shortlist it reports is in the cheap stage's order). Off: S is the first stage's g + βB, and a
   * re-ranker picks by its cheap stage.
   */
  verdict?: boolean;
  live?: boolean;
  /** Explain the choice: which task tokens voted for the winner, and what they matched. */
  explain?: boolean;
  /**
   * Compute the lexical expert B for the shortlist (BM25 over the installed skills' text as a log
   * posterior); S adds βB. Default: on when the projections' β > 0 (calibrated), else off.
   */
  lexical?: boolean;
  signal?: AbortSignal;
}

/** One shortlisted skill with the verdict's read-outs and its score under the ruling. */
export interface Candidate {
  skill: string;
  name: string;
  /** The glance's vote. */
  g: number;
  /** Mean log-likelihood of the task with the skill as prefix (NaN when the verdict did not run). */
  L: number;
  /** Log-odds of yes over no to "Does this skill provide what that task needs?" (NaN when the verdict did not run). */
  V: number;
  /** S = g + αL + γV (+ βB); g + βB when the verdict did not run. */
  S: number;
  /** The lexical expert's log posterior, when it was computed (`lexical`). */
  B?: number;
  /**
   * The re-ranker's score, when the projections carry one and it ordered the shortlist (its full
   * stage's where the verdict ran, else its cheap stage's); the shortlist is then in its order.
   */
  R?: number;
}

/** One task token that voted for the winner. */
export interface Vote {
  /** Position of the token within the task's tokens. */
  position: number;
  token: string;
  /** m_i(winner): its best similarity with the winner's keys. */
  m: number;
  /** The winner's token whose key it matched. */
  matched: string;
}

/** What {@link Router.route} chose, and why. */
export interface RouteResult {
  /** The chosen skill's id, or null (empty shortlist, or abstained). */
  skill: string | null;
  name: string | null;
  abstained: boolean;
  /** When abstention was on: why it abstained or not, and the value it compared with its threshold. */
  abstention?: { reason: string; score: number };
  /** The shortlist, best first: by R where the projections' re-ranker ranked it, else by S. */
  shortlist: Candidate[];
  /**
   * The verdict ran on the shortlist, was skipped (one candidate and V not needed; or the re-ranker's
   * cheap stage picked: a clear lead, a library under its `verdictMinSkills`, or a route that
   * abstained), or was turned off.
   */
  verdict: "ran" | "skipped" | "off";
  /**
   * What a host needs to load the winner: its id, name, the absolute path of its SKILL.md (or
   * library file), its folder and its content hash; null when nothing was chosen. `router.get(id)`
   * gives the skill whole (body, front matter, allowed-tools, provenance).
   */
  load: SkillHandle | null;
  /**
   * Where the time went: the glance, the lexical expert B (when computed), the verdict (0 when it did
   * not run) and the whole route.
   */
  timings: { glanceMs: number; verdictMs: number; totalMs: number; lexicalMs?: number };
  /** With `explain`: the task tokens that voted for the winner, strongest first. */
  explanation?: Vote[];
  /** Present when the glance or the verdict read only part of the task (see {@link TaskTruncation}). */
  truncation?: TaskTruncation;
  /**
   * Present when a written task's pasted material (fenced blocks, runs of log lines, stack frames,
   * dumps or code) outweighed its request and was read at the request's weight in all: `lines` pasted
   * lines (of the part the lexical readers take: at most the kept side's 65,536 characters, docs/RELIABILITY.md "Long tasks");
   * `wordWeight`, the weight a pasted word counted at in the lexical expert's query (1 when the route
   * did not read the lexical expert); `tokenWeight`, the
   * weight a pasted token voted at in the glance (1 when the glance read it as the rest). The verdict
   * reads the text as it is. GAVEL_PASTE_WEIGHT=off reads a paste word for word (docs/BENCHMARKS.md,
   * "Requests with a paste").
   */
  paste?: { lines: number; wordWeight: number; tokenWeight: number };
  /**
   * The chosen skill's flags, when it has any: `hub` and `injection` (from its warnings, see
   * {@link InstalledSkill.warnings}) and `echo` (its text holds a verbatim run of at least 8 of the
   * task's words: it may have won by copying the task).
   */
  flags?: ("hub" | "echo" | "injection")[];
}

/**
 * How a task longer than a stage's budget was cut. The glance reads a written task alone, so it reads
 * up to the whole context less the task render's scaffolding: `keptTokens` of the task's
 * `totalTokens`. The verdict reads the task after r(s), so it reads at most the router's task budget
 * (the context less the skill budget and the verdict's scaffolding): `verdictTokens`, present when
 * that is fewer than the glance read. Both keep the same part: the end of a written task by default
 * (its start with `truncate: "start"`), the end of a live rollout, which both stages read within the
 * task budget. A live chat's system prompt read from its end (past 256 characters) is not a cut: its
 * tokens before that are not counted.
 */
export interface TaskTruncation {
  /** Task tokens in the whole task. */
  totalTokens: number;
  /** Task tokens the glance read. */
  keptTokens: number;
  /**
   * totalTokens − keptTokens: tokens the glance did not read (0 when only the verdict's read was cut).
   * A written task's are read by no stage; a live rollout's glance reads the rendering's end (at most
   * 768 tokens under the decay) while BM25 and the verdict read the messages' text on their own terms.
   */
  droppedTokens: number;
  /** Task tokens the verdict reads (its task budget), when fewer than keptTokens. */
  verdictTokens?: number;
  /** Which part was read: `"start"` or `"end"` (a written task: as the router was opened; a live rollout: its end). */
  kept: "start" | "end";
}

/** Options of {@link Router.rank}. */
export interface RankOptions {
  /** How many skills the glance list holds, best first (default 20). */
  glanceTop?: number;
  /** How many of the glance's best get a verdict, whatever Δ (default the projections' maxShortlist). */
  verdictTop?: number;
  /**
   * More skills to read out whatever their rank (e.g. BM25's leaders): each one outside the glance
   * list gets its g in {@link RankResult.also}, and each one outside the verdict's top a verdict too.
   * Ids the routable library lacks are ignored.
   */
  also?: readonly string[];
  live?: boolean;
  signal?: AbortSignal;
}

/** What {@link Router.rank} reads out: the glance's ranking and the verdict's candidates, best S first. */
export interface RankResult {
  glance: GlanceHit[];
  verdict: Candidate[];
  /** With `also`: those of its skills outside the glance list, with their g, in glance order. */
  also?: GlanceHit[];
}
