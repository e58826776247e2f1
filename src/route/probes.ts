/**
 * Breadth probes and echo checks (docs/RELIABILITY.md, "Hostile skills").
 *
 * - **Hubs.** At install, a fixed set of generic probe tasks ({@link PROBE_TASKS}: everyday software
 *   tasks and off-domain prompts that no one skill should serve) is glanced over the routable
 *   library. For each probe, the skill with the highest mean token similarity m̄ = mean_i m_i(s) is
 *   its top match. A skill that is the top match of an unusually large share of the probes
 *   ({@link HUB_SHARE}) reads as a hub: keyword-stuffed, or a list of generic tasks. It is flagged
 *   with a `hub:` warning, kept in the bank with the skill.
 * - **Echoes.** At route time, a winner whose text holds a long verbatim run of the task's words
 *   ({@link ECHO_RUN} words or more) is flagged `echo`: a skill that copies the tasks it wants to win.
 *
 * The probe queries are encoded once per router (one forward pass per probe) and cached.
 *
 * @module
 */
import { encodeQueries, type Queries } from "./context.js";
import type { RouterParts } from "./parts.js";
import { voteK } from "../kernels/kernels.js";

/**
 * The probe tasks: short, varied, everyday software tasks and off-domain prompts. Fixed (a change
 * moves every skill's breadth): documented in docs/RELIABILITY.md.
 */
export const PROBE_TASKS: readonly string[] = Object.freeze([
  "Fix the failing unit test in the checkout module.",
  "Add a dark mode toggle to the settings page.",
  "Rename the variable userName to accountName everywhere in the project.",
  "Write a function that removes duplicates from a list.",
  "Why does my program crash with a null pointer exception on startup?",
  "Update all the dependencies to their latest versions.",
  "Add input validation to the signup form.",
  "Refactor this class to make it easier to test.",
  "Explain what this code does line by line.",
  "Set up logging for the payment service.",
  "Speed up the page that lists all customers.",
  "Write documentation comments for the public functions.",
  "Add a retry with backoff when the HTTP request fails.",
  "Convert the callbacks in this file to async/await.",
  "Create an endpoint that returns the list of orders as JSON.",
  "Store the user's preferences in a configuration file.",
  "Find and fix the memory leak in the background worker.",
  "Make the build pass on Windows.",
  "Add pagination to the search results.",
  "Review this pull request and point out problems.",
  "Parse the date strings in this spreadsheet column.",
  "Schedule a job that sends a report email every Monday.",
  "Translate the error messages into Spanish.",
  "Deploy the app to a staging server.",
  "Write a plan for migrating the service to a new framework.",
  "What is a good recipe for a vegetarian lasagna?",
  "Summarise the plot of a famous novel in three sentences.",
  "Help me plan a weekend trip to the mountains.",
  "Write a short poem about the sea.",
  "What is the capital of Australia?",
  "Give me tips for a job interview tomorrow.",
  "How do I care for a tomato plant on a balcony?",
]);

/**
 * A skill is a hub when it is the top match (highest m̄) of at least this share of the probes.
 * Measured (docs/RELIABILITY.md): among the 24 example skills and 200 public skills the largest
 * share was well below it; constructed keyword-stuffed and generic-task-list skills exceed it.
 */
export const HUB_SHARE = 0.25;

/** Probes are compared only within a library of at least this many routable skills (else no hub flag). */
export const HUB_MIN_SKILLS = 8;

/**
 * A routed winner echoes the task when its text holds a verbatim run of at least this many of the
 * task's words (lower-cased, punctuation ignored). Measured (docs/RELIABILITY.md): the 24 example
 * skills against the 24 demo tasks share runs of at most a few words; a skill that quotes a task holds it whole.
 */
export const ECHO_RUN = 8;

const probeCache = new WeakMap<object, Promise<Queries[]>>();

/** The probe tasks' queries for this router's model and projections, encoded once and cached. */
export function probeQueries(parts: RouterParts): Promise<Queries[]> {
  let p = probeCache.get(parts);
  if (!p) {
    p = (async () => {
      const out: Queries[] = [];
      for (const t of PROBE_TASKS) out.push(await encodeQueries(parts, t, false));
      return out;
    })();
    p.catch(() => probeCache.delete(parts));
    probeCache.set(parts, p);
  }
  return p;
}

/** One skill's breadth over the probes. */
export interface Breadth {
  /** Share of the probes whose top match (highest m̄) this skill is. */
  share: number;
  /** Its mean m̄ over the probes. */
  meanM: number;
  /** Share of the probes the glance itself ranks it first for (by the vote g, with the route's k). */
  gShare: number;
}

/**
 * Each routable skill's breadth over the probes, by skill id: the share of probes whose top match
 * it is, and its mean m̄. Empty when the library holds fewer than {@link HUB_MIN_SKILLS} routable skills.
 */
export async function probeBreadth(parts: RouterParts, signal?: AbortSignal): Promise<Map<string, Breadth>> {
  const { library } = parts;
  const handles = library.routable();
  const out = new Map<string, Breadth>();
  if (handles.length < HUB_MIN_SKILLS) return out;
  const probes = await probeQueries(parts);
  const S = handles.length;
  const top = new Int32Array(S);
  const gTop = new Int32Array(S);
  const sum = new Float64Array(S);
  const k = voteK(S);
  let cols: Int32Array | null = null;
  for (const q of probes) {
    const res = await library.keys.glance(q.queries, { weights: q.weights, k, handles, signal });
    cols ??= res.handles;
    const nq = q.queries.length / library.keys.dim;
    let best = -Infinity;
    let arg = 0;
    for (let s = 0; s < S; s++) {
      let m = 0;
      for (let i = 0; i < nq; i++) m += res.m[i * S + s];
      m /= nq;
      sum[s] += m;
      if (m > best) [best, arg] = [m, s];
    }
    top[arg]++;
    let gArg = 0;
    for (let s = 1; s < S; s++) if (res.g[s] > res.g[gArg]) gArg = s;
    gTop[gArg]++;
  }
  const n = probes.length;
  for (let s = 0; s < S; s++) out.set(library.idOf(cols![s]), { share: top[s] / n, meanM: sum[s] / n, gShare: gTop[s] / n });
  return out;
}

/** The warning a hub gets (its prefix `hub:` is what `excludeFlagged: ["hub"]` reads). */
export function hubWarning(b: Breadth, skills: number): string {
  return `hub: top match of ${(b.share * 100).toFixed(0)}% of ${PROBE_TASKS.length} generic probe tasks (flagged at ≥ ${HUB_SHARE * 100}%, among ${skills} skills; mean m̄ ${b.meanM.toFixed(3)}): it may win tasks it does not serve`;
}

/** Lower-cased words of a text (letters and digits), for the echo check. */
export function words(text: string): string[] {
  return text.normalize("NFKC").toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** The longest run of consecutive task words found verbatim, in order, in the skill's words. */
export function longestSharedRun(task: readonly string[], skill: readonly string[]): number {
  // dynamic programming over the two word lists, one row at a time: O(|task|·|skill|) time
  if (task.length === 0 || skill.length === 0) return 0;
  let prev = new Uint32Array(skill.length + 1);
  let cur = new Uint32Array(skill.length + 1);
  let best = 0;
  for (let i = 1; i <= task.length; i++) {
    for (let j = 1; j <= skill.length; j++) {
      cur[j] = task[i - 1] === skill[j - 1] ? prev[j - 1] + 1 : 0;
      if (cur[j] > best) best = cur[j];
    }
    [prev, cur] = [cur, prev];
    cur.fill(0);
  }
  return best;
}

/** Caps on the echo check's input, so it stays cheap on long tasks and skills (words). */
const ECHO_TASK_WORDS = 2000;
const ECHO_SKILL_WORDS = 20000;

/**
 * Whether a skill's text echoes the task: a verbatim run of at least {@link ECHO_RUN} of the task's
 * words (or the whole task, when it is shorter and at least 4 words). Returns the run's length, or 0.
 */
export function echoRun(taskText: string, skillText: string): number {
  const t = words(taskText).slice(0, ECHO_TASK_WORDS);
  const s = words(skillText).slice(0, ECHO_SKILL_WORDS);
  const run = longestSharedRun(t, s);
  const need = Math.min(ECHO_RUN, Math.max(4, t.length));
  return run >= need ? run : 0;
}
