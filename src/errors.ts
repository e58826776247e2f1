/**
 * Every failure gavel-router reports is a {@link GavelError} with a stable {@link GavelErrorCode}.
 * The native addon receives this class once at load time and throws it too, so native failures
 * arrive typed, with the same codes.
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
  /** The object was disposed. */
  | "DISPOSED"
  /** The operation was cancelled through its AbortSignal. */
  | "ABORTED"
  /** llama_decode failed (message carries its status). */
  | "DECODE_FAILED"
  /** The model's graph does not expose the residual stream for that layer. */
  | "HIDDEN_STATES_UNAVAILABLE"
  /** The native addon could not be loaded (no prebuild for this platform and no local build). */
  | "NATIVE_UNAVAILABLE"
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
  | "SKILL_NOT_FOUND";

export class GavelError extends Error {
  readonly code: GavelErrorCode;
  constructor(message: string, code: GavelErrorCode, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "GavelError";
    this.code = code;
  }
}

/** Shorthand for argument validation failures. */
export function invalidArgument(message: string): GavelError {
  return new GavelError(message, "INVALID_ARGUMENT");
}
