/**
 * The skill itself: what a host needs to load an installed skill — its body, front matter,
 * `allowed-tools`, the absolute path of its SKILL.md (or library row), a content hash and where it came
 * from. The body, name, description and front matter are the bank's installed snapshot (what was
 * installed and routed on); the source file is read back, bounded, only to say whether it still holds
 * that content.
 *
 * {@link readSkillRecord} works over a bank (the router's `Library`, or any {@link SkillBankView});
 * {@link getSkill} over a `Router` (typed structurally, so Router.ts can import this module without a cycle).
 *
 * @module
 */
import { GavelError, invalidArgument, clip } from "../errors.js";
import type { BankEntry } from "../bank/types.js";
import { readManifest } from "../bank/manifest.js";
import { TextStore } from "../bank/texts.js";
import type { RenderableSkill } from "../render/index.js";
import { locateSkill, readSource, type SkillProvenance } from "./skill-source.js";

export { hostOfFolder, installRoots, locateSkill, skillFileOf, type SkillHost, type SkillLocation, type SkillProvenance } from "./skill-source.js";

/**
 * Whether the source still says what the bank installed: `current` (same content), `changed` (the
 * file was edited since: reinstall to route on the new text), `missing` (moved, deleted, no longer
 * valid, or no longer a regular file within `MAX_SOURCE_BYTES`: a FIFO or a device is never read),
 * `memory` (installed from in-memory records: there is no file).
 */
export type SkillSourceStatus = "current" | "changed" | "missing" | "memory";

/** One installed skill, whole: what {@link getSkill} (and `router.get`) return. */
export interface SkillRecord {
  id: string;
  name: string;
  description: string;
  /** The Markdown after the front matter, as installed. */
  body: string;
  /**
   * The front matter as installed: name, description and every other key (none but name and
   * description for a skill installed by a version that did not record it: install it again).
   */
  metadata: Record<string, unknown>;
  /** `allowed-tools` as a list (a YAML list, or a space- or comma-separated string); null when absent. */
  allowedTools: string[] | null;
  /** sha256 of name, description and body, as installed (see `Skill.contentHash`). */
  contentHash: string;
  /** `source` as the bank recorded it (relative to the install's folder in banks written before sources were recorded as absolute paths). */
  source: string;
  /**
   * The SKILL.md or the JSONL library, absolute; null when not found on this machine, installed from
   * memory, or no longer read as a skill there (`sourceStatus` "missing": a folder, a FIFO, a link to
   * another file).
   */
  path: string | null;
  /** The skill's folder, absolute (its scripts/ and references/ live there); null unless a folder skill was found. */
  dir: string | null;
  provenance: SkillProvenance;
  sourceStatus: SkillSourceStatus;
  /** `disable-model-invocation`: never routed to, loaded only when asked by name. */
  disableModelInvocation: boolean;
}

/** What {@link readSkillRecord} needs of a bank; the bank's `Library` has it. */
export interface SkillBankView {
  /** The bank's directory (relative sources are tried against the project that holds it). */
  readonly dir: string;
  /** The entry with this id, else the first with this name. */
  find(idOrName: string): BankEntry | undefined;
  /** The installed text of an entry. */
  text(entry: BankEntry): Promise<RenderableSkill>;
}

/** Splits `allowed-tools`: a YAML list, or a string of names separated by spaces or commas outside parentheses (`Bash(git add:*)`). */
export function parseAllowedTools(value: unknown): string[] | null {
  if (value === undefined || value === null) return null;
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string").map((v) => v.trim()).filter((v) => v !== "");
  if (typeof value !== "string") return null;
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of value) {
    if (ch === "(") depth++;
    else if (ch === ")") depth = Math.max(0, depth - 1);
    if (depth === 0 && (ch === "," || /\s/.test(ch))) {
      if (cur !== "") out.push(cur);
      cur = "";
    } else cur += ch;
  }
  if (cur !== "") out.push(cur);
  return out;
}

function skillNotFound(idOrName: string): GavelError {
  return new GavelError(`no installed skill ${JSON.stringify(clip(idOrName))} (gavel list shows the installed skills)`, "SKILL_NOT_FOUND");
}

/**
 * An installed skill by id or name, whole (see {@link SkillRecord}).
 *
 * @throws GavelError `SKILL_NOT_FOUND` when the bank has no such skill, `CORRUPT_FILE` when the bank
 *   lost its text, `INVALID_ARGUMENT` for a name that is not a non-empty string
 */
export async function readSkillRecord(bank: SkillBankView, idOrName: string): Promise<SkillRecord> {
  if (typeof idOrName !== "string" || idOrName === "") throw invalidArgument("a skill id or name must be a non-empty string");
  const entry = bank.find(idOrName);
  if (!entry) throw skillNotFound(idOrName);
  const text = await bank.text(entry);
  const loc = locateSkill(entry.source, bank.dir);
  const reading = await readSource(loc);
  let sourceStatus: SkillSourceStatus;
  if (loc.provenance.kind === "input") sourceStatus = "memory";
  else if (reading === null) sourceStatus = "missing";
  else sourceStatus = reading.contentHash === entry.contentHash ? "current" : "changed";
  // The front matter is the installed snapshot's, never the file's as it is now (an edit there, say of
  // allowed-tools, must not show beside the installed body); an entry of an older bank recorded none.
  const meta: Readonly<Record<string, unknown>> = entry.meta ?? {};
  return {
    id: entry.id,
    name: text.name,
    description: text.description,
    body: text.body,
    metadata: { name: text.name, description: text.description, ...meta },
    allowedTools: parseAllowedTools(meta["allowed-tools"]),
    contentHash: entry.contentHash,
    source: entry.source,
    // a file there that no longer reads as the skill (swapped for another, a link elsewhere) is not its path
    path: sourceStatus === "missing" ? null : loc.path,
    dir: sourceStatus === "missing" ? null : loc.dir,
    provenance: loc.provenance,
    sourceStatus,
    disableModelInvocation: entry.disableModelInvocation,
  };
}

/** The bank's committed state read from disk (no lock: the manifest and texts are replaced atomically). */
async function committedBank(dir: string): Promise<SkillBankView> {
  const manifest = await readManifest(dir);
  const entries = manifest?.entries ?? [];
  const texts = new TextStore(dir);
  return {
    dir,
    find: (idOrName) => entries.find((e) => e.id === idOrName) ?? entries.find((e) => e.name === idOrName),
    text: (entry) => texts.get(entry.contentHash),
  };
}

/** What {@link getSkill} needs of a `Router`: its bank's folder, and `get` once Router has it. */
export interface SkillRouter {
  readonly bankDir: string;
  get?(idOrName: string): Promise<SkillRecord>;
}

/**
 * An installed skill of `router`'s bank by id or name, whole (see {@link SkillRecord}). Uses
 * `router.get` where the router has it, else the bank's committed state on disk.
 *
 * @throws GavelError `SKILL_NOT_FOUND` for a skill the bank does not hold
 */
export async function getSkill(router: SkillRouter, idOrName: string): Promise<SkillRecord> {
  if (typeof router.get === "function") return router.get(idOrName);
  return readSkillRecord(await committedBank(router.bankDir), idOrName);
}

/** What a route result carries so a host can load the winner without another call (see {@link skillHandle}). */
export interface SkillHandle {
  id: string;
  name: string;
  /** The SKILL.md or library file, absolute; null when not found on this machine or installed from memory. */
  path: string | null;
  /** The skill's folder, absolute; null unless a folder skill was found. */
  dir: string | null;
  contentHash: string;
}

/** {@link SkillHandle} of a bank entry: cheap (no read of the source), for `route()` results. */
export function skillHandle(entry: BankEntry, bankDir: string): SkillHandle {
  const loc = locateSkill(entry.source, bankDir);
  return { id: entry.id, name: entry.name, path: loc.path, dir: loc.dir, contentHash: entry.contentHash };
}
