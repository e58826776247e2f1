/**
 * Every failure gavel-router reports is a {@link GavelError} with a stable {@link GavelErrorCode}.
 * The native addon receives this class once at load time and throws it too, so native failures
 * arrive typed, with the same codes: the addon's codes are the table in
 * native/src/common/error_codes.h, and test/unit/error-codes.test.ts checks that every one is here.
 */
export type GavelErrorCode =
  /** The model (or another) file does not exist or cannot be read. */
  | "FILE_NOT_FOUND"
  /** The file is not a GGUF file (bad magic, truncated header, unsupported GGUF version). */
  | "NOT_GGUF"
  /** llama.cpp does not know the model's architecture. */
  | "UNSUPPORTED_ARCHITECTURE"
  /** llama.cpp could not load the model for another reason (message says which). */
  | "MODEL_LOAD_FAILED"
  /** A layer index outside [0, nLayer). */
  | "LAYER_OUT_OF_RANGE"
  /** A token id outside [0, nVocab). */
  | "TOKEN_OUT_OF_VOCABULARY"
  /** More tokens than the context holds. */
  | "CONTEXT_OVERFLOW"
  /** An argument has the wrong type or value. */
  | "INVALID_ARGUMENT"
  /** The object was disposed (or closed): every later call of its verbs rejects with it; `dispose()` and `close()` themselves are idempotent. */
  | "DISPOSED"
  /** The operation was cancelled through its AbortSignal: the message names the verb (`"Router.route: the operation was aborted"`), `cause` is the signal's reason. */
  | "ABORTED"
  /** llama_decode failed (message carries its status). */
  | "DECODE_FAILED"
  /** The model's graph does not expose the residual stream for that layer. */
  | "HIDDEN_STATES_UNAVAILABLE"
  /** The native addon could not be loaded (no prebuild for this platform and no local build). */
  | "NATIVE_UNAVAILABLE"
  /** An optional peer dependency a feature needs is not installed (the message names the package). */
  | "DEPENDENCY_MISSING"
  /** A skill could not be read or parsed. */
  | "SKILL_INVALID"
  /** A bank on disk belongs to another model, other projections, layer or ε. */
  | "BANK_MISMATCH"
  /** Another live process (or another Router in this one) has the bank open. */
  | "BANK_LOCKED"
  /** A bank or projections file is corrupt. */
  | "CORRUPT_FILE"
  /** Projections belong to another model. */
  | "PROJECTIONS_MISMATCH"
  /** Nothing to route over. */
  | "EMPTY_LIBRARY"
  /** A named skill does not exist. */
  | "SKILL_NOT_FOUND"
  /** A file or folder could not be read or written for lack of permission (EACCES / EPERM), or is not private enough to trust (a socket folder). */
  | "PERMISSION_DENIED"
  /** A native bug or an unexpected C++ exception (message says which); please report it. */
  | "INTERNAL"
  /** Native memory (or, for a CUDA glance, device memory) ran out. */
  | "OUT_OF_MEMORY"
  /** GAVEL_GLANCE_DEVICE=cuda, but this addon was built without CUDA or no CUDA device answers. */
  | "CUDA_UNAVAILABLE"
  /** A CUDA call failed during a glance on the device (message carries CUDA's error). */
  | "CUDA_ERROR"
  /** A resident router (`gavel serve`) has as many requests in flight as it takes; try again later. */
  | "BUSY"
  /** The disk (or the user's quota) is full: a bank could not be written (ENOSPC / EDQUOT); what was committed before stands. */
  | "NO_SPACE";

/** Every {@link GavelErrorCode}, at run time. A compile-time check below keeps the list exhaustive. */
export const GAVEL_ERROR_CODES = [
  "FILE_NOT_FOUND",
  "NOT_GGUF",
  "UNSUPPORTED_ARCHITECTURE",
  "MODEL_LOAD_FAILED",
  "LAYER_OUT_OF_RANGE",
  "TOKEN_OUT_OF_VOCABULARY",
  "CONTEXT_OVERFLOW",
  "INVALID_ARGUMENT",
  "DISPOSED",
  "ABORTED",
  "DECODE_FAILED",
  "HIDDEN_STATES_UNAVAILABLE",
  "NATIVE_UNAVAILABLE",
  "DEPENDENCY_MISSING",
  "SKILL_INVALID",
  "BANK_MISMATCH",
  "BANK_LOCKED",
  "CORRUPT_FILE",
  "PROJECTIONS_MISMATCH",
  "EMPTY_LIBRARY",
  "SKILL_NOT_FOUND",
  "PERMISSION_DENIED",
  "INTERNAL",
  "OUT_OF_MEMORY",
  "CUDA_UNAVAILABLE",
  "CUDA_ERROR",
  "BUSY",
  "NO_SPACE",
] as const satisfies readonly GavelErrorCode[];

// Compile-time: a code added to GavelErrorCode but not to GAVEL_ERROR_CODES fails type-checking here.
const exhaustive: [Exclude<GavelErrorCode, (typeof GAVEL_ERROR_CODES)[number]>] extends [never] ? true : never = true;
void exhaustive;

/**
 * The brand every GavelError carries, registered process-wide (`Symbol.for`), so that an error made by
 * one copy of the class (the package's CommonJS build) is an instance of another (its ES module
 * build, or a second install of the package).
 */
const BRAND = Symbol.for("gavel-router.GavelError");

/**
 * The most characters of its own a {@link GavelError}'s message keeps: a longer one keeps its first
 * 1,500 and its last 500 around how many were cut (as {@link clip} cuts a quoted string; with that
 * marker, about 2,020 in all). The library's own
 * messages, quotes clipped, stay well under it; it bounds a message whatever a caller or the native
 * addon put in it.
 */
export const MESSAGE_CHARS = 2000;

/** The message each GavelError was made with, where {@link MESSAGE_CHARS} cut it (see {@link clipQuote}). */
const uncut = new WeakMap<object, string>();

/**
 * The one error class of gavel-router (TypeScript and native alike): a message and a stable
 * {@link GavelErrorCode}. `instanceof GavelError` holds across the package's CommonJS and ES module
 * builds (each has its own class): it reads a process-wide brand, not the prototype chain. A message
 * over {@link MESSAGE_CHARS} characters is cut in the middle (`<start>…(N chars cut)…<end>`), so no
 * error, wherever it was made, carries a message that grows with its input.
 */
export class GavelError extends Error {
  readonly code: GavelErrorCode;
  /**
   * The option this error refuses, by the name the API gives it, where a refusal is of one option's
   * value: a number outside its range (`Model.load`'s `contextSize`, `threads`, `gpuLayers`, …;
   * `Router.open`'s `skillBudget`, `keyBudget`, …), a context whose KV cache would be too large
   * (`contextSize`), or a token budget that leaves no room (the option to change first:
   * `skillBudget` when given, else `contextSize`; a skill whose render cannot fit the skill budget,
   * reported in `InstallReport.failed`, names `skillBudget`, or `contextSize` when the budget is the
   * default drawn from the context). Absent on other errors.
   */
  declare readonly option?: string;
  constructor(message: string, code: GavelErrorCode, options?: { cause?: unknown; option?: string }) {
    const cut = typeof message === "string" ? clip(message, MESSAGE_CHARS) : message;
    super(cut, options);
    if (cut !== message) uncut.set(this, message);
    this.name = "GavelError";
    this.code = code;
    if (typeof options?.option === "string") this.option = options.option;
    Object.defineProperty(this, BRAND, { value: true });
  }

  /** An error made by any copy of this class (see the class's description). */
  static [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  /** What `JSON.stringify` writes: the name, code and message (an Error's message is not enumerable), and the option where one is refused. */
  toJSON(): { name: string; code: GavelErrorCode; message: string; option?: string } {
    return { name: this.name, code: this.code, message: this.message, ...optionField(this) };
  }
}

/** `{ option }` where `e` refuses an option ({@link GavelError.option}), else `{}`: what a JSON form of a failure spreads in. */
export function optionField(e: { readonly option?: string }): { option?: string } {
  return e.option === undefined ? {} : { option: e.option };
}

/** How a message names the options it speaks of: the API's names (`skillBudget`) unless a caller words them its own way (the CLI: `--skill-budget`). */
export type OptionNames = (option: string) => string;

/** The message makers of the errors {@link optionError} made. */
const wordings = new WeakMap<object, (name: OptionNames) => string>();

/**
 * A GavelError refusing `option` ({@link GavelError.option}), its message written by `words` with each
 * option it speaks of named by `words`' argument: the API's names here; {@link messageNaming} writes
 * it again with other names.
 */
export function optionError(words: (name: OptionNames) => string, code: GavelErrorCode, option: string, options?: { cause?: unknown }): GavelError {
  const err = new GavelError(words((o) => o), code, { ...options, option });
  wordings.set(err, words);
  return err;
}

/** The message of `err` with the options it speaks of named by `name`, where {@link optionError} made it; else its message as it is. */
export function messageNaming(err: { readonly message: string }, name: OptionNames): string {
  const words = wordings.get(err);
  return words ? clip(words(name), MESSAGE_CHARS) : err.message;
}

/** Shorthand for argument validation failures. */
export function invalidArgument(message: string): GavelError {
  return new GavelError(message, "INVALID_ARGUMENT");
}

/** The most characters of a quoted string an error message holds (see {@link clip}). */
export const CLIP_CHARS = 200;

/**
 * `text` as an error message quotes it (a path, a skill's name, an option's key or value): unchanged
 * up to `max` characters, else its start and its end, `max` characters in all, around how many were
 * cut (`<start>…(N chars cut)…<end>`; the end is a quarter of `max`, so a long path keeps its file
 * name), so that a megabyte-long path or name never makes a megabyte-long message. Where the whole
 * value matters, the error keeps it elsewhere (a `path` field, or the `cause`).
 */
export function clip(text: string, max: number = CLIP_CHARS): string {
  if (text.length <= max) return text;
  const keepEnd = Math.floor(Math.max(0, max) / 4);
  // never split a surrogate pair: a cut that would is moved to keep the pair out whole
  let headEnd = Math.max(0, max) - keepEnd;
  if (headEnd > 0 && /[\ud800-\udbff]/.test(text[headEnd - 1])) headEnd--;
  let tailStart = text.length - keepEnd;
  if (tailStart < text.length && /[\udc00-\udfff]/.test(text[tailStart])) tailStart++;
  return `${text.slice(0, headEnd)}…(${tailStart - headEnd} chars cut)…${text.slice(tailStart)}`;
}

/**
 * A location as a message quotes it (a path, or `path:line`: a skill's file, a JSONL row): the path
 * {@link clip}ped, its line number kept whole after it.
 */
export function clipLocation(where: string): string {
  const line = /:\d{1,12}$/.exec(where.slice(-13))?.[0] ?? "";
  return clip(where.slice(0, where.length - line.length)) + line;
}

/**
 * The message of a caught error (Node's `ENOENT: no such file or directory, open '<path>'`, a JSON
 * parser's complaint) as a message quotes it: {@link clip}ped at twice {@link CLIP_CHARS}, so that
 * one holding a path of up to CLIP_CHARS characters, which the message quotes whole, reads whole too.
 */
export function clipMessage(err: unknown): string {
  return clip(err instanceof Error ? err.message : String(err), 2 * CLIP_CHARS);
}

/**
 * `err` with each quote of `value` in its message {@link clip}ped: for a message made where the value
 * could not be clipped (the native addon quotes the path it was handed whole). The quotes are found
 * in the message as it was made, before {@link MESSAGE_CHARS} cut it; the result is a new GavelError
 * of the same code whose `cause` is `err`. Anything else, or a message that does not quote a value
 * longer than {@link CLIP_CHARS}, is returned as it is.
 */
export function clipQuote<E>(err: E, value: string): E | GavelError {
  if (!(err instanceof GavelError) || value.length <= CLIP_CHARS) return err;
  const whole = uncut.get(err) ?? err.message;
  if (!whole.includes(value)) return err;
  return new GavelError(whole.split(value).join(clip(value)), err.code, { cause: err, option: err.option });
}
