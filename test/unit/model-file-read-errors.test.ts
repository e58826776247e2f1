// Model.load's header read (src/model/gguf-file.ts, validateModelFile) rejects with its documented
// codes only: a failure of the read that is not a GavelError (an I/O error, an allocation that
// failed) is MODEL_LOAD_FAILED naming the file, and the reader's own codes pass through.
import { describe, expect, it, vi } from "vitest";
import { GavelError } from "../../src/errors.js";

const failure = vi.hoisted(() => ({ err: undefined as unknown }));
vi.mock("../../src/gguf/index.js", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../../src/gguf/index.js")>()),
  readGgufHeader: () => Promise.reject(failure.err),
}));
const { validateModelFile } = await import("../../src/model/gguf-file.js");
const { expectCode } = await import("../helpers/gavel-error.js");

describe("validateModelFile", () => {
  it("turns a raw error of the header read into MODEL_LOAD_FAILED, keeping it as the cause", async () => {
    failure.err = Object.assign(new Error("Cannot create a string longer than 0x1fffffe8 characters"), { code: "ERR_STRING_TOO_LONG" });
    const err = await expectCode(validateModelFile("/models/m.gguf"), "MODEL_LOAD_FAILED", /^\/models\/m\.gguf: its GGUF header could not be read: Cannot create a string longer/);
    expect(err.cause).toBe(failure.err);
    failure.err = new RangeError("Array buffer allocation failed");
    await expectCode(validateModelFile("/models/m.gguf"), "MODEL_LOAD_FAILED", /Array buffer allocation failed/);
  });

  it("passes NOT_GGUF and FILE_NOT_FOUND through, and makes CORRUPT_FILE MODEL_LOAD_FAILED", async () => {
    failure.err = new GavelError("m.gguf: not a valid GGUF file: x", "NOT_GGUF");
    expect(await validateModelFile("m.gguf").catch((e: unknown) => e)).toBe(failure.err);
    failure.err = new GavelError("model file not found: m.gguf", "FILE_NOT_FOUND");
    expect(await validateModelFile("m.gguf").catch((e: unknown) => e)).toBe(failure.err);
    failure.err = new GavelError("m.gguf: corrupt GGUF file: y", "CORRUPT_FILE");
    await expectCode(validateModelFile("m.gguf"), "MODEL_LOAD_FAILED", /corrupt GGUF file: y/);
  });
});
