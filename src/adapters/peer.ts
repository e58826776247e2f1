/**
 * How an adapter loads its framework (an optional peer dependency: `ai`, `zod`, `langchain`,
 * `@langchain/core`, `@mastra/core`): when the adapter's entry loads, each package is imported apart
 * (a dynamic `import()` awaited at the top of the ES module, `require()` in the CommonJS build), and
 * one that cannot be used is remembered instead of failing the import: one that is not installed, or
 * one installed that lacks an export the adapter calls (a release outside gavel-router's peer range,
 * such as langchain 0.3 without `createMiddleware`; a dynamic import checks no named exports, so this
 * is checked here, by name). The first call that needs it throws a GavelError `DEPENDENCY_MISSING`
 * naming the entry, the package (with the missing export and the installed version, where it lacks
 * one) and what to install; the adapter's other parts (those that need only the packages present)
 * work. Any other failure to load a package (a syntax error in it, a package path it does not export)
 * is thrown at the import.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { GavelError } from "../errors.js";
import { missingPackage } from "../util/missing-package.js";

/** Why a package cannot be used. */
export interface PeerMissing {
  /** The import's error, or (for a missing export) an error saying which. */
  error: unknown;
  /** The package to install: the peer itself, or a package it needs that is not installed. */
  pkg: string;
  /** Installed, but its own files cannot be imported (a missing file inside it). */
  broken: boolean;
  /** Installed and imported, but without `name`, an export the adapter calls, of `from`. */
  lacks?: { name: string; from: string; version: string | undefined };
}

/** A framework package as an adapter loaded it: the module, or why it cannot be used. */
export interface Peer<T> {
  /** The package's name ("ai", "@langchain/core"). */
  readonly pkg: string;
  /** The adapter's entry ("gavel-router/ai-sdk"). */
  readonly entry: string;
  readonly module: T | undefined;
  /** Set when the package (or a package it imports) is not installed, or it lacks an export. */
  readonly missing: PeerMissing | undefined;
}

/** The package a specifier names: "@langchain/core/tools" → "@langchain/core". */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return parts.slice(0, specifier.startsWith("@") ? 2 : 1).join("/");
}

function failed<T>(entry: string, pkg: string, err: unknown): Peer<T> {
  const missing = missingPackage(err, pkg);
  if (missing === null) throw err;
  return { pkg, entry, module: undefined, missing: { error: err, ...missing } };
}

/**
 * The version in the package.json of `pkg` that holds `file` (the module a specifier resolved to),
 * or undefined when none can be read.
 */
function versionAt(file: string | undefined, pkg: string): string | undefined {
  if (file === undefined) return undefined;
  try {
    for (let dir = dirname(file.startsWith("file:") ? fileURLToPath(file) : file); dirname(dir) !== dir; dir = dirname(dir)) {
      let json: { name?: unknown; version?: unknown };
      try {
        json = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as typeof json;
      } catch {
        continue; // no package.json here (or not JSON): the folder above
      }
      if (json.name === pkg) return typeof json.version === "string" ? json.version : undefined;
    }
  } catch {
    // the version is only a help to the message
  }
  return undefined;
}

/**
 * The module, or (when it lacks one of `exports`) a peer that is missing that export. `resolve` finds
 * the module's file, for the installed version the message names.
 */
function checked<T>(entry: string, specifier: string, module: unknown, exports: readonly string[], resolve: () => string | undefined): Peer<T> {
  const pkg = packageOf(specifier);
  const name = exports.find((e) => (module as Record<string, unknown> | null | undefined)?.[e] === undefined);
  if (name === undefined) return { pkg, entry, module: module as T, missing: undefined };
  let file: string | undefined;
  try {
    file = resolve();
  } catch {
    file = undefined;
  }
  const error = new Error(`The module '${specifier}' does not provide an export named '${name}'`);
  return { pkg, entry, module: undefined, missing: { error, pkg, broken: true, lacks: { name, from: specifier, version: versionAt(file, pkg) } } };
}

/**
 * `load()`'s module (`require(specifier)` in the CommonJS build), or why it cannot be used: not
 * installed, or without one of `exports` (the names the adapter calls).
 */
export function loadPeerSync<T>(entry: string, specifier: string, exports: readonly (keyof T & string)[], load: () => unknown): Peer<T> {
  let module: unknown;
  try {
    module = load();
  } catch (err) {
    return failed(entry, packageOf(specifier), err);
  }
  return checked(entry, specifier, module, exports, () => require.resolve(specifier));
}

/**
 * `load()`'s module (`import(specifier)` in the ES module build), or why it cannot be used: not
 * installed, or without one of `exports` (the names the adapter calls; a dynamic import checks none).
 */
export async function loadPeer<T>(entry: string, specifier: string, exports: readonly (keyof T & string)[], load: () => Promise<unknown>): Promise<Peer<T>> {
  let module: unknown;
  try {
    module = await load();
  } catch (err) {
    return failed(entry, packageOf(specifier), err);
  }
  // (Node 20.0-20.5 have no synchronous import.meta.resolve; the CommonJS build, which never calls
  // loadPeer, defines it as undefined: tsup.config.ts)
  const resolve = () => (typeof import.meta.resolve === "function" ? import.meta.resolve(specifier) : undefined);
  return checked(entry, specifier, module, exports, resolve);
}

/** What a message asks for when the installed release does not fit. */
const IN_RANGE = "install a release within gavel-router's peer range (see package.json peerDependencies)";

/**
 * The error for a package that cannot be used: `gavel-router/langchain needs @langchain/core (for
 * GavelSkillRetriever), an optional peer dependency that is not installed: npm install
 * @langchain/core`; for one that lacks an export, `gavel-router/langchain needs langchain (for
 * gavelSkillMiddleware); the installed one (0.3.0) has no export createMiddleware: install a release
 * within gavel-router's peer range (see package.json peerDependencies): npm install langchain`.
 */
export function peerError(peer: Peer<unknown>, what: string): GavelError {
  const m = peer.missing!;
  let reason: string;
  if (m.lacks) {
    const { name, from, version } = m.lacks;
    reason = `; the installed one${version === undefined ? "" : ` (${version})`} has no export ${name}${from === peer.pkg ? "" : ` in ${from}`}: ${IN_RANGE}`;
  } else if (m.broken) {
    reason = `; the installed one cannot be imported (${String((m.error as Error).message).split(/ imported from|\n/)[0]}): ${IN_RANGE}`;
  } else {
    reason = m.pkg === peer.pkg ? ", an optional peer dependency that is not installed" : `, which cannot be imported: ${m.pkg}, a package it needs, is not installed`;
  }
  return new GavelError(`${peer.entry} needs ${peer.pkg} (for ${what})${reason}: npm install ${m.broken || m.pkg === peer.pkg ? peer.pkg : m.pkg}`, "DEPENDENCY_MISSING", { cause: m.error });
}

/** The package's module, or the GavelError `DEPENDENCY_MISSING` of {@link peerError}. */
export function need<T>(peer: Peer<T>, what: string): T {
  if (peer.missing !== undefined) throw peerError(peer, what);
  return peer.module as T;
}
