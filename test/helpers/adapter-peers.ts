// The parent's side of test/helpers/adapter-peers-child.mjs, shared by the tests that load the built
// adapters with their framework hidden (adapters-peer-missing) or outside the peer range
// (adapters-peer-out-of-range).
import { join } from "node:path";
import { expect } from "vitest";
import { repoRoot } from "./paths.js";
import { runNode } from "./run.js";

/** An error as the child describes it. */
export interface Described {
  name?: string;
  code?: string;
  message?: string;
}

/** The child's report: the import, then each adapter function's call, "ok" or the error it threw. */
export interface ChildOut {
  imported: "ok" | Described;
  calls: Record<string, "ok" | Described>;
}

/**
 * The child's report for `adapter`'s build `format` (dist/adapters), with `preload`
 * (a test/helpers module: hide-packages.mjs or fake-packages.mjs) loaded first and `env` added to the
 * environment. Expects the child to exit 0 and the import to succeed.
 */
export async function loadAdapter(adapter: string, format: "esm" | "cjs", preload: string, env: Record<string, string>): Promise<ChildOut> {
  const file = join(repoRoot, "dist", "adapters", `${adapter}.${format === "esm" ? "js" : "cjs"}`);
  const args = ["--import", join(repoRoot, "test", "helpers", preload), join(repoRoot, "test", "helpers", "adapter-peers-child.mjs"), format, file];
  const r = await runNode(args, { cwd: repoRoot, env: { ...process.env, ...env }, timeoutMs: 60_000 });
  expect(r.code, r.err).toBe(0);
  const out = JSON.parse(r.out) as ChildOut;
  expect(out.imported).toBe("ok");
  return out;
}

/** A regular expression matching exactly `s`. */
export const exact = (s: string): RegExp => new RegExp(`^${s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}$`);
