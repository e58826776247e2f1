// The model tests' shared set-up: a model loaded once for a describe block (beforeAll) and disposed
// after it (afterAll), a router over the embedded pair on a bank folder of the block's own, the
// reference load of the batching tests (one request at a time), and the code a rejected call carries.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { GavelError, Model, Router, type ModelLoadOptions } from "../../src/index.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";

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

/** A describe block's router over the embedded pair (see {@link suiteRouter}); set once the block's beforeAll has run. */
export interface SuiteRouter {
  model: Model;
  /** The open router. A test may replace it (closing the old one); afterAll closes whichever is here then. */
  router: Router;
  /** The bank folder: a fresh temporary folder of the block's own. */
  bankDir: string;
  /** Opens another router on the same model and bank folder, with the same options. */
  open(): Promise<Router>;
}

/**
 * Registers the enclosing describe block's beforeAll: load the embedded model (DEFAULT_MODEL, a 4,096-token
 * context, one thread), open a router with DEFAULT_PROJECTIONS and a 512-token skill budget on a fresh
 * bank folder `<tmpdir>/<prefix>XXXXXX`, then run `setUp` (an install, say); and its afterAll: close the
 * router, dispose of the model, remove the folder. Call it inside the block; each block gets its own
 * model, router and folder.
 */
export function suiteRouter(prefix: string, setUp?: (suite: SuiteRouter) => Promise<void>): SuiteRouter {
  const suite = {
    open: () => Router.open(suite.model, { projections: DEFAULT_PROJECTIONS, bankDir: suite.bankDir, skillBudget: 512 }),
  } as SuiteRouter;
  beforeAll(async () => {
    suite.model = await Model.load(DEFAULT_MODEL, { contextSize: 4096, threads: 1 });
    suite.bankDir = mkdtempSync(join(tmpdir(), prefix));
    suite.router = await suite.open();
    await setUp?.(suite);
  });
  afterAll(async () => {
    await suite.router?.close();
    await suite.model?.dispose();
    if (suite.bankDir) rmSync(suite.bankDir, { recursive: true, force: true });
  });
  return suite;
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
