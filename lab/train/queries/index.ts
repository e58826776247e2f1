/**
 * Pseudo-queries for self-supervised training: the generators, the mixer and the task
 * overlap screen. docs/TRAINING.md describes each kind with an example.
 *
 * @module
 */
export {
  QUERY_KINDS, GENERATORS, MAX_BODY_OFFSET, clozeQueries, compositeQueries, descriptionQueries, headingQueries, pick, triggerQueries,
  type PseudoQuery, type QueryGenerator, type QueryKind, type QuerySkill,
} from "./generators.js";
export { DEFAULT_MIX, candidateQueries, hash32, mixQueries, parseQueryKinds, checkQueryKinds, type MixOptions } from "./mixer.js";
export { TaskOverlap } from "./overlap.js";
export { sections, sentenceSpans, splitLines, words, type Line, type Section, type SourceSpan } from "./text.js";
