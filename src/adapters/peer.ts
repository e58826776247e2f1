/**
 * How an adapter loads its framework (an optional peer dependency: `ai`, `zod`, `langchain`,
 * `@langchain/core`, `@mastra/core`): when the adapter's entry loads, each package is imported apart
 * (a dynamic `import()` awaited at the top of the ES module, `require()` in the CommonJS build), and
 * one that is not installed is remembered instead of failing the import. The first call that needs it
 * throws a GavelError `DEPENDENCY_MISSING` naming the entry, the package and what to install; the
 * adapter's other parts (those that need only the packages present) work. Any other failure to load
 * a package (a syntax error, an export it lacks) is thrown at the import, as it was.
 *
 * @module
 */
import { GavelError } from "../errors.js";
import { missingPackage } from "../util/missing-package.js";

/** A framework package as an adapter loaded it: the module, or why it is missing. */
export interface Peer<T> {
  /** The package's name ("ai", "@langchain/core"). */
  readonly pkg: string;
  /** The adapter's entry ("gavel-router/ai-sdk"). */
  readonly entry: string;
  readonly module: T | undefined;
  /** The import's error when the package (or a package it imports) is not installed. */
  readonly missing: { error: unknown; pkg: string; broken: boolean } | undefined;
}

function failed<T>(entry: string, pkg: string, err: unknown): Peer<T> {
  const missing = missingPackage(err, pkg);
  if (missing === null) throw err;
  return { pkg, entry, module: undefined, missing: { error: err, ...missing } };
}

/** `load()`'s module (`require` in the CommonJS build), or the missing package. */
export function loadPeerSync<T>(entry: string, pkg: string, load: () => unknown): Peer<T> {
  try {
    return { pkg, entry, module: load() as T, missing: undefined };
  } catch (err) {
    return failed(entry, pkg, err);
  }
}

/** `load()`'s module (`import()` in the ES module build), or the missing package. */
export async function loadPeer<T>(entry: string, pkg: string, load: () => Promise<unknown>): Promise<Peer<T>> {
  try {
    return { pkg, entry, module: (await load()) as T, missing: undefined };
  } catch (err) {
    return failed(entry, pkg, err);
  }
}

/**
 * The error for a missing package: `gavel-router/langchain needs @langchain/core (for
 * GavelSkillRetriever), an optional peer dependency that is not installed: npm install @langchain/core`.
 */
export function peerError(peer: Peer<unknown>, what: string): GavelError {
  const m = peer.missing!;
  const reason = m.broken
    ? `; the installed one cannot be imported (${String((m.error as Error).message).split(/ imported from|\n/)[0]}): install a release within gavel-router's peer range`
    : m.pkg === peer.pkg
      ? ", an optional peer dependency that is not installed"
      : `, which cannot be imported: ${m.pkg}, a package it needs, is not installed`;
  return new GavelError(`${peer.entry} needs ${peer.pkg} (for ${what})${reason}: npm install ${m.broken || m.pkg === peer.pkg ? peer.pkg : m.pkg}`, "DEPENDENCY_MISSING", { cause: m.error });
}

/** The package's module, or the GavelError `DEPENDENCY_MISSING` of {@link peerError}. */
export function need<T>(peer: Peer<T>, what: string): T {
  if (peer.missing !== undefined) throw peerError(peer, what);
  return peer.module as T;
}
