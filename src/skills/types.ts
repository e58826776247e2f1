import type { GavelError } from "../errors.js";

/**
 * One skill as the router sees it: the three texts the renders use (name, description, body),
 * the rest of the front matter, and provenance for reports.
 *
 * Texts are normalised on load (BOM removed, CRLF/CR → LF, name and description trimmed, blank lines
 * before the body and whitespace after it removed) so that the same SKILL.md read from a folder or from
 * a JSONL library yields the same record and the same {@link Skill.contentHash}.
 */
export interface Skill {
  /**
   * Stable identifier, unique within a library. Folder skills use their (effective) name, which hosts
   * also require to be unique; JSONL rows use their `id` field (falling back to the name).
   */
  id: string;
  /** The `name` from the front matter (or the folder's name where the front matter has none). */
  name: string;
  /**
   * The `description` from the front matter, followed on a new line by `when_to_use` where the skill has
   * one: Claude Code lists the two together, and the router reads what the host's model reads.
   */
  description: string;
  /** The Markdown after the front matter. */
  body: string;
  /** Every other front-matter key (or JSONL field), values as parsed (not necessarily strings). */
  meta: Record<string, unknown>;
  /**
   * sha256 (hex) of name, description and body, length-delimited (the hash of
   * `JSON.stringify([name, description, body])`) so that moving text between fields changes it.
   * Banks key their cached renders by it.
   */
  contentHash: string;
  /** Where the skill came from: the SKILL.md path, or `path:line` for a JSONL row, or `input[i]`. */
  source: string;
  /** Spec violations and suspicious content that hosts tolerate; each message starts with its location. */
  warnings: string[];
  /**
   * `disable-model-invocation: true` (Claude Code): the skill must never be chosen automatically.
   * The router keeps it in the library (a user may still invoke it by name) but never routes to it.
   */
  disableModelInvocation: boolean;
}

/** A skill given directly by the caller (the shape of a JSONL row). */
export interface SkillInput {
  /** Defaults to `name`. */
  id?: string;
  name: string;
  description: string;
  /** Defaults to "". */
  body?: string;
  meta?: Record<string, unknown>;
  /** Provenance shown in reports; defaults to `input[i]`. */
  source?: string;
  /** Also read from `meta["disable-model-invocation"]`. */
  disableModelInvocation?: boolean;
}

/** A skill that could not be loaded; the other skills of the library still load. */
export interface SkillFailure {
  /** Path, `path:line`, or `input[i]` (the same form as {@link Skill.source}). */
  where: string;
  /** Always code `SKILL_INVALID`. */
  error: GavelError;
}

/** What {@link loadSkills} returns. */
export interface LoadSkillsResult {
  skills: Skill[];
  failed: SkillFailure[];
}

/** Default cap on a skill body: 1 MiB of UTF-8. The token budget itself is enforced by the router. */
export const DEFAULT_MAX_BODY_BYTES = 1 << 20;

/** Options of {@link loadSkills}; each count is a non-negative integer or `Infinity`. */
export interface LoadSkillsOptions {
  /**
   * Skip this many candidate skills (JSONL rows, SKILL.md files in sorted path order, array entries)
   * before loading. Candidates that fail still count, so a slice is the same whatever is in it.
   */
  offset?: number;
  /** Load at most this many candidates (after `offset`). A JSONL stream stops reading there. */
  limit?: number;
  /** A body above this many UTF-8 bytes is an error for that skill. Default `DEFAULT_MAX_BODY_BYTES` (1 MiB). */
  maxBodyBytes?: number;
  /**
   * How many folder levels below the given directory are searched for `<dir>/SKILL.md`. Default 3, which
   * reaches `project/.claude/skills/<skill>/SKILL.md` from a project root. A folder that holds a SKILL.md
   * is a skill; its sub-folders (scripts/, references/, …) are not searched.
   */
  maxDepth?: number;
  /** Cancels a long load; the promise rejects with `ABORTED`. */
  signal?: AbortSignal;
}

/** Options of {@link parseSkillMarkdown}. */
export interface ParseSkillOptions {
  /** The skill folder's name: the default `name`, and what the spec says `name` must equal. */
  folderName?: string;
  /** See {@link LoadSkillsOptions.maxBodyBytes}. */
  maxBodyBytes?: number;
}
