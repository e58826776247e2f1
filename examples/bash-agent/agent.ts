/**
 * A minimal bash agent in the style of mini-swe-agent, with the GAVEL router inside its decode loop.
 *
 * The loop: the model answers each turn with a short thought and exactly one ```bash code block;
 * the harness runs the command in a throwaway sandbox (./sandbox.ts) and returns its output as the
 * next user message, until a command prints `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` as its first
 * line (the rest of its output is the final answer) or the turns run out.
 *
 * The router reads the agent's own forward passes: every prompt and generated token's ℓ* state
 * goes into a `router.live()` context (generation's `onPrompt` and each chunk's `state`), and after
 * each generated token a gate reads the live scores and the token's state. When the gate fires, the
 * router rules over the context as it stands (`router.route`, live weights, the verdict on the
 * shortlist, abstention); unless it abstains, the half-written message stays in the context as far
 * as it got, the chosen skill's SKILL.md is appended as a `[skill loaded: …]` message, and the turn
 * starts over with the skill in view (the paper's harness, "End-to-end deployment").
 *
 * Every step is reported as a JSON-serialisable event (`log`), which main.ts writes as JSON lines.
 */
import { readFile } from "node:fs/promises";
import {
  Gate, gateScoreFeatures, GATE_SCORE_FEATURES, generateChat, renderChat,
  type ChatMessage, type GateModel, type GenerateChunk, type GenerateOptions, type LiveContext, type LiveScore, type Model,
  type RouteOptions, type Router,
} from "gavel-router";
import { Sandbox, type ExecResult, type SandboxOptions } from "./sandbox.js";

/** What a command prints as its first line to end the run (mini-swe-agent's marker). */
export const SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";

// ---- the policy: who writes the assistant's turns ------------------------------------------------

/** One assistant turn to write. */
export interface TurnRequest {
  /** The conversation so far (system, task, replies, observations, loaded skills). */
  messages: readonly ChatMessage[];
  /** The layer whose states the chunks must carry (the router's ℓ*). */
  captureLayer: number;
  /** Must be called once with the prompt's states at `captureLayer` (tokens × nEmbd) before the first chunk. */
  onPrompt: (states: Float32Array, tokens: Int32Array) => void;
  /** When true, each chunk must also carry its `finalState` (the final layer's row: generate's `finalState`). */
  finalState?: boolean;
  signal?: AbortSignal;
}

/**
 * Writes the assistant's turns as a stream of tokens, each with its state at `captureLayer`. The
 * harness may stop reading mid-turn (a gate firing): the stream must then release what it holds
 * (an async generator's `finally`).
 */
export interface Policy {
  turn(request: TurnRequest): AsyncIterable<GenerateChunk>;
}

/** The default policy: the model itself, through its chat template ({@link generateChat}). */
export class ModelPolicy implements Policy {
  readonly model: Model;
  readonly options: Omit<GenerateOptions, "captureLayer" | "onPrompt" | "signal" | "special" | "finalState">;

  /** Generation options default to greedy decoding (temperature 0) and 256 tokens a turn. */
  constructor(model: Model, options: Omit<GenerateOptions, "captureLayer" | "onPrompt" | "signal" | "special" | "finalState"> = {}) {
    this.model = model;
    this.options = { temperature: 0, maxTokens: 256, ...options };
  }

  turn(r: TurnRequest): AsyncIterable<GenerateChunk> {
    return generateChat(this.model, r.messages, {
      ...this.options, captureLayer: r.captureLayer, onPrompt: r.onPrompt, signal: r.signal, finalState: r.finalState === true,
    });
  }
}

/** What a {@link ScriptedPolicy} is asked for: the call's index (restarts included) and the conversation. */
export type Script = readonly string[] | ((call: number, messages: readonly ChatMessage[]) => string);

/**
 * Predetermined turns for tests and demos, read through the real model: the conversation is
 * rendered and tokenized exactly as {@link generateChat} does, the scripted reply is appended, and one
 * `hiddenStates` pass over the whole sequence gives the prompt's states and each reply token's (and
 * their final-layer rows when asked) —
 * the states the model would have produced had it written the reply itself. So the live context,
 * the gate and the route read real states; only the choice of tokens is scripted.
 *
 * With an array, call i gets turn i (a turn restarted after a skill load is a new call).
 */
export class ScriptedPolicy implements Policy {
  readonly model: Model;
  readonly #script: Script;
  /** The conversation each call was given, in order (for tests). */
  readonly calls: ChatMessage[][] = [];

  constructor(model: Model, script: Script) {
    this.model = model;
    this.#script = script;
  }

  async *turn(r: TurnRequest): AsyncGenerator<GenerateChunk, void, undefined> {
    const call = this.calls.length;
    this.calls.push(r.messages.map((m) => ({ ...m })));
    const reply = typeof this.#script === "function" ? this.#script(call, r.messages) : this.#script[call];
    if (typeof reply !== "string") throw new Error(`the script has no turn ${call}`);
    const { model } = this;
    const rendered = renderChat(model.info.chatTemplate ?? null, r.messages, { addGenerationPrompt: true });
    const prompt = model.tokenize(rendered, { special: true, addBos: model.info.addBos });
    const tokens = model.tokenize(reply, { special: false, addBos: false });
    const all = new Int32Array(prompt.length + tokens.length);
    all.set(prompt);
    all.set(tokens, prompt.length);
    const last = model.info.nLayer - 1;
    const layers = r.finalState === true && r.captureLayer !== last ? [r.captureLayer, last] : [r.captureLayer];
    const hs = await model.hiddenStatesAt(all, layers, { signal: r.signal });
    const states = hs[0];
    const finals = r.finalState === true ? hs[hs.length - 1] : null;
    const n = model.info.nEmbd;
    r.onPrompt(states.slice(0, prompt.length * n), prompt);
    let emitted = 0;
    for (let i = 0; i < tokens.length; i++) {
      r.signal?.throwIfAborted();
      // whole characters only, as generate releases them
      let text = model.detokenize(tokens.subarray(0, i + 1), { special: false });
      if (i < tokens.length - 1) while (text.endsWith("\ufffd")) text = text.slice(0, -1);
      const piece = text.length > emitted ? text.slice(emitted) : "";
      emitted = Math.max(emitted, text.length);
      const row = prompt.length + i;
      const state = states.slice(row * n, (row + 1) * n);
      yield finals ? { token: tokens[i], text: piece, state, finalState: finals.slice(row * n, (row + 1) * n) } : { token: tokens[i], text: piece, state };
    }
  }
}

// ---- the gate --------------------------------------------------------------------------------------

/** What the loop needs of a gate: {@link Gate} has it. */
export interface GateLike {
  /** One generated token: true when the gate fires at it. */
  step(g: ArrayLike<number>, state: ArrayLike<number>): boolean;
  /** The score whose sign is the gate's per-token decision (for the log); optional. */
  logit?(g: ArrayLike<number>, state: ArrayLike<number>): number;
  /** Forgets the streak (called at the start of every assistant message). */
  reset(): void;
}

/**
 * The stand-in gate when none is given: positive while the live leader's margin over the runner-up
 * (g₁ − g₂) exceeds `margin`, firing once it has been positive for two consecutive tokens. It is a
 * {@link Gate} whose only weight is on the margin feature (bias −margin, no state), so the two-token
 * rule is the library's own. The default 0.06 is set by eye on gavel-mini over the 24 example skills
 * (scaffolding-only contexts stay under ~0.045, a turn that names an image job climbs past 0.08); it
 * is no substitute for a gate trained with `gavel train-gate`.
 */
export class MarginGate implements GateLike {
  readonly margin: number;
  readonly #gate: Gate;

  constructor(margin = 0.06) {
    if (!(margin >= 0) || !Number.isFinite(margin)) throw new RangeError("margin must be a finite number ≥ 0");
    this.margin = margin;
    const weights = GATE_SCORE_FEATURES.map((f) => (f === "margin" ? 1 : 0));
    this.#gate = new Gate({ weights, bias: -margin });
  }

  logit(g: ArrayLike<number>): number {
    return this.#gate.logit(g, NO_STATE);
  }

  step(g: ArrayLike<number>): boolean {
    return this.#gate.step(g, NO_STATE);
  }

  reset(): void {
    this.#gate.reset();
  }
}

/** The state a gate over score features alone reads: none. */
const NO_STATE = new Float32Array(0);

/** A gate that never fires: the agent without routing. */
export const NEVER: GateLike = { step: () => false, reset: () => undefined };

/**
 * Reads a gate: a `gavel train-gate` file (a {@link Gate}, which knows the layer it reads), or JSON
 * `{ "weights": number[], "bias": number }` (6 score weights, then nEmbd state weights).
 */
export async function loadGateModel(path: string): Promise<GateModel | Gate> {
  const o = JSON.parse(await readFile(path, "utf8")) as { weights?: unknown; bias?: unknown; format?: unknown };
  if (o.format === "gavel-gate") return Gate.load(path);
  if (!Array.isArray(o.weights) || typeof o.bias !== "number") throw new Error(`${path}: expected { "weights": number[], "bias": number }`);
  return { weights: o.weights as number[], bias: o.bias };
}

// ---- the agent -------------------------------------------------------------------------------------

/** Options of {@link runAgent}. */
export interface AgentOptions {
  /** The router over the skills (its model is the agent's model by default). */
  router: Router;
  /** Who writes the turns (default: {@link ModelPolicy} over `router.model`). */
  policy?: Policy;
  /**
   * When to route: a {@link GateLike}, a linear gate's weights ({@link GateModel}, read with the
   * `Gate` class: 6 score weights then one per state value, the state being the token's ℓ* row or
   * its final-layer row: see `gateState`), or null never to route. Default: {@link MarginGate} with
   * its default margin.
   */
  gate?: GateLike | GateModel | null;
  /**
   * The state the gate reads: "star" (the token's ℓ* row, the live context's) or "final" (its
   * final-layer row: the policy is asked for `finalState`, which generate captures from the same
   * decode). Default: what a {@link Gate} from a gate file says ({@link Gate.stateSource}), else "star".
   */
  gateState?: "star" | "final";
  /** Options of the route run at a firing (default `{ live: true }`: the router's abstention rules apply). */
  route?: Omit<RouteOptions, "signal">;
  /** Most assistant turns that end in an action (default 10); restarts after a skill load do not count. */
  maxTurns?: number;
  /** Most skills loaded in one run (default 3); past it the gate is off. */
  maxLoads?: number;
  /** The sandbox's allow-list, time limit and output cap. */
  sandbox?: SandboxOptions;
  /** Called with the sandbox folder before the first turn (to put the task's files in it). */
  setup?: (dir: string) => void | Promise<void>;
  /** Keep the sandbox folder after the run (default false: it is removed). */
  keepSandbox?: boolean;
  /** The system prompt (default {@link systemPrompt} of the sandbox's allow-list). */
  system?: string;
  /** Each step as an event (JSON-serialisable). */
  log?: (event: AgentEvent) => void;
  /** Each generated token with the live scores and the gate's reading (for traces and tests). */
  onToken?: (token: TokenTrace) => void;
  signal?: AbortSignal;
}

/** One generated token as the gate saw it. */
export interface TokenTrace {
  turn: number;
  /** Attempts of this turn so far (0, then 1 after a load restarted it, …). */
  attempt: number;
  /** Position within the assistant message. */
  index: number;
  text: string;
  /** Tokens in the live context after this one (prompt included). */
  contextTokens: number;
  /** The live leaders (best two). */
  top: LiveScore[];
  /** The score summary the gate reads ({@link GATE_SCORE_FEATURES}). */
  features: Record<(typeof GATE_SCORE_FEATURES)[number], number>;
  /** The gate's logit, when it exposes one (null while the gate is off for this message). */
  logit: number | null;
  fired: boolean;
}

/** A skill the run loaded. */
export interface LoadedSkill {
  skill: string;
  name: string;
  turn: number;
  /** Assistant tokens generated in the interrupted message before the firing. */
  atToken: number;
}

/** The steps of a run, as logged. */
export type AgentEvent =
  | { type: "start"; task: string; sandbox: string; gate: string; skills: number }
  | { type: "assistant"; turn: number; attempt: number; text: string; tokens: number; interrupted: boolean }
  | { type: "fire"; turn: number; attempt: number; atToken: number; partial: string; leaders: LiveScore[] }
  | { type: "route"; turn: number; skill: string | null; name: string | null; abstained: boolean; reason?: string; shortlist: { name: string; g: number; V: number | null; S: number }[]; ms: number }
  | { type: "load"; turn: number; skill: string; name: string; chars: number }
  | { type: "skip"; turn: number; skill: string; name: string; why: string }
  | { type: "action"; turn: number; command: string; refused: string | null; returncode: number | null; timedOut: boolean; output: string; ms: number }
  | { type: "format-error"; turn: number; blocks: number }
  | { type: "submit"; turn: number; output: string }
  | { type: "end"; status: AgentStatus; turns: number; loads: string[]; removed: boolean; error?: string };

export type AgentStatus = "submitted" | "max-turns" | "error" | "aborted";

/** What {@link runAgent} returns. */
export interface AgentResult {
  status: AgentStatus;
  /** The submitted output (after the marker line), when submitted. */
  output: string | null;
  /** Turns that ended in an action or a format error. */
  turns: number;
  loads: LoadedSkill[];
  /** The whole conversation (the partial messages before each load included). */
  messages: ChatMessage[];
  /** Every event, in order (also given to `log`). */
  events: AgentEvent[];
  /** The sandbox folder (removed unless keepSandbox). */
  sandbox: string;
  error?: string;
}

/** The system prompt in mini-swe-agent's manner, naming the allowed programs. */
export function systemPrompt(allowed: Iterable<string>): string {
  return [
    "You are a helpful assistant that can interact with a computer shell to solve tasks.",
    "Your response must contain a short THOUGHT and exactly ONE bash code block (```bash ... ```) with one command, or commands joined with && or ||.",
    `Each command runs in a new shell in the task's folder. Only these programs may be used: ${[...allowed].sort().join(" ")}.`,
    `When the task is done, run \`echo ${SUBMIT_MARKER}\` followed by your final output on the next lines, and nothing else.`,
  ].join("\n");
}

/** The task as the first user message. */
export function instancePrompt(task: string): string {
  return `Please solve this task:\n\n${task}\n\nReply with one THOUGHT and one bash code block.`;
}

/** The bash blocks of a reply (mini-swe-agent's ```bash … ``` format). */
export function actionsOf(text: string): string[] {
  return [...text.matchAll(/```bash\s*\n([\s\S]*?)\n?```/g)].map((m) => m[1].trim());
}

/** The observation for a command's result (mini-swe-agent's `<returncode>`/`<output>` format). */
export function observation(r: ExecResult, timeoutMs: number): string {
  if (r.refused !== null) return `The command was not run: ${r.refused}.\nPlease use only the allowed programs.`;
  if (r.timedOut) {
    return `The last command <command>${r.command}</command> timed out after ${timeoutMs / 1000} s and has been killed.\n` +
      `The output of the command was:\n<output>\n${r.output}</output>\nPlease try another command and make sure to avoid those requiring interactive input.`;
  }
  return `<returncode>${r.returncode}</returncode>\n<output>\n${r.output}</output>`;
}

function formatError(blocks: number): string {
  return `Please always provide EXACTLY ONE action in triple backticks (\`\`\`bash), found ${blocks} actions.\n` +
    `If you have completed your assignment, run: echo ${SUBMIT_MARKER}`;
}

/** The gate the options ask for. */
function gateOf(g: AgentOptions["gate"]): { gate: GateLike; label: string } {
  if (g === null) return { gate: NEVER, label: "none" };
  if (g === undefined) g = new MarginGate();
  if (g instanceof MarginGate) return { gate: g, label: `margin ≥ ${g.margin}` };
  if (typeof (g as GateLike).step === "function") return { gate: g as GateLike, label: (g as object).constructor?.name ?? "custom" };
  return { gate: new Gate(g as GateModel), label: "linear" };
}

/** Which state the gate reads: the option, else what a gate file's {@link Gate} says, else ℓ*. */
function gateStateOf(gate: GateLike, option: AgentOptions["gateState"]): "star" | "final" {
  if (option !== undefined && option !== "star" && option !== "final") throw new Error(`gateState must be "star" or "final", not ${String(option)}`);
  if (!(gate instanceof Gate)) return option ?? "star";
  const source = gate.stateSource;
  if (source === null) throw new Error(`the gate reads layer ${gate.info?.stateLayer}, which generate does not capture (retrain it with --state-layer star or final)`);
  const reads = source === "final" ? "final" : "star";
  if (option !== undefined && source !== "none" && gate.info !== null && option !== reads) throw new Error(`the gate file reads the ${reads} state, not the ${option} one`);
  return option ?? reads;
}

/** The text of the skill to inject: its SKILL.md as written, else its front matter and body as installed. */
async function skillText(router: Router, id: string): Promise<string> {
  const rec = await router.get(id);
  if (rec.path !== null && rec.path.endsWith(".md") && rec.sourceStatus === "current") {
    try {
      return await readFile(rec.path, "utf8");
    } catch {
      // fall through to the bank's copy
    }
  }
  return `---\nname: ${rec.name}\ndescription: ${rec.description}\n---\n\n${rec.body}`;
}

/** One run's state, shared by its steps. */
interface Run {
  options: AgentOptions;
  router: Router;
  policy: Policy;
  gate: GateLike;
  /** Which of a chunk's states the gate reads. */
  gateState: "star" | "final";
  live: LiveContext;
  sandbox: Sandbox;
  messages: ChatMessage[];
  loads: LoadedSkill[];
  maxLoads: number;
  emit: (e: AgentEvent) => void;
}

/**
 * One attempt at the assistant's reply of turn `turn`: streams it through the live context and the
 * gate, and returns "restart" when a firing loaded a skill (the partial reply and the skill are then
 * in the conversation), else "done" with the reply appended.
 */
async function attemptReply(run: Run, turn: number, attempt: number): Promise<"done" | "restart"> {
  const { live, gate, options } = run;
  // The live context reads the whole conversation as this turn's prompt prefill hands it over.
  live.reset();
  gate.reset();
  let prompt: Promise<void> = Promise.resolve();
  const stream = run.policy.turn({
    messages: [...run.messages],
    captureLayer: live.layer,
    finalState: run.gateState === "final",
    onPrompt: (states) => {
      prompt = live.append(states);
      prompt.catch(() => undefined);
    },
    signal: options.signal,
  });
  let text = "";
  let index = 0;
  let gateOn = run.loads.length < run.maxLoads;
  for await (const chunk of stream) {
    await prompt;
    await live.append(chunk.state);
    text += chunk.text;
    const { g } = live.scores();
    const state = run.gateState === "final" ? chunk.finalState : chunk.state;
    if (state === undefined) throw new Error("the policy gave no finalState, which the gate reads");
    const logit = gateOn && gate.logit ? gate.logit(g, state) : null;
    const fired = gateOn && gate.step(g, state);
    if (options.onToken) {
      const f = gateScoreFeatures(g);
      const features = Object.fromEntries(GATE_SCORE_FEATURES.map((k, i) => [k, f[i]])) as TokenTrace["features"];
      options.onToken({ turn, attempt, index, text: chunk.text, contextTokens: live.tokens, top: live.top(2), features, logit, fired });
    }
    index++;
    if (!fired) continue;
    gateOn = false; // one ruling per reply; a load restarts the turn
    if (await fire(run, turn, attempt, text, index)) return "restart"; // leaving the loop ends the stream
  }
  await prompt;
  run.emit({ type: "assistant", turn, attempt, text, tokens: index, interrupted: false });
  run.messages.push({ role: "assistant", content: text });
  return "done";
}

/** A firing: the route over the context as it stands; true when it loaded a skill (the turn restarts). */
async function fire(run: Run, turn: number, attempt: number, text: string, index: number): Promise<boolean> {
  const { router, messages, emit } = run;
  emit({ type: "fire", turn, attempt, atToken: index, partial: text, leaders: run.live.top(3) });
  const context: ChatMessage[] = text === "" ? [...messages] : [...messages, { role: "assistant", content: text }];
  const t0 = performance.now();
  const res = await router.route(context, { live: true, ...run.options.route, signal: run.options.signal });
  emit({
    type: "route", turn, skill: res.skill, name: res.name, abstained: res.abstained, reason: res.abstention?.reason,
    shortlist: res.shortlist.map((c) => ({ name: c.name, g: c.g, V: Number.isNaN(c.V) ? null : c.V, S: c.S })), ms: performance.now() - t0,
  });
  if (res.skill === null || res.name === null) return false;
  if (run.loads.some((l) => l.skill === res.skill)) {
    emit({ type: "skip", turn, skill: res.skill, name: res.name, why: "already loaded" });
    return false;
  }
  const body = await skillText(router, res.skill);
  run.loads.push({ skill: res.skill, name: res.name, turn, atToken: index });
  emit({ type: "assistant", turn, attempt, text, tokens: index, interrupted: true });
  // the half-written reply stays as far as it got; the skill follows it
  if (text !== "") messages.push({ role: "assistant", content: text });
  messages.push({ role: "user", content: `[skill loaded: ${res.name}]\n\n${body}` });
  emit({ type: "load", turn, skill: res.skill, name: res.name, chars: body.length });
  return true;
}

/** Runs the last reply's action; returns the submitted output, or null (the observation is appended). */
async function act(run: Run, turn: number): Promise<string | null> {
  const { messages, sandbox, emit } = run;
  const actions = actionsOf(messages[messages.length - 1].content);
  if (actions.length !== 1) {
    emit({ type: "format-error", turn, blocks: actions.length });
    messages.push({ role: "user", content: formatError(actions.length) });
    return null;
  }
  const r = await sandbox.exec(actions[0]);
  emit({ type: "action", turn, command: r.command, refused: r.refused, returncode: r.returncode, timedOut: r.timedOut, output: r.output, ms: r.ms });
  const lines = r.output.trimStart().split("\n");
  if (r.refused === null && !r.timedOut && lines[0].trim() === SUBMIT_MARKER) {
    const output = lines.slice(1).join("\n");
    emit({ type: "submit", turn, output });
    return output;
  }
  messages.push({ role: "user", content: observation(r, sandbox.timeoutMs) });
  return null;
}

/**
 * Runs the agent on one task until it submits, the turns run out, or an error (a context overflow,
 * say) ends it. The sandbox is removed at the end unless `keepSandbox`, whatever happened.
 */
export async function runAgent(task: string, options: AgentOptions): Promise<AgentResult> {
  const { router } = options;
  const { gate, label } = gateOf(options.gate);
  const gateState = gateStateOf(gate, options.gateState);
  const sandbox = Sandbox.create(options.sandbox);
  const events: AgentEvent[] = [];
  const run: Run = {
    options, router, gate, gateState, sandbox,
    policy: options.policy ?? new ModelPolicy(router.model),
    live: router.live(),
    messages: [
      { role: "system", content: options.system ?? systemPrompt(sandbox.allowed) },
      { role: "user", content: instancePrompt(task) },
    ],
    loads: [],
    maxLoads: options.maxLoads ?? 3,
    emit: (e) => {
      events.push(e);
      options.log?.(e);
    },
  };
  const maxTurns = options.maxTurns ?? 10;
  let status: AgentStatus = "max-turns";
  let output: string | null = null;
  let error: string | undefined;
  let turns = 0;
  try {
    await options.setup?.(sandbox.dir);
    run.emit({ type: "start", task, sandbox: sandbox.dir, gate: label, skills: router.list().length });
    while (turns < maxTurns) {
      let attempt = 0;
      while ((await attemptReply(run, turns, attempt)) === "restart") attempt++;
      output = await act(run, turns++);
      if (output !== null) {
        status = "submitted";
        break;
      }
    }
  } catch (err) {
    status = options.signal?.aborted ? "aborted" : "error";
    error = err instanceof Error ? err.message : String(err);
  } finally {
    if (!options.keepSandbox) sandbox.dispose();
  }
  run.emit({ type: "end", status, turns, loads: run.loads.map((l) => l.name), removed: !options.keepSandbox, ...(error !== undefined ? { error } : {}) });
  return { status, output, turns, loads: run.loads, messages: run.messages, events, sandbox: sandbox.dir, ...(error !== undefined ? { error } : {}) };
}
