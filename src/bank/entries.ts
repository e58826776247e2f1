/**
 * Bank entries: checking what a caller stages with {@link BankStore.put} and what a manifest holds,
 * and freezing entries (their manifest JSON is cached per entry object, so they must not change).
 */
import { GavelError, invalidArgument, clip } from "../errors.js";
import { isUint } from "../util/validate.js";
import type { BankEntry, BankEntryInput, EntryBuild } from "./types.js";

/** Checks a {@link BankStore.put}'s entry and keys; INVALID_ARGUMENT naming the problem. */
export function checkEntryInput(input: BankEntryInput, keys: Float32Array, dim: number): BankEntryInput {
  if (!(keys instanceof Float32Array)) throw invalidArgument("put: keys must be a Float32Array");
  if (keys.length === 0 || keys.length % dim !== 0) {
    throw invalidArgument(`put: keys must hold a positive multiple of dim = ${dim} values, got ${keys.length}`);
  }
  for (let i = 0; i < keys.length; i++) {
    if (!Number.isFinite(keys[i])) throw invalidArgument(`put: keys[${i}] is ${keys[i]}`);
  }
  try {
    return checkEntryFields(input, keys.length / dim);
  } catch (err) {
    throw invalidArgument(`put: ${(err as Error).message}`);
  }
}

/** Validates and copies the caller-supplied fields of an entry (plain Error on failure). */
export function checkEntryFields(input: BankEntryInput, nKeys: number): BankEntryInput {
  if (typeof input !== "object" || input === null) throw new Error("entry must be an object");
  for (const k of ["id", "name", "description", "contentHash", "source"] as const) {
    if (typeof input[k] !== "string") throw new Error(`${k} must be a string`);
  }
  if (input.id.length === 0) throw new Error("id must not be empty");
  if (typeof input.disableModelInvocation !== "boolean") throw new Error("disableModelInvocation must be a boolean");
  if (!isUint(input.renderTokens)) throw new Error("renderTokens must be a non-negative integer");
  const ints = (a: unknown, name: string): number[] => {
    if (!Array.isArray(a) || a.length !== nKeys) throw new Error(`${name} must be an array of ${nKeys} integers (one per key)`);
    for (const v of a) if (!isUint(v)) throw new Error(`${name} holds ${JSON.stringify(v)}, not a non-negative integer`);
    return [...(a as number[])];
  };
  return {
    id: input.id,
    name: input.name,
    description: input.description,
    contentHash: input.contentHash,
    source: input.source,
    disableModelInvocation: input.disableModelInvocation,
    keyTokens: ints(input.keyTokens, "keyTokens"),
    ...(input.keyPositions !== undefined ? { keyPositions: ints(input.keyPositions, "keyPositions") } : {}),
    renderTokens: input.renderTokens,
    ...(input.renderCut !== undefined ? { renderCut: checkRenderCut(input.renderCut) } : {}),
    ...(input.warnings !== undefined && input.warnings.length > 0 ? { warnings: checkWarnings(input.warnings) } : {}),
    ...(input.meta !== undefined ? { meta: checkMeta(input.meta) } : {}),
    ...(input.build !== undefined ? { build: checkBuild(input.build) } : {}),
  };
}

/** A JSON copy of an entry's front matter (a plain object of JSON values; plain Error otherwise). */
export function checkMeta(m: unknown): Record<string, unknown> {
  if (typeof m !== "object" || m === null || Array.isArray(m)) throw new Error("meta must be an object");
  let copy: unknown;
  try {
    copy = JSON.parse(JSON.stringify(m));
  } catch (err) {
    throw new Error(`meta is not JSON (${(err as Error).message})`);
  }
  return deepFreeze(copy) as Record<string, unknown>;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

/** Whether an entry's recorded front matter is `meta` (both as JSON; an entry without any records none). */
export function sameMeta(e: BankEntry, meta: Readonly<Record<string, unknown>>): boolean {
  return e.meta !== undefined && JSON.stringify(e.meta) === JSON.stringify(checkMeta(meta));
}

/** `e` with its front matter (and its recorded source, given one) replaced, frozen; INVALID_ARGUMENT unless a JSON object. */
export function withMeta(e: BankEntry, meta: Readonly<Record<string, unknown>>, source = e.source): BankEntry {
  let m: Record<string, unknown>;
  try {
    m = checkMeta(meta);
  } catch (err) {
    throw invalidArgument(`setMeta: ${(err as Error).message}`);
  }
  if (typeof source !== "string") throw invalidArgument(`setMeta: source must be a string, got ${typeof source}`);
  return freezeEntry({ ...e, meta: m, source });
}

function checkWarnings(w: unknown): string[] {
  if (!Array.isArray(w) || !w.every((x) => typeof x === "string")) throw new Error("warnings must be an array of strings");
  return [...(w as string[])];
}

function checkBuild(b: unknown): EntryBuild {
  if (typeof b !== "object" || b === null) throw new Error("build must be an object");
  const { skillBudget, keyBudget, contextSize } = b as Record<string, unknown>;
  if (!isUint(skillBudget) || !isUint(keyBudget) || !isUint(contextSize)) throw new Error("build must hold skillBudget, keyBudget and contextSize, non-negative integers");
  return { skillBudget, keyBudget, contextSize };
}

function checkRenderCut(c: unknown): { descriptionChars: number; bodyChars: number } {
  if (typeof c !== "object" || c === null) throw new Error("renderCut must be an object");
  const { descriptionChars, bodyChars } = c as Record<string, unknown>;
  if (!isUint(descriptionChars) || !isUint(bodyChars)) throw new Error("renderCut must hold descriptionChars and bodyChars, non-negative integers");
  return { descriptionChars, bodyChars };
}

/** `e` with its warnings replaced (none: the field is dropped), frozen; INVALID_ARGUMENT unless strings. */
export function withWarnings(e: BankEntry, warnings: readonly string[]): BankEntry {
  let w: string[];
  try {
    w = checkWarnings(warnings);
  } catch (err) {
    throw invalidArgument(`setWarnings: ${(err as Error).message}`);
  }
  const { warnings: _old, ...rest } = e;
  return freezeEntry({ ...rest, ...(w.length > 0 ? { warnings: w } : {}) });
}

/** Freezes an entry and its arrays (see the module comment). */
export function freezeEntry(e: BankEntry): BankEntry {
  Object.freeze(e.keyTokens);
  if (e.keyPositions) Object.freeze(e.keyPositions);
  if (e.renderCut) Object.freeze(e.renderCut);
  if (e.build) Object.freeze(e.build);
  if (e.warnings) Object.freeze(e.warnings);
  return Object.freeze(e);
}

/**
 * The entry with this id, else the one with this name (both compared in NFC too).
 * @throws GavelError `INVALID_ARGUMENT` when no id matches and several entries have the name
 */
export function findEntry(store: { get(id: string): BankEntry | undefined; entries(): readonly BankEntry[] }, idOrName: string): BankEntry | undefined {
  const nfc = idOrName.normalize("NFC");
  const byId = store.get(idOrName) ?? store.get(nfc);
  if (byId) return byId;
  const named = store.entries().filter((e) => e.name === idOrName || e.name.normalize("NFC") === nfc);
  const ids = named.slice(0, 10).map((e) => JSON.stringify(e.id)).join(", ");
  if (named.length > 1) throw new GavelError(`${named.length} installed skills are named ${JSON.stringify(clip(idOrName))} (${ids}${named.length > 10 ? ", …" : ""})${AMBIGUOUS_END}`, "INVALID_ARGUMENT");
  return named[0];
}

/** How {@link findEntry}'s error for a name several skills share ends (its start counts them). */
const AMBIGUOUS_END = ": give the id of the one meant";
/** {@link findEntry}'s error for a shared name, as its message reads (also after `gavel serve`, which keeps code and message). */
const AMBIGUOUS = /^\d+ installed skills are named "[\s\S]*\): give the id of the one meant$/;

/** Whether `err` is {@link findEntry}'s `INVALID_ARGUMENT` for a name several installed skills share (its message lists their ids). */
export function isAmbiguousName(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === "INVALID_ARGUMENT" && typeof e.message === "string" && AMBIGUOUS.test(e.message);
}

/**
 * ln((N + 1) / (df + 0.5)) of each token id over the N routable entries (held, by `handleOf`, and in
 * `routable`), df counting the entries whose kept keys include the token; indexed by token id.
 */
export function tokenIdfOf(entries: readonly BankEntry[], handleOf: ReadonlyMap<string, number>, routable: ReadonlySet<number>): Float32Array {
  const df = new Map<number, number>();
  let n = 0, top = 0;
  for (const e of entries) {
    const h = handleOf.get(e.id);
    if (h === undefined || !routable.has(h)) continue;
    n++;
    for (const t of new Set(e.keyTokens)) {
      df.set(t, (df.get(t) ?? 0) + 1);
      if (t > top) top = t;
    }
  }
  const idf = new Float32Array(top + 2).fill(Math.log((n + 1) / 0.5));
  for (const [t, d] of df) idf[t] = Math.log((n + 1) / (d + 0.5));
  return idf;
}
