/**
 * Bash-agent trajectories for the gate (paper, section 4.4 and the end-to-end deployment):
 * multi-turn contexts in the style of mini-swe-agent (a system prompt, a user task, the assistant's
 * THOUGHT + one bash command per turn, the shell's output as the next user turn), where the need for a
 * skill surfaces at a decision point mid-conversation, after noisy turns that never need one.
 *
 * - Positives come from benchmark tasks with gold skills (SWE-Skills-Bench): after one to three noise
 *   exchanges (plain shell chores), the task's text arrives either as a new user request
 *   (`user-request`: the decision point closes that user turn) or as the output of `cat` on a ticket
 *   file the user points at (`tool-evidence`: the decision point closes the tool output).
 * - Negatives are built the same way, with the same scenarios and turn shapes, but the message at the
 *   decision point carries a plain shell chore ticket that no skill serves.
 *
 * Everything is drawn from one seeded stream ({@link Rng}): the same tasks, options and seed give the
 * same trajectories, byte for byte. Ticket file names are random numbers (a task's id often equals its
 * gold skill's name). The gold skills' own texts never enter a trajectory.
 *
 * @module
 */
import { invalidArgument, Rng } from "gavel-router/internal";
import type { ChatMessage } from "gavel-router";

/** Where the need surfaces: in a user request, or in a tool's output; `none` for a negative. */
export type TrajectoryScenario = "user-request" | "tool-evidence";

/** One trajectory: chat messages and where its decision point is. */
export interface Trajectory {
  /** Unique within a build, e.g. `pos:batch1/add-admin-api-endpoint:0` or `neg:17`. */
  id: string;
  /** The benchmark task it embeds (null for a negative). */
  task: string | null;
  /** That task's batch number (null for a negative). */
  batch: number | null;
  /** The gold skill ids (empty for a negative: no skill is needed anywhere). */
  gold: string[];
  /** Whether a skill is needed at the decision point. */
  needsSkill: boolean;
  scenario: TrajectoryScenario;
  /** System prompt, then alternating user / assistant turns (tool outputs are user turns, as in mini-swe-agent). */
  messages: ChatMessage[];
  /** Index of the message whose end is the decision point: the need surfaces in it (a negative: its chore ticket). */
  decision: number;
}

/** A benchmark task as the builder reads it (SWE-Skills-Bench's tasks.jsonl rows fit). */
export interface TrajectoryTask {
  id: string;
  text: string;
  gold_skill_ids: string[];
  batch?: string | number;
}

/** Options of {@link buildTrajectories}. */
export interface TrajectoryOptions {
  /** Seed of every draw (default 1). */
  seed?: number;
  /** Only tasks of these batch numbers (required: training uses 1–5, testing 6–10). */
  batches: ReadonlySet<number> | readonly number[];
  /** Trajectories per task (default 1). */
  perTask?: number;
  /** Negative trajectories (default: as many as positives). */
  negatives?: number;
  /** Noise exchanges before the decision point, inclusive range (default [1, 3]). */
  noise?: [number, number];
  /** A task's text is cut to this many characters at a line break (default 1500: the context stays small). */
  maxTaskChars?: number;
  /** Scenarios to draw from (default both). */
  scenarios?: readonly TrajectoryScenario[];
  /** At most this many tasks, after the batch filter (seeded sample; default all). */
  maxTasks?: number;
}

/** The system prompt, in the spirit of mini-swe-agent's (no skills are listed). */
export const AGENT_SYSTEM_PROMPT =
  "You are a helpful assistant that can interact with a computer shell to solve programming tasks.\n" +
  "Your response must contain exactly ONE bash code block with ONE command (or commands connected with && or ||).\n" +
  "Include a THOUGHT section before your command where you explain your reasoning process.\n" +
  "Format your response as:\nTHOUGHT: your reasoning\n\n```bash\nyour_command_here\n```";

/** The number in a batch label (`6`, `"6"`, `"batch6"`). */
function batchOf(b: string | number | undefined): number | null {
  if (typeof b === "number") return Number.isInteger(b) ? b : null;
  const m = typeof b === "string" ? /(\d+)\s*$/.exec(b) : null;
  return m ? Number(m[1]) : null;
}

/** A task's text cut to `max` characters, at the last line break before it when there is one. */
export function cutTaskText(text: string, max: number): string {
  const t = text.trim();
  if (t.length <= max) return t;
  const cut = t.slice(0, max);
  const nl = cut.lastIndexOf("\n");
  return (nl > max / 2 ? cut.slice(0, nl) : cut).trimEnd();
}

const pick = <T>(r: Rng, xs: readonly T[]): T => xs[r.int(xs.length)];
const between = (r: Rng, lo: number, hi: number): number => lo + r.int(hi - lo + 1);

const DIRS = ["logs", "tmp", "data", "build", "scripts", "notes", "backups", "reports", "assets", "cache"];
const EXTS = ["log", "txt", "csv", "json", "md", "bak", "tmp"];
const WORDS = ["alpha", "beta", "report", "draft", "output", "summary", "archive", "sample", "old", "final", "notes", "export"];
const USERS = ["alice", "bob", "carol", "dave", "erin", "frank"];

function fileName(r: Rng): string {
  return `${pick(r, WORDS)}_${between(r, 1, 99)}.${pick(r, EXTS)}`;
}

function lsOutput(r: Rng, n: number): string {
  const lines = [`total ${between(r, 8, 400)}`];
  for (let i = 0; i < n; i++) {
    const size = between(r, 12, 90_000);
    lines.push(`-rw-r--r-- 1 ${pick(r, USERS)} staff ${String(size).padStart(6)} Nov ${between(r, 1, 28)} ${String(between(r, 0, 23)).padStart(2, "0")}:${String(between(r, 0, 59)).padStart(2, "0")} ${fileName(r)}`);
  }
  return lines.join("\n");
}

/** One noise exchange: the assistant's turn (THOUGHT + a bash command) and the shell's output. */
interface Exchange {
  thought: string;
  command: string;
  output: string;
}

/** Plain shell chores: the noise before a decision point, and what negatives are made of. */
const CHORES: { request: (r: Rng) => string; steps: ((r: Rng) => Exchange)[] }[] = [
  {
    request: (r) => `Can you check how much disk space the ${pick(r, DIRS)} folder takes and list the biggest files in it?`,
    steps: [
      (r) => ({ thought: "Let me measure the folder's size first.", command: `du -sh ${pick(r, DIRS)}`, output: `${between(r, 2, 900)}M\t${pick(r, DIRS)}` }),
      (r) => ({ thought: "Now the largest files, sorted by size.", command: `ls -lS ${pick(r, DIRS)} | head -n 6`, output: lsOutput(r, 5) }),
    ],
  },
  {
    request: (r) => `Please rename every .${pick(r, EXTS)} file in ${pick(r, DIRS)}/ so that the names are lower case.`,
    steps: [
      (r) => ({ thought: "First I list the files that would be renamed.", command: `ls ${pick(r, DIRS)}`, output: Array.from({ length: between(r, 2, 6) }, () => fileName(r).toUpperCase()).join("\n") }),
      (r) => ({ thought: "I rename them with a small loop.", command: `for f in ${pick(r, DIRS)}/*; do mv "$f" "$(echo "$f" | tr A-Z a-z)"; done && echo done`, output: "done" }),
    ],
  },
  {
    request: (r) => `How many lines does each file in ${pick(r, DIRS)}/ have? Just give me the counts.`,
    steps: [
      (r) => {
        const n = between(r, 2, 5);
        const rows = Array.from({ length: n }, () => `${String(between(r, 1, 5000)).padStart(6)} ${pick(r, DIRS)}/${fileName(r)}`);
        return { thought: "wc -l gives the line count per file.", command: `wc -l ${pick(r, DIRS)}/*`, output: `${rows.join("\n")}\n${String(between(r, 5000, 20000)).padStart(6)} total` };
      },
    ],
  },
  {
    request: () => "What is the current git status of the repository? Is anything uncommitted?",
    steps: [
      (r) => ({
        thought: "Let me look at the working tree.",
        command: "git status --short",
        output: Array.from({ length: between(r, 1, 4) }, () => `${pick(r, [" M", "??", " D", "A "])} ${pick(r, DIRS)}/${fileName(r)}`).join("\n"),
      }),
      (r) => ({ thought: "And the last commits, for context.", command: "git log --oneline -n 3", output: Array.from({ length: 3 }, () => `${r.int(0xfffffff).toString(16).padStart(7, "0")} ${pick(r, ["Fix typo", "Update readme", "Bump version", "Tidy scripts", "Add notes"])}`).join("\n") }),
    ],
  },
  {
    request: (r) => `Delete the ${pick(r, EXTS)} files older than ${between(r, 3, 60)} days in ${pick(r, DIRS)}/, but show me what would go first.`,
    steps: [
      (r) => ({ thought: "A dry run with find shows what matches.", command: `find ${pick(r, DIRS)} -name '*.${pick(r, EXTS)}' -mtime +${between(r, 3, 60)} -print`, output: Array.from({ length: between(r, 1, 5) }, () => `${pick(r, DIRS)}/${fileName(r)}`).join("\n") }),
      () => ({ thought: "These are the files; I delete them now.", command: "find . -name '*.tmp' -mtime +30 -delete && echo removed", output: "removed" }),
    ],
  },
  {
    request: (r) => `Make the scripts in ${pick(r, DIRS)}/ executable and show me their permissions.`,
    steps: [
      (r) => ({ thought: "chmod +x on the folder's shell scripts.", command: `chmod +x ${pick(r, DIRS)}/*.sh && ls -l ${pick(r, DIRS)}`, output: lsOutput(r, between(r, 2, 4)).replace(/-rw-r--r--/g, "-rwxr-xr-x") }),
    ],
  },
  {
    request: (r) => `Compress the ${pick(r, DIRS)} folder into a dated tar.gz archive in ${pick(r, DIRS)}/.`,
    steps: [
      (r) => ({ thought: "tar with gzip, named by today's date.", command: `tar -czf backups/${pick(r, DIRS)}-$(date +%F).tar.gz ${pick(r, DIRS)} && ls backups`, output: Array.from({ length: between(r, 1, 3) }, () => `${pick(r, DIRS)}-2026-${String(between(r, 1, 12)).padStart(2, "0")}-${String(between(r, 1, 28)).padStart(2, "0")}.tar.gz`).join("\n") }),
    ],
  },
  {
    request: (r) => `Find every TODO comment under ${pick(r, DIRS)}/ and tell me how many there are.`,
    steps: [
      (r) => ({ thought: "grep -rn lists them with line numbers.", command: `grep -rn TODO ${pick(r, DIRS)} | head -n 5`, output: Array.from({ length: between(r, 1, 5) }, () => `${pick(r, DIRS)}/${fileName(r)}:${between(r, 1, 400)}: # TODO ${pick(r, ["clean this up", "remove later", "check again", "rename"])}`).join("\n") }),
      (r) => ({ thought: "And the total count.", command: `grep -rn TODO ${pick(r, DIRS)} | wc -l`, output: String(between(r, 1, 60)) }),
    ],
  },
  {
    request: () => "Which processes are using the most memory right now?",
    steps: [
      (r) => ({ thought: "ps sorted by memory.", command: "ps aux --sort=-%mem | head -n 5", output: ["USER PID %CPU %MEM COMMAND", ...Array.from({ length: 4 }, () => `${pick(r, USERS)} ${between(r, 100, 40000)} ${between(r, 0, 90)}.${between(r, 0, 9)} ${between(r, 0, 30)}.${between(r, 0, 9)} ${pick(r, ["node", "python3", "bash", "sshd", "cron", "vim"])}`)].join("\n") }),
    ],
  },
  {
    request: (r) => `Show me the last lines of ${pick(r, DIRS)}/${fileName(r)}, I want to see if the nightly job finished.`,
    steps: [
      (r) => ({ thought: "tail shows the end of the file.", command: `tail -n 5 ${pick(r, DIRS)}/${fileName(r)}`, output: Array.from({ length: 5 }, () => `2026-11-${String(between(r, 1, 28)).padStart(2, "0")} ${String(between(r, 0, 23)).padStart(2, "0")}:00 ${pick(r, ["INFO job started", "INFO step done", "WARN slow step", "INFO job finished", "INFO upload ok"])}`).join("\n") }),
    ],
  },
];

/** Plain chore tickets: what a negative's decision point carries, shaped like a benchmark task. */
const CHORE_TICKETS: ((r: Rng) => string)[] = [
  (r) => `# Task: Clean Up Old Files in ${pick(r, DIRS)}/\n\n## Background\n\nThe ${pick(r, DIRS)} folder keeps growing and nobody reads files older than ${between(r, 7, 90)} days.\n\n## Requirements\n\n* Delete \`*.${pick(r, EXTS)}\` files older than ${between(r, 7, 90)} days\n* Keep the folder itself\n* Print how many files were removed\n\n## Acceptance Criteria\n\n* No matching file older than the limit remains`,
  (r) => `# Task: Rename Files to Lower Case\n\n## Background\n\nSome files in \`${pick(r, DIRS)}/\` were uploaded with upper-case names.\n\n## Requirements\n\n* Rename every file in the folder to lower case\n* Do not touch sub-folders\n\n## Acceptance Criteria\n\n* \`ls ${pick(r, DIRS)}\` shows only lower-case names`,
  (r) => `# Task: Archive the ${pick(r, DIRS)} Folder\n\n## Background\n\nWe want a dated backup of \`${pick(r, DIRS)}/\` before the weekend.\n\n## Requirements\n\n* Create \`backups/${pick(r, DIRS)}-YYYY-MM-DD.tar.gz\`\n* Print the archive's size\n\n## Acceptance Criteria\n\n* The archive exists and lists with \`tar -tzf\``,
  (r) => `# Task: Count Lines per File\n\n## Background\n\n${pick(r, USERS)} asked how big the files in \`${pick(r, DIRS)}/\` are.\n\n## Requirements\n\n* Print the line count of every file\n* Print the total at the end\n\n## Acceptance Criteria\n\n* The counts match \`wc -l\``,
  (r) => `# Task: Make Scripts Executable\n\n## Background\n\nThe shell scripts in \`${pick(r, DIRS)}/\` lost their executable bit after a copy.\n\n## Requirements\n\n* Run \`chmod +x\` on every \`*.sh\` file there\n* Show the permissions afterwards\n\n## Acceptance Criteria\n\n* Every script has mode 755`,
  (r) => `# Task: Report Disk Usage\n\n## Background\n\nThe disk is at ${between(r, 80, 99)}% and we need to know which folders are the largest.\n\n## Requirements\n\n* List the ${between(r, 3, 10)} largest folders under the home directory\n* Sizes in human-readable units\n\n## Acceptance Criteria\n\n* The list is sorted, largest first`,
  (r) => `# Task: Find TODO Comments\n\n## Background\n\nBefore the release we want to know how many TODO comments are left in \`${pick(r, DIRS)}/\`.\n\n## Requirements\n\n* List each TODO with its file and line\n* Print the total count\n\n## Acceptance Criteria\n\n* The count equals \`grep -rn TODO | wc -l\``,
  (r) => `# Task: Tail the Nightly Log\n\n## Background\n\nThe nightly job writes to \`${pick(r, DIRS)}/${fileName(r)}\`.\n\n## Requirements\n\n* Show its last ${between(r, 5, 50)} lines\n* Say whether the job finished\n\n## Acceptance Criteria\n\n* The answer quotes the final log line`,
  (r) => `# Task: Remove Empty Folders\n\n## Background\n\nA migration left empty folders under \`${pick(r, DIRS)}/\`.\n\n## Requirements\n\n* Delete every empty folder there, recursively\n* Print what was removed\n\n## Acceptance Criteria\n\n* \`find ${pick(r, DIRS)} -type d -empty\` prints nothing`,
  (r) => `# Task: Sort and Deduplicate a List\n\n## Background\n\n\`${pick(r, DIRS)}/${pick(r, WORDS)}.txt\` holds one e-mail address per line, with repeats.\n\n## Requirements\n\n* Sort the lines\n* Remove duplicates in place\n\n## Acceptance Criteria\n\n* \`sort -u\` of the file equals the file`,
];

/** The assistant's closing remark on a chore, before the next user turn. */
const DONE_REMARKS = ["Done.", "That's finished.", "All set.", "Here is the result above.", "Finished; anything else?"];

function assistantTurn(e: Exchange): string {
  return `THOUGHT: ${e.thought}\n\n\`\`\`bash\n${e.command}\n\`\`\``;
}

function observation(output: string, code = 0): string {
  return `<returncode>${code}</returncode>\n<output>\n${output}\n</output>`;
}

/** The noise: one chore, asked and worked through (1 to steps.length exchanges), then closed by the assistant. */
function noiseChore(r: Rng, first: boolean): ChatMessage[] {
  const chore = pick(r, CHORES);
  const request = chore.request(r);
  const out: ChatMessage[] = [{ role: "user", content: first ? request : `${pick(r, ["Thanks.", "Great, thanks.", "OK."])} ${request}` }];
  const n = between(r, 1, chore.steps.length);
  for (let i = 0; i < n; i++) {
    const e = chore.steps[i](r);
    out.push({ role: "assistant", content: assistantTurn(e) }, { role: "user", content: observation(e.output) });
  }
  // mini-swe-agent's way to end a task: the next user turn follows this assistant turn.
  out.push({ role: "assistant", content: `THOUGHT: ${pick(r, DONE_REMARKS)}\n\n\`\`\`bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n\`\`\`` });
  return out;
}

/** The messages up to and including the decision point: noise, then `payload` as a request or a ticket's content. */
function withDecision(r: Rng, payload: string, scenario: TrajectoryScenario, noise: [number, number]): { messages: ChatMessage[]; decision: number } {
  const messages: ChatMessage[] = [{ role: "system", content: AGENT_SYSTEM_PROMPT }];
  const n = between(r, noise[0], noise[1]);
  for (let i = 0; i < n; i++) messages.push(...noiseChore(r, i === 0));
  if (scenario === "user-request") {
    messages.push({ role: "user", content: `${pick(r, ["Thanks.", "Good.", "OK, next one."])} ${pick(r, ["Here is the next task:", "Now please do this:", "Next task for you:"])}\n\n${payload}` });
  } else {
    const ticket = `tickets/T-${between(r, 1000, 9999)}.md`;
    messages.push({ role: "user", content: `${pick(r, ["Thanks.", "Good.", "OK."])} ${pick(r, ["The next ticket is in", "Please handle the ticket in", "Next, take care of"])} \`${ticket}\`.` });
    messages.push({ role: "assistant", content: assistantTurn({ thought: "Let me read the ticket first.", command: `cat ${ticket}`, output: "" }) });
    messages.push({ role: "user", content: observation(payload) });
  }
  return { messages, decision: messages.length - 1 };
}

/** Fisher–Yates with the stream. */
function shuffle<T>(r: Rng, xs: T[]): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = r.int(i + 1);
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}

/**
 * Trajectories from benchmark tasks: positives (one or more per task of the selected batches, the task
 * surfacing at the decision point; a task whose text also appears in an unselected batch is left out) and negatives (chore tickets there), shuffled together. Seeded and
 * deterministic.
 *
 * @example
 * ```ts
 * const tasks = await loadTasks("../shared/data/swe-skills-bench/tasks.jsonl");
 * const train = buildTrajectories(tasks, { batches: [1, 2, 3, 4, 5], seed: 7 });
 * // train[0].messages: system, user chore, assistant `du -sh logs`, user <output>, …, the task at train[0].decision
 * ```
 * @throws GavelError INVALID_ARGUMENT on bad options, or when no task of the batches has a gold skill
 */
export function buildTrajectories(tasks: readonly TrajectoryTask[], options: TrajectoryOptions): Trajectory[] {
  const o = options ?? ({} as TrajectoryOptions);
  const batches = new Set(o.batches instanceof Set ? o.batches : Array.isArray(o.batches) ? o.batches : []);
  if (batches.size === 0) throw invalidArgument("buildTrajectories needs batches (e.g. [1, 2, 3, 4, 5] for training)");
  const seed = o.seed ?? 1;
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw invalidArgument(`seed must be an unsigned 32-bit integer, got ${seed}`);
  const perTask = o.perTask ?? 1;
  if (!Number.isInteger(perTask) || perTask < 1 || perTask > 100) throw invalidArgument(`perTask must be an integer in [1, 100], got ${perTask}`);
  const noise = o.noise ?? [1, 3];
  if (!Array.isArray(noise) || noise.length !== 2 || !noise.every((x) => Number.isInteger(x) && x >= 0 && x <= 20) || noise[0] > noise[1]) {
    throw invalidArgument("noise must be [min, max] exchanges, integers in [0, 20], min ≤ max");
  }
  const maxChars = o.maxTaskChars ?? 1500;
  if (!Number.isInteger(maxChars) || maxChars < 50) throw invalidArgument(`maxTaskChars must be an integer ≥ 50, got ${maxChars}`);
  const scenarios = o.scenarios ?? (["user-request", "tool-evidence"] as const);
  if (scenarios.length === 0 || scenarios.some((s) => s !== "user-request" && s !== "tool-evidence")) throw invalidArgument("scenarios must be user-request and/or tool-evidence");
  const r = new Rng(seed);
  // A task whose text also belongs to a batch outside the selection is left out: SWE-Skills-Bench
  // repeats one task (dotnet-backend-patterns) word for word in every batch, and a training build must
  // not carry a test task's text.
  const outside = new Set(tasks.filter((t) => !batches.has(batchOf(t.batch) ?? -1)).map((t) => t.text.trim()));
  let selected = tasks.filter((t) => {
    const b = batchOf(t.batch);
    return b !== null && batches.has(b) && t.gold_skill_ids.length > 0 && t.text.trim().length > 0 && !outside.has(t.text.trim());
  });
  if (selected.length === 0) throw invalidArgument(`no task of batches ${[...batches].join(",")} has a gold skill`);
  if (o.maxTasks !== undefined) {
    if (!Number.isInteger(o.maxTasks) || o.maxTasks < 1) throw invalidArgument(`maxTasks must be a positive integer, got ${o.maxTasks}`);
    selected = shuffle(r, [...selected]).slice(0, o.maxTasks).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
  const out: Trajectory[] = [];
  for (const t of selected) {
    for (let k = 0; k < perTask; k++) {
      const scenario = pick(r, scenarios);
      const { messages, decision } = withDecision(r, cutTaskText(t.text, maxChars), scenario, noise);
      out.push({ id: `pos:${t.id}:${k}`, task: t.id, batch: batchOf(t.batch), gold: [...t.gold_skill_ids], needsSkill: true, scenario, messages, decision });
    }
  }
  const nNeg = o.negatives ?? out.length;
  if (!Number.isInteger(nNeg) || nNeg < 0) throw invalidArgument(`negatives must be a non-negative integer, got ${nNeg}`);
  for (let k = 0; k < nNeg; k++) {
    const scenario = pick(r, scenarios);
    const { messages, decision } = withDecision(r, pick(r, CHORE_TICKETS)(r), scenario, noise);
    out.push({ id: `neg:${k}`, task: null, batch: null, gold: [], needsSkill: false, scenario, messages, decision });
  }
  return shuffle(r, out);
}

/**
 * Splits trajectories into two parts by a seeded draw per task (both trajectories of one task on the
 * same side; negatives drawn one by one): about `fraction` of them go to `held`.
 */
export function splitTrajectories(trajectories: readonly Trajectory[], fraction: number, seed = 1): { train: Trajectory[]; held: Trajectory[] } {
  if (!(fraction >= 0 && fraction < 1)) throw invalidArgument(`the held-out fraction must be in [0, 1), got ${fraction}`);
  const keys = [...new Set(trajectories.map((t) => t.task ?? t.id))].sort();
  const r = new Rng(seed ^ 0x5bd1e995);
  const held = new Set<string>();
  for (const k of keys) if (r.next() < fraction) held.add(k);
  const train: Trajectory[] = [];
  const out: Trajectory[] = [];
  for (const t of trajectories) (held.has(t.task ?? t.id) ? out : train).push(t);
  return { train, held: out };
}
