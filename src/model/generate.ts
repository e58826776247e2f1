/**
 * Streaming generation over a {@link NativeGeneration}: option checks (every value checked here,
 * before llama.cpp sees it), the decode loop, stop tokens and end-of-generation, and stop strings cut
 * exactly, with text held back while it could still be the start of a stop string.
 */
import { randomInt } from "node:crypto";
import { GavelError, invalidArgument } from "../errors.js";
import type { NativeGeneration, NativeGenerationStep, NativeSamplerParams } from "../native/binding.js";
import { boolOption, checkFinite, checkLayer, intOption, optionsObject, signalOption, toTokens } from "../util/validate.js";

/** Options of {@link Model.generate}. */
export interface GenerateOptions {
  /** Most tokens to generate (≥ 1). Default 256. */
  maxTokens?: number;
  /** Sampling temperature ≥ 0; 0 is greedy (argmax after the penalties). Default 0.8. */
  temperature?: number;
  /** Keep the k most likely tokens; 0 turns it off. Default 40. */
  topK?: number;
  /** Nucleus sampling, in (0, 1]; 1 turns it off. Default 0.95. */
  topP?: number;
  /** Drop tokens below minP × the top probability, in [0, 1]; 0 turns it off. Default 0.05. */
  minP?: number;
  /** Seed of the sampler, an unsigned 32-bit integer. Default: a random one (see {@link GenerateResult.seed}). */
  seed?: number;
  /** Repeat penalty (> 0; 1 turns it off), over the last `penaltyLastN` tokens (prompt included). Default 1. */
  repeatPenalty?: number;
  /** Window of the penalties in tokens; 0 turns them off. Default 64. */
  penaltyLastN?: number;
  /** Frequency penalty (finite; 0 off). Default 0. */
  frequencyPenalty?: number;
  /** Presence penalty (finite; 0 off). Default 0. */
  presencePenalty?: number;
  /** Strings that end the generation; the text is cut right before the first one found (it is not emitted). */
  stop?: string[];
  /** Token ids that end the generation (not emitted, not decoded), besides end-of-generation tokens. */
  stopTokens?: Int32Array | number[];
  /** Keep going past end-of-generation tokens (EOS, EOT, …). Default false. */
  ignoreEog?: boolean;
  /**
   * The layer whose residual stream (tensor `l_out-layer`) each chunk carries: the router's ℓ*
   * (`router.projections.layer`) to feed a live context. Default 0.
   */
  captureLayer?: number;
  /**
   * Also carry the final layer's state (tensor `l_out-(nLayer−1)`, what `hiddenStates(…, nLayer − 1)`
   * reads) of the current position: each chunk's `finalState`, and the prompt's last token's as
   * `onPrompt`'s third argument. It comes from the same decode: llama.cpp computes the last block
   * for the sampled token anyway, so no output row or pass is added (one nEmbd row is copied per
   * token). Default false: chunks have no `finalState`.
   */
  finalState?: boolean;
  /** Parse control tokens written in a text prompt (trusted text only). Default false. */
  special?: boolean;
  /**
   * Called once with the prompt's captured states (prompt tokens × nEmbd) after its prefill; with
   * `finalState`, also the final layer's state of the prompt's last token (nEmbd floats).
   */
  onPrompt?: (states: Float32Array, tokens: Int32Array, finalState?: Float32Array) => void;
  /** Stops the generation: the iterator rejects with ABORTED and the model stays usable. */
  signal?: AbortSignal;
}

/** One generated token. */
export interface GenerateChunk {
  token: number;
  /**
   * New text released by this token: the decoded text grows by whole characters, and text that could
   * still begin a stop string is held back until it cannot (so it may be "").
   */
  text: string;
  /** The token's residual stream after `captureLayer` (nEmbd floats), from the decode that produced it. */
  state: Float32Array;
  /** With the `finalState` option: the token's final-layer state (nEmbd floats), from the same decode. */
  finalState?: Float32Array;
}

/** Why a generation ended. */
export type StopReason = "eog" | "stop-token" | "stop-string" | "max-tokens";

/** The iterator's return value. */
export interface GenerateResult {
  reason: StopReason;
  /** All generated text (cut before the stop string when one ended it). */
  text: string;
  /** Every generated token that was decoded (a stop or end-of-generation token is not among them). */
  tokens: Int32Array;
  /** The stop string or stop token that ended it. */
  stop?: string | number;
  /** The sampler's seed. */
  seed: number;
}

/** Checked options, with defaults. */
export interface GenerateSettings {
  maxTokens: number;
  params: NativeSamplerParams;
  stop: string[];
  stopTokens: Set<number>;
  ignoreEog: boolean;
  layer: number;
  finalState: boolean;
  special: boolean;
  onPrompt?: (states: Float32Array, tokens: Int32Array, finalState?: Float32Array) => void;
  signal?: AbortSignal;
}

const UINT32_MAX = 0xffffffff;

/** Every key of {@link GenerateOptions}: another is a misspelling (INVALID_ARGUMENT, with the nearest). */
const GENERATE_KEYS: Record<keyof GenerateOptions, true> = {
  maxTokens: true, temperature: true, topK: true, topP: true, minP: true, seed: true, repeatPenalty: true, penaltyLastN: true, frequencyPenalty: true,
  presencePenalty: true, stop: true, stopTokens: true, ignoreEog: true, captureLayer: true, finalState: true, special: true, onPrompt: true, signal: true,
};

/** Checks every option of {@link GenerateOptions} (INVALID_ARGUMENT, LAYER_OUT_OF_RANGE, TOKEN_OUT_OF_VOCABULARY). */
export function generateSettings(options: unknown, nLayer: number, nVocab: number): GenerateSettings {
  const o = optionsObject(options, "options", GENERATE_KEYS);
  const num = (k: string, dflt: number, check: (v: number) => boolean, rule: string): number => {
    if (o[k] === undefined) return dflt;
    const v = checkFinite(o[k], k);
    if (!check(v)) throw invalidArgument(`${k} must be ${rule}, got ${v}`);
    return v;
  };
  const params: NativeSamplerParams = {
    temperature: num("temperature", 0.8, (v) => v >= 0 && v <= 1e6, "in [0, 1e6]"),
    topK: intOption(o.topK, "topK", 0, 0x7fffffff, 40),
    topP: num("topP", 0.95, (v) => v > 0 && v <= 1, "in (0, 1]"),
    minP: num("minP", 0.05, (v) => v >= 0 && v <= 1, "in [0, 1]"),
    seed: o.seed === undefined ? randomInt(0, UINT32_MAX) : intOption(o.seed, "seed", 0, UINT32_MAX, 0),
    penaltyLastN: intOption(o.penaltyLastN, "penaltyLastN", 0, 0x7fffffff, 64),
    repeatPenalty: num("repeatPenalty", 1, (v) => v > 0 && v <= 1e6, "in (0, 1e6]"),
    frequencyPenalty: num("frequencyPenalty", 0, (v) => Math.abs(v) <= 1e6, "in [-1e6, 1e6]"),
    presencePenalty: num("presencePenalty", 0, (v) => Math.abs(v) <= 1e6, "in [-1e6, 1e6]"),
  };
  let stop: string[] = [];
  if (o.stop !== undefined) {
    if (!Array.isArray(o.stop) || o.stop.some((s) => typeof s !== "string" || s.length === 0)) {
      throw invalidArgument("stop must be an array of non-empty strings");
    }
    stop = [...(o.stop as string[])];
  }
  const stopTokens = new Set(o.stopTokens === undefined ? [] : toTokens(o.stopTokens, "stopTokens", nVocab));
  if (o.onPrompt !== undefined && typeof o.onPrompt !== "function") throw invalidArgument("onPrompt must be a function");
  return {
    maxTokens: intOption(o.maxTokens, "maxTokens", 1, 1 << 24, 256),
    params,
    stop,
    stopTokens,
    ignoreEog: boolOption(o.ignoreEog, "ignoreEog", false),
    layer: o.captureLayer === undefined ? 0 : checkLayer(o.captureLayer, nLayer, "captureLayer"),
    finalState: boolOption(o.finalState, "finalState", false),
    special: boolOption(o.special, "special", false),
    onPrompt: o.onPrompt as GenerateSettings["onPrompt"],
    signal: signalOption(o.signal),
  };
}

/** Where the first stop string starts in `text` at or after `from`, and which one; null if none. */
function findStop(text: string, stops: string[], from: number): { at: number; stop: string } | null {
  let best: { at: number; stop: string } | null = null;
  for (const s of stops) {
    const at = text.indexOf(s, Math.max(0, from));
    if (at >= 0 && (best === null || at < best.at)) best = { at, stop: s };
  }
  return best;
}

/** Length of the longest suffix of `text` that is a proper prefix of some stop string. */
function heldBack(text: string, stops: string[]): number {
  let held = 0;
  for (const s of stops) {
    for (let n = Math.min(s.length - 1, text.length); n > held; --n) {
      if (text.endsWith(s.slice(0, n))) {
        held = n;
        break;
      }
    }
  }
  return held;
}

/** The step's final-layer row, which the addon returns when the generation was opened with finalState. */
function finalOf(step: NativeGenerationStep): Float32Array {
  if (!(step.finalState instanceof Float32Array)) {
    throw new GavelError("this build of the addon returns no final-layer state: rebuild it (npm run build:native)", "NATIVE_UNAVAILABLE");
  }
  return step.finalState;
}

function chunk(token: number, text: string, step: NativeGenerationStep, final: boolean): GenerateChunk {
  return final ? { token, text, state: step.states, finalState: finalOf(step) } : { token, text, state: step.states };
}

/** What the loop needs from {@link Model}: its queue and the detokenizer. */
export interface GenerateHost {
  /** Runs one native call after every earlier call on the model (AbortSignal wired to the engine). */
  enqueue<T>(signal: AbortSignal | undefined, run: () => Promise<T>): Promise<T>;
  detokenize(tokens: Int32Array): string;
  /** The model's context size in tokens. */
  contextSize: number;
  /** The model's generations that hold a sequence now (started, not yet closed): shared by its loops. */
  generations: { open: number };
}

/**
 * A CONTEXT_OVERFLOW of a generation's append, worded for what caused it: the generation itself ran
 * past the context, or the context's sequences and cells are held by other generations still open.
 */
function overflowError(err: GavelError, host: GenerateHost, prompt: number, generated: number | null, maxTokens: number): GavelError {
  if (generated !== null && prompt + generated + 1 > host.contextSize) {
    return new GavelError(
      `generate: the prompt's ${prompt} tokens and the ${generated} generated fill the context of ${host.contextSize} tokens (maxTokens ${maxTokens} asks for more): lower maxTokens, shorten the prompt, or load the model with a larger contextSize`,
      "CONTEXT_OVERFLOW", { cause: err },
    );
  }
  const others = host.generations.open - 1;
  if (others <= 0) return new GavelError(`generate: ${err.message}`, "CONTEXT_OVERFLOW", { cause: err });
  return new GavelError(
    `generate: no room in the model's context for this generation: ${others} other generation${others === 1 ? " is" : "s are"} still open on this model, each holding a sequence and its cells until its iterator ends, is closed (break out of its loop, or call its return()), its signal aborts, or it is garbage-collected; close those no longer read, or load the model with more sequences or a larger contextSize (${err.message})`,
    "CONTEXT_OVERFLOW", { cause: err },
  );
}

/**
 * What a generation holds besides its iterator: the native generation, whether its sequence counts
 * in `host.generations.open`, and its close. Nothing here refers to the iterator, so an iterator that
 * is dropped can be collected while its signal lives on; {@link dropped} then gives all of this back.
 */
class Lease {
  /** Whether the sequence counts in `host.generations.open` (from the prompt's prefill until release). */
  #held = false;
  #closing: Promise<void> | undefined;
  /** How the signal's one listener ({@link watch}) reaches this lease: weakly. */
  readonly ref: WeakRef<Lease> = new WeakRef(this);

  constructor(readonly host: GenerateHost, readonly gen: NativeGeneration, readonly signal: AbortSignal | undefined) {}

  /** Counts the sequence, which the prompt's prefill is about to take. */
  take(): void {
    this.#held = true;
    this.host.generations.open++;
  }

  /**
   * Gives the sequence back: uncounts it, stops listening to the signal, and closes the native
   * generation through the model's queue (once; later calls wait for that close). Never rejects.
   */
  release(): Promise<void> {
    if (this.#held) {
      this.#held = false;
      this.host.generations.open--;
    }
    unwatch(this);
    dropped.unregister(this);
    this.#closing ??= (async () => {
      try {
        await this.host.enqueue(undefined, () => this.gen.close());
      } catch {
        // a disposed model refuses the call (its sequences went with it): nothing to give back then
      }
    })();
    return this.#closing;
  }
}

/**
 * A dropped iterator (never finished, closed or aborted) is collected with its generator frame, but
 * its finally never runs: this gives its lease back then (the listener, the count, the sequence,
 * closed through the model's queue as any other close).
 */
const dropped = new FinalizationRegistry<Lease>((lease) => void lease.release());

/**
 * Per signal, the generations its abort releases: one listener whatever their number (so many on an
 * app-wide signal draw no MaxListenersExceededWarning), holding each generation only weakly, so a
 * long-lived signal keeps none alive.
 */
const watched = new WeakMap<AbortSignal, { refs: Set<WeakRef<Lease>>; onAbort: () => void }>();

function watch(lease: Lease): void {
  const signal = lease.signal;
  if (signal === undefined || signal.aborted) return;
  let w = watched.get(signal);
  if (w === undefined) {
    const refs = new Set<WeakRef<Lease>>();
    const onAbort = () => {
      watched.delete(signal);
      for (const r of [...refs]) void r.deref()?.release();
      refs.clear();
    };
    w = { refs, onAbort };
    watched.set(signal, w);
    signal.addEventListener("abort", onAbort, { once: true });
  }
  w.refs.add(lease.ref);
}

function unwatch(lease: Lease): void {
  const signal = lease.signal;
  const w = signal === undefined ? undefined : watched.get(signal);
  if (signal === undefined || w === undefined || !w.refs.delete(lease.ref) || w.refs.size > 0) return;
  signal.removeEventListener("abort", w.onAbort);
  watched.delete(signal);
}

/**
 * The decode loop of {@link Model.generate}. Closes the native generation however it ends, at once
 * when `signal` aborts, even while the iterator is not read (its next read rejects with ABORTED), and
 * when the iterator is dropped unfinished, once it is garbage-collected (the signal does not keep it).
 */
export function runGeneration(
  host: GenerateHost, gen: NativeGeneration, prompt: Int32Array, s: GenerateSettings,
): AsyncGenerator<GenerateChunk, GenerateResult, undefined> {
  const lease = new Lease(host, gen, s.signal);
  const it = steps(lease, prompt, s);
  dropped.register(it, lease, lease);
  return it;
}

async function* steps(lease: Lease, prompt: Int32Array, s: GenerateSettings): AsyncGenerator<GenerateChunk, GenerateResult, undefined> {
  const { host, gen } = lease;
  const tokens: number[] = [];
  let emitted = 0;
  let text = "";
  const maxStop = s.stop.reduce((m, x) => Math.max(m, x.length), 0);
  // `generated`: tokens generated before this append (null: the prompt's).
  const append = async (t: Int32Array, generated: number | null): Promise<NativeGenerationStep> => {
    try {
      return await host.enqueue(s.signal, () => gen.append(t));
    } catch (err) {
      if (err instanceof GavelError && err.code === "CONTEXT_OVERFLOW") throw overflowError(err, host, prompt.length, generated, s.maxTokens);
      throw err;
    }
  };
  try {
    // The sequence is taken at the first append and held until release; `open` counts it meanwhile.
    watch(lease);
    lease.take();
    let step: NativeGenerationStep = await append(prompt, null);
    if (s.finalState) s.onPrompt?.(step.states, prompt, finalOf(step));
    else s.onPrompt?.(step.states, prompt);
    for (let i = 0; i < s.maxTokens; ++i) {
      const t = step.next;
      if (s.stopTokens.has(t)) return { reason: "stop-token", text, tokens: Int32Array.from(tokens), stop: t, seed: s.params.seed };
      if (!s.ignoreEog && gen.isEog(t)) return { reason: "eog", text, tokens: Int32Array.from(tokens), stop: t, seed: s.params.seed };
      step = await append(Int32Array.of(t), tokens.length);
      tokens.push(t);
      text = host.detokenize(Int32Array.from(tokens));
      const hit = s.stop.length > 0 ? findStop(text, s.stop, emitted - maxStop) : null;
      if (hit !== null) {
        const piece = hit.at > emitted ? text.slice(emitted, hit.at) : "";
        text = text.slice(0, hit.at);
        yield chunk(t, piece, step, s.finalState);
        return { reason: "stop-string", text, tokens: Int32Array.from(tokens), stop: hit.stop, seed: s.params.seed };
      }
      // Whole characters only (a multi-byte character split across tokens decodes to U+FFFD), and
      // nothing that may still begin a stop string.
      // The next token is known already: when it ends the generation, release everything now.
      const last = i === s.maxTokens - 1 || s.stopTokens.has(step.next) || (!s.ignoreEog && gen.isEog(step.next));
      let end = last ? text.length : text.length - heldBack(text, s.stop);
      while (!last && end > emitted && text.charCodeAt(end - 1) === 0xfffd) --end;
      const piece = end > emitted ? text.slice(emitted, end) : "";
      emitted = Math.max(emitted, end);
      yield chunk(t, piece, step, s.finalState);
    }
    return { reason: "max-tokens", text, tokens: Int32Array.from(tokens), seed: s.params.seed };
  } finally {
    await lease.release();
  }
}

/** DISPOSED-free check that the addon has the generation verb (an addon built before it lacks it). */
export function checkGenerationVerb(native: object): void {
  if (typeof (native as { generation?: unknown }).generation !== "function") {
    throw new GavelError("this build of the addon has no generation: rebuild it (npm run build:native)", "NATIVE_UNAVAILABLE");
  }
}
