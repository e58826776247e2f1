/**
 * Option values of the `gavel` commands. Flags are parsed by Node's own `util.parseArgs` (a maintained
 * parser with no dependency weight; a framework such as cac or commander would add a package for
 * what it already does), through flags.ts, which words a mistyped command line; this module turns
 * its string values into checked numbers and lists, each failure an INVALID_ARGUMENT that names the
 * flag. Our own small code: ~50 lines.
 */
import { invalidArgument, clip } from "../../errors.js";
import { UsageError } from "../usage-error.js";

/** Most milliseconds a time flag takes (2^31 − 1): node's timers take no more (a longer one fires at once). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Bounds of an integer option; `max` absent means none. */
export interface IntRange {
  min: number;
  max?: number;
}

/** How a bounded integer is described in an error ("a positive integer", "a whole number from 1 to 256"). */
function describeRange(range: IntRange): string {
  if (range.max !== undefined) return `a whole number from ${range.min} to ${range.max}`;
  if (range.min === 1) return "a positive integer";
  if (range.min === 0) return "a non-negative integer";
  return `an integer of at least ${range.min}`;
}

/** A flag's value as a message shows it: quoted when blank (Number("") and Number(" ") are 0, refused), {@link clip}ped. */
const shown = (v: string) => (v.trim() === "" ? JSON.stringify(v) : clip(v));

/**
 * A number flag's value, or NaN where it is not one written in decimal: digits with an optional sign,
 * point and exponent (`3`, `-0.5`, `1e3`), spaces around it allowed, as the GAVEL_* variables take
 * numbers. Number() alone would also take `0x10` (16), `0b1`, `0o7`, `Infinity` and a blank (0).
 */
export function decimalNumber(v: string): number {
  return /^\s*[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?\s*$/i.test(v) ? Number(v) : NaN;
}
const parsed = decimalNumber;

/** An integer option's value (undefined when absent); with a range, one inside it. */
export function intArg(v: string | undefined, name: string, range?: IntRange): number | undefined {
  if (v === undefined) return undefined;
  const n = parsed(v);
  if (range && !(Number.isInteger(n) && n >= range.min && (range.max === undefined || n <= range.max))) {
    throw invalidArgument(`--${name} must be ${describeRange(range)}, got ${shown(v)}`);
  }
  if (!Number.isInteger(n)) throw invalidArgument(`--${name} must be an integer, got ${shown(v)}`);
  return n;
}

/** A finite number option's value (undefined when absent). */
export function numberArg(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = parsed(v);
  if (!Number.isFinite(n)) throw invalidArgument(`--${name} must be a number, got ${shown(v)}`);
  return n;
}

/** A comma-separated list option's items, trimmed, empty ones dropped (undefined when absent). */
export function listArg(v: string | undefined): string[] | undefined {
  return v?.split(",").map((s) => s.trim()).filter(Boolean);
}

/**
 * Refuses a path flag given an empty value (`--bank ""`), which would otherwise read as absent and
 * fall back to the default: a usage error naming the flag.
 */
export function nonEmptyArgs<T extends object>(values: T, names: readonly (keyof T & string)[]): void {
  for (const name of names) {
    if ((values[name] as unknown) === "") throw new UsageError(`--${name} needs a value, got "" (leave the flag out for its default)`, "");
  }
}
