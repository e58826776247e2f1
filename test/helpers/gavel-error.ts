// Assertions that a call fails with a typed GavelError of a given code.
import { expect } from "vitest";
import { GavelError, type GavelErrorCode } from "../../src/errors.js";

/** What `p` rejects with, or what `p()` throws or its promise rejects with; undefined when it succeeds. */
export async function caught(p: Promise<unknown> | (() => unknown)): Promise<unknown> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (e) {
    return e;
  }
  return undefined;
}

/** Expects `err` to be a GavelError with `code`, and its message to match `msg` when given; returns it. */
export function expectGavelError(err: unknown, code: GavelErrorCode, msg?: RegExp): GavelError {
  expect(err, `expected a GavelError ${code}`).toBeInstanceOf(GavelError);
  expect((err as GavelError).code).toBe(code);
  if (msg) expect((err as GavelError).message).toMatch(msg);
  return err as GavelError;
}

/** Expects `p` (a promise, or a value a tool's typed union may hold) to reject with a GavelError with `code` (and a message matching `msg`, when given); returns the error. */
export async function expectCode(p: PromiseLike<unknown> | unknown, code: GavelErrorCode, msg?: RegExp): Promise<GavelError> {
  return expectGavelError(await caught(Promise.resolve(p)), code, msg);
}

/** Expects `fn()` to throw, synchronously, a GavelError with `code` (and a message matching `msg`, when given); returns the error. */
export function expectCodeSync(fn: () => unknown, code: GavelErrorCode, msg?: RegExp): GavelError {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  return expectGavelError(err, code, msg);
}
