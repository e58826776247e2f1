/**
 * Skill libraries: SKILL.md folders, JSONL (optionally gzip) libraries and in-memory records, read
 * into validated {@link Skill} records with per-skill failures.
 */
export { loadSkills } from "./load.js";
export { parseSkillMarkdown, skillContentHash } from "./parse.js";
export {
  DEFAULT_MAX_BODY_BYTES,
  type LoadSkillsOptions,
  type LoadSkillsResult,
  type ParseSkillOptions,
  type Skill,
  type SkillFailure,
  type SkillInput,
} from "./types.js";
