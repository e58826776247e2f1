/**
 * Records of the bank store: the header that binds a bank to the setup that built it, and one entry
 * per installed skill.
 */
import type { ModelFingerprint } from "../model/fingerprint.js";
import type { Projections } from "../projections/projections.js";

/**
 * Version of the on-disk bank layout (manifest.json + keys files) this code writes. Format 2 seals
 * the whole manifest under a sha256 (`manifestSha256`, its last key); format 1 (no seal) is still
 * read, and rewritten as format 2 by the next commit.
 */
export const BANK_FORMAT_VERSION = 2;

/** The formats this code reads: {@link BANK_FORMAT_VERSION} and format 1, the same layout unsealed. */
export const READABLE_BANK_FORMATS: readonly number[] = [1, BANK_FORMAT_VERSION];

/**
 * What a bank's keys depend on. Keys computed under any other value are meaningless against queries
 * of this setup, so a bank whose header differs is refused rather than silently mixed.
 */
export interface BankHeader {
  /** The model whose layer-ℓ* states were projected. */
  readonly model: ModelFingerprint;
  /** {@link Projections.keysHash} of the maps that projected them (ℓ*, dim and W_s). */
  readonly projectionsHash: string;
  /** ℓ*, the layer read. */
  readonly layer: number;
  /** ε of the cover that thinned them. */
  readonly eps: number;
  /** Key width. */
  readonly dim: number;
}

/** What a bank's header is made of: a projections file, or (for a change that needs no model) a bank's own header read back. */
export type HeaderSource = Pick<Projections, "model" | "keysHash" | "layer" | "eps" | "dim">;

/** The header of banks built with `projections` (whose `model` must be the model in use). */
export function bankHeaderFor(projections: HeaderSource): BankHeader {
  return {
    model: projections.model,
    projectionsHash: projections.keysHash,
    layer: projections.layer,
    eps: projections.eps,
    dim: projections.dim,
  };
}

/** What the caller supplies for one skill in {@link BankStore.put}. */
export interface BankEntryInput {
  /** Stable skill id (unique in the bank). */
  readonly id: string;
  readonly name: string;
  readonly description: string;
  /** Hash of the skill's content, so reinstalling an unchanged skill can be skipped. */
  readonly contentHash: string;
  /** Where the skill came from (a folder, a JSONL file and line, …). */
  readonly source: string;
  /** The skill's `disable-model-invocation` flag: installed but never routed to. */
  readonly disableModelInvocation: boolean;
  /** Token id of each retained key (one per key row), for explanations. */
  readonly keyTokens: readonly number[];
  /**
   * Position of each retained key, if recorded: in the render r(s), or, for a skill whose body r(s)
   * cut and a key budget over the skill budget, in its render at the key budget (whose first tokens
   * are r(s)'s, so positions may pass renderTokens); a key read past that render (a key budget over
   * the context) counts on from its end.
   */
  readonly keyPositions?: readonly number[];
  /** Length of the render r(s) in tokens. */
  readonly renderTokens: number;
  /**
   * Characters of the description and of the body that r(s) rendered (less than the skill's when
   * install cut them to the token budget), so the verdict resumes exactly the pass install made.
   * Absent in entries of banks written before it was recorded.
   */
  readonly renderCut?: RenderCut;
  /**
   * The loader's warnings about the skill when it was installed (spec violations, steering phrases,
   * non-boolean flags), and the breadth probes' `hub:` flag (set after the skill's keys are staged,
   * by `BankStore.setWarnings`); absent when there were none, and in entries of banks written before
   * they were recorded.
   */
  readonly warnings?: readonly string[];
  /**
   * The skill's front matter as installed, but name and description (allowed-tools, license,
   * metadata, …; a JSONL row's other fields): what `router.get`, MCP `load_skill` and serve's
   * `get-skill` report, never the file on disk as it is now. Absent in entries of banks written
   * before it was recorded (their records carry no front matter until the skill is installed again).
   */
  readonly meta?: Readonly<Record<string, unknown>>;
  /**
   * The budgets the keys were built with: an install with other budgets builds the skill again.
   * Absent in entries of banks written before it was recorded: those count as built with the
   * router's default budgets.
   */
  readonly build?: EntryBuild;
}

/** The token budgets an entry's keys were built with (a router with other budgets computes other keys). */
export interface EntryBuild {
  /** The skill budget: most tokens of the render r(s). */
  readonly skillBudget: number;
  /** The key budget: most tokens of the skill its keys were read from. */
  readonly keyBudget: number;
  /** The model's context size (it bounds the key render when the key budget exceeds it). */
  readonly contextSize: number;
}

/** How much of a skill's description and body its install render r(s) kept. */
export interface RenderCut {
  readonly descriptionChars: number;
  readonly bodyChars: number;
}

/** What install computed for one skill, as the bank records it beside the keys. */
export interface SkillKeysRecord {
  /** Token id of each key, and its position in r(s). */
  keyTokens: number[];
  keyPositions: number[];
  /** Tokens of r(s). */
  renderTokens: number;
  /** Where r(s) was cut, so the verdict renders the same text. */
  renderCut: RenderCut;
  /** The budgets these keys were built with. */
  build?: EntryBuild;
}

/** One installed skill as the manifest records it. */
export interface BankEntry extends BankEntryInput {
  /** Number of key rows. */
  readonly nKeys: number;
  /** Row offset of the first key in the keys file. */
  readonly offset: number;
  /**
   * sha256 hex of the skill's key rows (see `keysChecksum`), checked whenever they are read; absent in
   * entries of banks written before it was recorded (`gavel check` reports them as unverified).
   */
  readonly keysSha256?: string;
}

/** Options of {@link BankStore.open}. */
export interface BankOpenOptions {
  /** Create the bank (and its directory) when it does not exist. Default false. */
  create?: boolean;
}

/** Counts of {@link BankStore.stats}. */
export interface BankStats {
  /** Installed skills. */
  skills: number;
  /** Live key rows. */
  keys: number;
  /** Rows of removed or replaced skills still in the keys file (reclaimed by `compact()`). */
  deadKeys: number;
  /** Bytes of the keys file that the bank uses (live and dead rows). */
  bytes: number;
}

/** manifest.json as stored. */
export interface BankManifest {
  readonly format: "gavel-bank";
  readonly formatVersion: number;
  readonly header: BankHeader;
  /** Name of the keys file in the bank directory (changes on compaction). */
  readonly keysFile: string;
  /** Rows of the keys file covered by this manifest; anything after them is an uncommitted tail. */
  readonly rows: number;
  /** Increases by one on every commit. */
  readonly generation: number;
  readonly entries: readonly BankEntry[];
}

/**
 * A file kept in step with the manifest (the bank's lexicon). Each commit calls `prepare` with the
 * generation it is about to write, after the key rows are synced and before the manifest is written,
 * then `committed` once the manifest is durable. `prepare` must leave the participant's files so that
 * either generation reads back consistently; a participant that cannot keep up must not throw but
 * leave files that its next open recognises as out of step. A `committed` that throws is ignored.
 */
export interface CommitParticipant {
  prepare(generation: number): Promise<void>;
  committed(generation: number): Promise<void>;
}
