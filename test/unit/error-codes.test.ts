/**
 * One error-code table for both sides: native/src/common/error_codes.h lists every code the addon
 * may throw (an X-macro; C++ throws only its enum, never a free string), and GavelErrorCode /
 * GAVEL_ERROR_CODES in src/errors.ts must hold each of them. The codes only TypeScript raises are
 * listed here, so a new code on either side has to be placed consciously. The native sources are
 * also scanned for a string literal passed as a code, or a Code:: name outside the table.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { GAVEL_ERROR_CODES, GavelError } from "../../src/errors.js";
import { repoRoot } from "../helpers/paths.js";

const nativeSrc = join(repoRoot, "native", "src");
const tablePath = join(nativeSrc, "common", "error_codes.h");

/** Codes raised by TypeScript only (files, skills, banks on disk, the addon's loading). */
const TS_ONLY = [
  "FILE_NOT_FOUND",
  "NOT_GGUF",
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
  "BUSY",
  "NO_SPACE",
];

/** The X(NAME) entries of the GAVEL_ERROR_CODES X-macro. */
function nativeTable(): string[] {
  const text = readFileSync(tablePath, "utf8");
  const start = text.indexOf("#define GAVEL_ERROR_CODES(X)");
  expect(start).toBeGreaterThanOrEqual(0);
  const lines = text.slice(start).split("\n");
  const codes: string[] = [];
  for (const line of lines.slice(1)) {
    const m = /^\s*X\(([A-Z][A-Z0-9_]*)\)\s*\\?\s*$/.exec(line);
    if (!m) break;
    codes.push(m[1]);
  }
  return codes;
}

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) sources(p, out);
    else if (/\.(cpp|h|cu|inc)$/.test(name)) out.push(p);
  }
  return out;
}

/** The source without comments, so prose quoting a code does not count. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/[^\n]*/g, "");
}

describe("error codes", () => {
  const table = nativeTable();
  const ts = new Set<string>(GAVEL_ERROR_CODES);

  it("the package root exports GAVEL_ERROR_CODES, the list docs/api.md points to", async () => {
    const root = await import("../../src/index.js");
    expect(root.GAVEL_ERROR_CODES).toEqual(GAVEL_ERROR_CODES);
  });

  it("the native table is non-trivial and has no repeats", () => {
    expect(table.length).toBeGreaterThanOrEqual(10);
    expect(new Set(table).size).toBe(table.length);
    expect(table).toContain("INVALID_ARGUMENT");
    expect(table).toContain("DISPOSED");
  });

  it("every code C++ can throw is a GavelErrorCode", () => {
    expect(table.filter((c) => !ts.has(c))).toEqual([]);
  });

  it("every GavelErrorCode is in the native table or raised by TypeScript only", () => {
    expect(new Set(GAVEL_ERROR_CODES).size).toBe(GAVEL_ERROR_CODES.length);
    const native = new Set(table);
    expect(GAVEL_ERROR_CODES.filter((c) => !native.has(c)).sort()).toEqual([...TS_ONLY].sort());
    expect(TS_ONLY.filter((c) => native.has(c))).toEqual([]);
  });

  it("native sources pass no string literal as a code and name no Code outside the table", () => {
    const native = new Set(table);
    const literal: string[] = [];
    const unknown: string[] = [];
    for (const file of sources(nativeSrc)) {
      if (file === tablePath) continue;  // the table itself
      const text = code(readFileSync(file, "utf8"));
      const where = relative(repoRoot, file);
      // Failure("X", …), Throw(env, "X", …), MakeError(env, "X", …) and the like.
      for (const m of text.matchAll(/\b(Failure\s*\(|(?:Throw|MakeError)\s*\(\s*[\w.]+(?:\(\))?\s*,)\s*"([^"]*)"/g))
        literal.push(`${where}: ${m[1]} "${m[2]}"`);
      // A code spelled as a bare string anywhere in code: "ABORTED" and the like.
      for (const m of text.matchAll(/"([A-Z][A-Z0-9]*_[A-Z0-9_]+|[A-Z]{5,})"/g))
        if (ts.has(m[1])) literal.push(`${where}: "${m[1]}"`);
      for (const m of text.matchAll(/\bCode::([A-Za-z_]\w*)/g)) if (!native.has(m[1])) unknown.push(`${where}: Code::${m[1]}`);
    }
    expect(literal).toEqual([]);
    expect(unknown).toEqual([]);
  });
});

describe("GavelError as JSON", () => {
  it("keeps its message, code and name (an Error's message is not enumerable)", () => {
    const e = new GavelError("input[0]: body is too long", "SKILL_INVALID");
    expect(JSON.parse(JSON.stringify({ where: "input[0]", error: e }))).toEqual({ where: "input[0]", error: { name: "GavelError", code: "SKILL_INVALID", message: "input[0]: body is too long" } });
  });
});
