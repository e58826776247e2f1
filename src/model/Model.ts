import { GavelError, clipQuote, invalidArgument } from "../errors.js";
import { backendDevices, loadBinding, type NativeModel, type NativeModelInfo } from "../native/binding.js";
import { checkGgufFile, DEFAULT_CONTEXT, defaultContextFor, headerContext, validateModelFile } from "./gguf-file.js";
import { abortable, abortedError, asAborted, boolOption, checkLayer, intOption, optionsObject, signalOption, afterTurn, toTokens, untilAborted } from "../util/validate.js";
import { CONTEXT_SIZE_RANGE, layoutOption, loadParams, MODEL_LOAD_KEYS, resolveLogprobsInGraph, SCORE_KEYS, TOKENIZE_ASYNC_KEYS, TOKENIZE_KEYS, type ModelLoadOptions, type ScoreOptions, type TokenizeAsyncOptions, type TokenizeOptions } from "./load-options.js";

export type { ModelLoadOptions, ScoreOptions, TokenizeAsyncOptions, TokenizeOptions };
import { checkTasks, nativeStatesMany, type QueriesVia, type ScoresVia, type StatesVia } from "./states-many.js";
import { checkGenerationVerb, generateSettings, runGeneration, type GenerateChunk, type GenerateOptions, type GenerateResult } from "./generate.js";

/** The options of a call that takes only a signal (hiddenStatesAt, hiddenStatesMany, logits). */
const SIGNAL_KEYS = { signal: true } as const;


/** What {@link Model.info} tells about the loaded model. */
export interface ModelInfo extends Omit<NativeModelInfo, "chatTemplate" | "bos" | "eos"> {
  /** The model's chat template (GGUF `tokenizer.chat_template`), when it has one. */
  chatTemplate?: string;
  bos?: number;
  eos?: number;
}

/** Log-probabilities of a continuation, see {@link Model.score}. */
export interface ScoreResult {
  /** logprobs[i] = log p(continuation[i] | prefix, continuation[<i]). */
  logprobs: Float32Array;
  /** final[j] = log p(readIds[j]) at the position after the last continuation token. */
  final: Float32Array;
}



/** Options of a model call that can be aborted. */
export interface CallOptions {
  /**
   * Aborts the call: it rejects with a GavelError `ABORTED` naming the verb, the signal's reason as
   * its `cause`. An already-aborted signal rejects before the call waits for the calls queued before
   * it; a call already running in native code stops at its next check.
   */
  signal?: AbortSignal;
}

/**
 * A frozen GGUF model run by llama.cpp: tokenisation, hidden states of any layer, and log-probs of
 * continuations over cached prefixes. Calls on one model run one at a time, in call order (a
 * queue); each slow call runs off the JavaScript thread.
 *
 * @example
 * ```ts
 * const model = await Model.load("model.gguf");
 * const tokens = model.tokenize("Once upon a time", { addBos: true });
 * const states = await model.hiddenStates(tokens, 3); // tokens.length × nEmbd
 * const { logprobs } = await model.score(tokens.subarray(0, 2), tokens.subarray(2));
 * await model.dispose();
 * ```
 */
export class Model {
  /** What the loaded model is ({@link ModelInfo}), read once at load. */
  readonly info: ModelInfo;
  /** The GGUF file it was loaded from. */
  readonly path: string;
  #native: NativeModel | null;
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(native: NativeModel, path: string) {
    this.#native = native;
    this.path = path;
    const i = native.info();
    this.info = Object.freeze({
      architecture: i.architecture,
      nLayer: i.nLayer,
      nEmbd: i.nEmbd,
      nVocab: i.nVocab,
      contextLength: i.contextLength,
      contextSize: i.contextSize,
      batchSize: i.batchSize,
      ubatchSize: i.ubatchSize,
      kvLayout: i.kvLayout,
      logprobsInGraph: i.logprobsInGraph,
      batchSequences: i.batchSequences ?? 0,
      ...(i.chatTemplate !== null ? { chatTemplate: i.chatTemplate } : {}),
      ...(i.bos !== null ? { bos: i.bos } : {}),
      ...(i.eos !== null ? { eos: i.eos } : {}),
      addBos: i.addBos,
      description: i.description,
    });
  }

  /** Loads a GGUF model. Rejects with FILE_NOT_FOUND, NOT_GGUF, UNSUPPORTED_ARCHITECTURE or MODEL_LOAD_FAILED. */
  static async load(path: string, options?: ModelLoadOptions): Promise<Model> {
    if (typeof path !== "string" || path.length === 0) throw invalidArgument("path must be a non-empty string");
    const o = optionsObject(options, "Model.load options", MODEL_LOAD_KEYS);
    const kvUnified = layoutOption(o.kvLayout);
    // every option is checked before the file and the addon are touched; those bounded by the context
    // size against the default's largest value, then again once the file gives the default
    const asked = o.contextSize === undefined ? undefined : intOption(o.contextSize, "contextSize", CONTEXT_SIZE_RANGE.min, CONTEXT_SIZE_RANGE.max, 0);
    const sized = (contextSize: number) => loadParams(o, contextSize, kvUnified);
    let params = sized(asked ?? DEFAULT_CONTEXT);
    const batchSequences = intOption(o.batchSequences, "batchSequences", 0, params.sequences - 2, 0);
    resolveLogprobsInGraph(o.logprobsInGraph, { cuda: false, devices: [], gpuLayers: 0 });
    checkGgufFile(path);
    const header = await validateModelFile(path);
    if (asked === undefined) params = sized(defaultContextFor(headerContext(header)));
    const binding = loadBinding();
    // The exact settings (f32 KV, no flash attention) unless asked otherwise, on a GPU too: the fast
    // ones drifted past their tolerance there (docs/history/BENCHMARKS.md, "Verdict on the GPU").
    const native = new binding.NativeModel();
    const logprobsInGraph = resolveLogprobsInGraph(o.logprobsInGraph, { cuda: binding.buildInfo().cuda, devices: backendDevices(), gpuLayers: params.gpuLayers });
    // llama.cpp's failures quote the path whole: clipped here, as every message quotes a path
    try {
      await native.load(path, { ...params, batchSequences, flashAttention: params.flashAttention ?? 0, kvF16: params.kvF16 ?? false, logprobsInGraph });
    } catch (err) {
      throw clipQuote(err, path);
    }
    return new Model(native, path);
  }

  /** The native model, or DISPOSED. */
  #use(): NativeModel {
    if (!this.#native) throw new GavelError("this model was disposed", "DISPOSED");
    return this.#native;
  }

  /**
   * Runs a native call after every earlier one, with AbortSignal support: DISPOSED, then an
   * already-aborted signal, are refused before the call is queued; an abort while it waits rejects
   * at once with `verb`'s ABORTED (its turn come, `start` refuses it without a native call), one
   * while it runs stops the native call at its next check and rejects the same way.
   */
  #enqueue<T>(verb: string, signal: AbortSignal | undefined, run: (native: NativeModel) => Promise<T>): Promise<T> {
    this.#use();
    if (signal?.aborted) return Promise.reject(abortedError(verb, signal));
    const start = async (): Promise<T> => {
      const native = this.#use();
      if (signal?.aborted) throw abortedError(verb, signal);
      const onAbort = () => native.abort();
      signal?.addEventListener("abort", onAbort, { once: true });
      try {
        const result = await run(native);
        // a call whose signal aborted before it settled rejects, even when the native call got to its end
        if (signal?.aborted) throw abortedError(verb, signal);
        return result;
      } catch (err) {
        throw asAborted(err, verb, signal);
      } finally {
        signal?.removeEventListener("abort", onAbort);
      }
    };
    const queued = afterTurn(this.#queue, start, verb, signal);
    this.#queue = queued.run.catch(() => undefined);
    return queued.reply(queued.run);
  }

  /** A GGUF metadata value as llama.cpp reads it (numbers and arrays as text), or undefined. */
  meta(key: string): string | undefined {
    if (typeof key !== "string") throw invalidArgument("key must be a string");
    if (key.includes("\0")) return undefined; // no GGUF key holds one, and native code would read up to it
    return this.#use().meta(key) ?? undefined;
  }

  /**
   * Text to token ids. `special` parses control tokens written in the text (such as `<|im_start|>`);
   * keep it false for untrusted text. `addBos` prepends BOS when the vocabulary asks for one.
   */
  tokenize(text: string, options?: TokenizeOptions): Int32Array {
    if (typeof text !== "string") throw invalidArgument("text must be a string");
    const o = optionsObject(options, "tokenize options", TOKENIZE_KEYS);
    return this.#use().tokenize(text, boolOption(o.special, "special", false), boolOption(o.addBos, "addBos", false));
  }

  /**
   * {@link Model.tokenize} off the JS thread: the same tokens, computed on a libuv worker, beside any
   * running forward pass and other tokenizations (llama.cpp's tokenizers only read the vocabulary).
   * For work that tokenizes much text while the model runs, such as an install's renders. With a
   * `signal`, an abort rejects at once with ABORTED (the worker's tokenization runs to its end, its
   * tokens dropped).
   */
  async tokenizeAsync(text: string, options?: TokenizeAsyncOptions): Promise<Int32Array> {
    if (typeof text !== "string") throw invalidArgument("text must be a string");
    const o = optionsObject(options, "tokenizeAsync options", TOKENIZE_ASYNC_KEYS);
    const special = boolOption(o.special, "special", false);
    const addBos = boolOption(o.addBos, "addBos", false);
    const signal = signalOption(o.signal);
    const native = this.#use();
    const verb = "Model.tokenizeAsync";
    return abortable(verb, signal, () => untilAborted(native.tokenizeAsync(text, special, addBos), verb, signal));
  }

  /** Token ids to text; special tokens are rendered unless `special` is false. */
  detokenize(tokens: Int32Array | number[], options?: { special?: boolean }): string {
    const o = optionsObject(options, "detokenize options", { special: true });
    return this.#use().detokenize(toTokens(tokens, "tokens", this.info.nVocab), boolOption(o.special, "special", true));
  }

  /** One token's text piece. */
  tokenPiece(token: number): string {
    return this.#use().tokenPiece(toTokens([token], "token", this.info.nVocab)[0]);
  }

  #checkLength(n: number, what: string): void {
    if (n > this.info.contextSize) {
      throw new GavelError(`${what}: ${n} tokens exceed the context size ${this.info.contextSize}`, "CONTEXT_OVERFLOW");
    }
  }

  /**
   * The residual stream after block `layer` (0-based; nLayer − 1 is the last block) for every token:
   * row-major, tokens × nEmbd.
   */
  hiddenStates(tokens: Int32Array | number[], layer: number, options?: CallOptions): Promise<Float32Array> {
    return this.hiddenStatesAt(tokens, [layer], options).then((r) => r[0]);
  }

  /** {@link Model.hiddenStates} for several distinct layers, from one forward pass. */
  hiddenStatesAt(tokens: Int32Array | number[], layers: number[], options?: CallOptions): Promise<Float32Array[]> {
    return this.#call(() => {
      const t = toTokens(tokens, "tokens", this.info.nVocab);
      if (t.length === 0) throw invalidArgument("tokens must not be empty");
      this.#checkLayers(layers);
      this.#checkLength(t.length, "hiddenStates");
      const signal = signalOption(optionsObject(options, "options", SIGNAL_KEYS).signal);
      const via = this.#statesVia;
      if (via && layers.length === 1) return abortable("Model.hiddenStates", signal, () => via(t, layers[0], signal)).then((rows) => [rows]);
      return this.#enqueue("Model.hiddenStates", signal, (n) => n.hiddenStates(t, Int32Array.from(layers)));
    });
  }

  #checkLayers(layers: number[]): void {
    if (!Array.isArray(layers) || layers.length === 0) throw invalidArgument("layers must be a non-empty array");
    for (const layer of layers) checkLayer(layer, this.info.nLayer);
    if (new Set(layers).size !== layers.length) throw invalidArgument("layers must be distinct");
  }

  /** Whether the addon decodes several tasks together ({@link Model.hiddenStatesMany}); else that verb runs them one after another. */
  get batchesStates(): boolean {
    return typeof this.#use().hiddenStatesMany === "function";
  }

  /**
   * {@link Model.hiddenStatesAt} for several tasks, each a sequence of the same llama_decode calls (as
   * many at once as the context has sequences, at most batchSize tokens a decode), so many short tasks
   * take a few wide passes instead of one each. `out[t][l]`: task t's rows at `layers[l]`. Rows equal
   * the single-task call's up to float summation order (test/model/hidden-states-many.test.ts gives
   * the tolerance); cached prefixes of the sequences a batch uses are dropped (unless batchSequences). An addon built before
   * this verb runs the tasks one after another ({@link Model.batchesStates}).
   */
  hiddenStatesMany(tasks: (Int32Array | number[])[], layers: number[], options?: CallOptions): Promise<Float32Array[][]> {
    return this.#call(() => {
      const ts = checkTasks(tasks, this.info.nVocab, this.info.contextSize);
      this.#checkLayers(layers);
      const signal = signalOption(optionsObject(options, "options", SIGNAL_KEYS).signal);
      return this.#enqueue("Model.hiddenStatesMany", signal, (n) => nativeStatesMany(n, ts, Int32Array.from(layers), signal));
    });
  }

  /**
   * Sends single-layer {@link Model.hiddenStates} calls (checked first, as always) through `via`
   * instead of the model's queue: the resident router's scheduler (src/serve/states-scheduler.ts)
   * collects the calls of concurrent requests and decodes them with {@link Model.hiddenStatesMany};
   * states-many.ts's `hiddenQueries` calls go through `queriesVia`. null restores direct calls.
   */
  routeHiddenStates(via: StatesVia | null, queriesVia: QueriesVia | null = null): void {
    this.#use();
    this.#statesVia = via;
    this.#queriesVia = via ? queriesVia : null;
  }

  #statesVia: StatesVia | null = null;

  /** This model's generations holding a sequence (generate.ts counts them, for its CONTEXT_OVERFLOW message). */
  readonly #generations = { open: 0 };

  #queriesVia: QueriesVia | null = null;

  /** Where states-many.ts's hiddenQueries sends its calls, when routed. */
  get queriesVia(): QueriesVia | null {
    return this.#queriesVia;
  }

  /**
   * Log-probs of `continuation` after `prefix`. The prefix's KV stays cached (LRU over the
   * context's sequences), so a later call with the same prefix decodes only the continuation.
   */
  async score(prefix: Int32Array | number[], continuation: Int32Array | number[], options?: ScoreOptions): Promise<ScoreResult> {
    const [r] = await this.scoreMany([prefix], continuation, options);
    return r;
  }

  /** {@link Model.score} for several prefixes, packed as sequences into as few decodes as fit. */
  scoreMany(prefixes: (Int32Array | number[])[], continuation: Int32Array | number[] | (Int32Array | number[])[], options?: ScoreOptions): Promise<ScoreResult[]> {
    return this.#call(() => {
      if (!Array.isArray(prefixes)) throw invalidArgument("prefixes must be an array of token arrays");
      const o = optionsObject(options, "scoreMany options", SCORE_KEYS);
      const readIds = o.readIds === undefined ? new Int32Array(0) : toTokens(o.readIds, "readIds", this.info.nVocab);
      const perPrefix = Array.isArray(continuation) && continuation.length > 0 && typeof continuation[0] !== "number";
      if (perPrefix && continuation.length !== prefixes.length) throw invalidArgument("continuations must match prefixes one to one");
      const shared = perPrefix ? null : toTokens(continuation, "continuation", this.info.nVocab);
      const requests = prefixes.map((p, i) => {
        const prefix = toTokens(p, `prefixes[${i}]`, this.info.nVocab);
        if (prefix.length === 0) throw invalidArgument(`prefixes[${i}] must not be empty`);
        const cont = shared ?? toTokens((continuation as (Int32Array | number[])[])[i], `continuations[${i}]`, this.info.nVocab);
        this.#checkLength(prefix.length + cont.length, `prefixes[${i}] + continuation`);
        return { prefix, continuation: cont };
      });
      const signal = signalOption(o.signal);
      const via = this.#scoresVia;
      if (via) return abortable("Model.score", signal, () => via(requests, readIds, signal));
      return this.#enqueue("Model.score", signal, (n) => n.score(requests, readIds));
    });
  }

  /**
   * Sends {@link Model.scoreMany}'s checked requests through `via` (the resident router's scheduler,
   * which merges the calls of concurrent routes); null restores direct calls. Returns the direct path
   * (the model's queue), which `via` calls.
   */
  routeScores(via: ScoresVia | null): ScoresVia {
    this.#use();
    this.#scoresVia = via;
    return (requests, readIds, signal) => this.#enqueue("Model.score", signal, (n) => n.score(requests, readIds));
  }

  #scoresVia: ScoresVia | null = null;

  /** Logits (tokens × nVocab) of one fresh decode with no cache involved: a reference path. */
  logits(tokens: Int32Array | number[], options?: CallOptions): Promise<Float32Array> {
    return this.#call(() => {
      const t = toTokens(tokens, "tokens", this.info.nVocab);
      if (t.length === 0) throw invalidArgument("tokens must not be empty");
      this.#checkLength(t.length, "logits");
      return this.#enqueue("Model.logits", signalOption(optionsObject(options, "options", SIGNAL_KEYS).signal), (n) => n.logits(t));
    });
  }

  /**
   * Streams a continuation of `prompt` (token ids, or text tokenized with BOS as the vocabulary asks)
   * sampled by llama.cpp's sampler chain. Each chunk carries its token, the text it releases and the
   * token's residual stream after `captureLayer`, captured by the very decode that produced the token
   * (the prompt's rows go to `onPrompt`): a live router reads them with no second pass. With
   * `finalState: true` each chunk also carries the final layer's row of its position, from the same
   * decode (the row llama.cpp computes for the sampled token anyway). The iterator's
   * return value says why it stopped. Runs on a sequence of its own, so other calls on this model may
   * run between its steps; each step is queued like any other call. The sequence is given back when
   * the iterator ends, is closed (a `break` out of its loop, or `return()`), or its `signal` aborts
   * (at once, even if it is never read again); an iterator merely dropped holds it until it is
   * garbage-collected (its `signal`, however long it lives, does not keep it), and the sequence is then
   * given back through the model's queue. Chat messages:
   * `generateChat` (render/) renders them through the model's chat template first.
   *
   * @throws GavelError INVALID_ARGUMENT, LAYER_OUT_OF_RANGE, TOKEN_OUT_OF_VOCABULARY or CONTEXT_OVERFLOW
   *   synchronously for bad options or prompts; the iterator rejects with ABORTED when `signal` fires
   *   (the model stays usable), CONTEXT_OVERFLOW when the context fills (the message says whether the
   *   generation ran past it or other open generations hold the sequences), DISPOSED.
   * @example
   * ```ts
   * for await (const c of model.generate("Once upon a time", { temperature: 0, maxTokens: 32, stop: ["."] })) {
   *   process.stdout.write(c.text);
   * }
   * ```
   */
  generate(prompt: string | Int32Array | number[], options?: GenerateOptions): AsyncGenerator<GenerateChunk, GenerateResult, undefined> {
    const s = generateSettings(options, this.info.nLayer, this.info.nVocab);
    const tokens =
      typeof prompt === "string"
        ? this.tokenize(prompt, { special: s.special, addBos: this.info.addBos })
        : toTokens(prompt, "prompt", this.info.nVocab);
    if (tokens.length === 0) throw invalidArgument("prompt must not be empty");
    this.#checkLength(tokens.length, "generate");
    const native = this.#use();
    checkGenerationVerb(native);
    const gen = s.finalState ? native.generation(s.layer, s.params, true) : native.generation(s.layer, s.params);
    const host = {
      enqueue: <T>(signal: AbortSignal | undefined, run: () => Promise<T>) => this.#enqueue("Model.generate", signal, () => run()),
      detokenize: (t: Int32Array) => this.#use().detokenize(t, false),
      contextSize: this.info.contextSize,
      generations: this.#generations,
    };
    return runGeneration(host, gen, tokens, s);
  }

  /** Drops every cached prefix. */
  clearCache(): Promise<void> {
    return this.#call(() => this.#enqueue("Model.clearCache", undefined, async (n) => n.clearCache()));
  }

  /** Counters of the prefix cache. */
  cacheStats(): { entries: number; tokens: number; hits: number; misses: number; batchDrops: number } {
    return { batchDrops: 0, ...this.#use().cacheStats() };
  }

  /** Turns synchronous validation failures into rejections, so every async verb only rejects. */
  #call<T>(f: () => Promise<T>): Promise<T> {
    try {
      return f();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Whether {@link Model.dispose} has run. */
  get disposed(): boolean {
    return this.#native === null;
  }

  /** Frees the model and its context; a call still running is aborted. Idempotent. */
  async dispose(): Promise<void> {
    const native = this.#native;
    if (!native) return;
    this.#native = null;
    native.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}
