import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** vite-node's command-line entry (its package.json's bin): runs a TypeScript file in a child node process. */
export const viteNodeCli = join(repoRoot, "node_modules", "vite-node",
  (JSON.parse(readFileSync(join(repoRoot, "node_modules", "vite-node", "package.json"), "utf8")) as { bin: Record<string, string> }).bin["vite-node"]);

/**
 * The shared data next to the checkout (`../shared`: the stories260K model, the MIT skills library,
 * SWE-Skills-Bench). It is not part of the repository: a plain clone has none, and the tests that
 * need it skip (see {@link needsShared}). GAVEL_TEST_SHARED points a worktree elsewhere at it.
 */
export const sharedDir = process.env.GAVEL_TEST_SHARED || join(repoRoot, "..", "shared");
export const storiesPath = join(sharedDir, "models", "stories260Ktok512.gguf");

/** The shared files the tests use, by what they are, relative to {@link sharedDir}. */
export const SHARED = {
  stories: "models/stories260Ktok512.gguf",
  mit: "data/skills-mit.jsonl.gz",
  bench: "data/swe-skills-bench",
  benchSkills: "data/swe-skills-bench/skills.jsonl",
  benchTasks: "data/swe-skills-bench/tasks.jsonl",
} as const;

/** True when every one of `rel` (paths under {@link sharedDir}) exists. */
export function hasShared(...rel: string[]): boolean {
  return rel.every((r) => existsSync(join(sharedDir, r)));
}

const announced = new Set<string>();

/**
 * The skip condition of a test file that needs shared data: true (skip) when one of `rel` is absent,
 * after printing one line that names what is missing. `npm run test:full` (GAVEL_TEST_FULL=1)
 * fails instead of skipping.
 *
 * @example describe.skipIf(needsShared("stories260K model for real-model mechanics", SHARED.stories))("...", ...)
 */
export function needsShared(why: string, ...rel: string[]): boolean {
  const missing = rel.filter((r) => !existsSync(join(sharedDir, r)));
  if (missing.length === 0) return false;
  const line = `needs ${missing.map((m) => join(sharedDir, m)).join(", ")} (${why})`;
  if (process.env.GAVEL_TEST_FULL === "1") throw new Error(`GAVEL_TEST_FULL=1 but the shared data is absent: ${line}`);
  if (!announced.has(line)) {
    announced.add(line);
    console.warn(`[skip] ${line}`);
  }
  return true;
}

/** Whether a user other than the owner can reach `path` (every folder above it lets others through). */
export function othersCanReach(path: string): boolean {
  for (let d = path; ; d = dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return false;
    if (dirname(d) === d) return true;
  }
}
