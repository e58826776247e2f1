// The model tests' shared set-up: a model loaded once for a describe block (beforeAll) and disposed
// after it (afterAll), the reference load of the batching tests (one request at a time), and the code
// a rejected call carries.
import { afterAll, beforeAll, expect } from "vitest";
import { GavelError, Model, type ModelLoadOptions } from "../../src/index.js";

/**
 * The reference of the batching tests: a call's rows or log-probs as one request alone gives them (two
 * sequences, a stream each, the whole 256-token context in one batch, one thread).
 */
export const ALONE: ModelLoadOptions = { contextSize: 256, sequences: 2, kvLayout: "streams", threads: 1, batchSize: 256 };

/**
 * Loads `path` with `options` before the enclosing describe block's tests and disposes it after them;
 * call it inside the block. Returns the model's getter (valid in the block's hooks and tests).
 */
export function suiteModel(path: string, options: ModelLoadOptions): () => Model {
  let model: Model | undefined;
  beforeAll(async () => {
    model = await Model.load(path, options);
  });
  afterAll(async () => {
    await model?.dispose();
  });
  return () => {
    if (!model) throw new Error(`the model ${path} is not loaded (suiteModel's getter is for tests and hooks)`);
    return model;
  };
}

/** The GavelError code `p` rejects with (anything else thrown fails the test), or "no error". */
export async function errorCode(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(GavelError);
    return (err as GavelError).code;
  }
  return "no error";
}
