// The built adapters (dist/adapters/*.js and *.cjs) in a process where their framework is not
// installed (test/helpers/hide-packages.mjs hides it from import() and require()): the import
// succeeds, what needs no framework works, and the first call that needs the missing package throws a
// GavelError DEPENDENCY_MISSING that names the entry, the package and what to install.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { exact, loadAdapter, type ChildOut, type Described } from "../helpers/adapter-peers.js";
import { repoRoot } from "../helpers/paths.js";

/** The child's report for `adapter`'s build `format`, with `hide` hidden. */
function load(adapter: string, format: "esm" | "cjs", hide: string): Promise<ChildOut> {
  return loadAdapter(adapter, format, "hide-packages.mjs", { GAVEL_HIDE_PACKAGES: hide });
}

/** The DEPENDENCY_MISSING a call threw. */
function missing(message: string | RegExp): Described {
  return { name: "GavelError", code: "DEPENDENCY_MISSING", message: expect.stringMatching(message) as unknown as string };
}


describe.skipIf(!existsSync(join(repoRoot, "dist", "adapters", "ai-sdk.cjs")))("the adapters without their framework (after the build)", () => {
  for (const format of ["esm", "cjs"] as const) {
    it(`gavel-router/ai-sdk (${format}) without ai: prepareStep works, the tools throw DEPENDENCY_MISSING naming ai`, async () => {
      const out = await load("ai-sdk", format, "ai,zod");
      expect(out.calls).toEqual({
        gavelPrepareStep: "ok",
        gavelLoadSkillTool: missing(exact("gavel-router/ai-sdk needs ai (for gavelLoadSkillTool), an optional peer dependency that is not installed: npm install ai")),
        gavelSearchSkillsTool: missing(exact("gavel-router/ai-sdk needs ai (for gavelSearchSkillsTool), an optional peer dependency that is not installed: npm install ai")),
        gavelSkills: missing(/needs ai \(for gavelLoadSkillTool\)/),
        gavelSkillTools: missing(/needs ai \(for gavelSearchSkillsTool\)/),
      });
    }, 60_000);

    it(`gavel-router/ai-sdk (${format}) without zod: the tools name zod`, async () => {
      const out = await load("ai-sdk", format, "zod");
      // ai's own build may import zod (the ES module build of ai 7 does): then it is ai that cannot load
      expect(out.calls.gavelLoadSkillTool).toEqual(
        missing(/^gavel-router\/ai-sdk needs (zod \(for gavelLoadSkillTool\), an optional peer dependency that is not installed|ai \(for gavelLoadSkillTool\), which cannot be imported: zod, a package it needs, is not installed): npm install zod$/),
      );
    }, 60_000);

    it(`gavel-router/langchain (${format}) without langchain: the middleware names it, the retriever and tools (@langchain/core) work`, async () => {
      const out = await load("langchain", format, "langchain");
      expect(out.calls).toEqual({
        gavelSkillMiddleware: missing(exact("gavel-router/langchain needs langchain (for gavelSkillMiddleware), an optional peer dependency that is not installed: npm install langchain")),
        GavelSkillRetriever: "ok",
        gavelSearchSkillsTool: "ok",
        gavelLoadSkillTool: "ok",
      });
    }, 60_000);

    it(`gavel-router/langchain (${format}) without @langchain/core: everything names @langchain/core`, async () => {
      const out = await load("langchain", format, "@langchain/core");
      expect(out.calls).toEqual({
        gavelSkillMiddleware: missing(/^gavel-router\/langchain needs langchain \(for gavelSkillMiddleware\), which cannot be imported: @langchain\/core, a package it needs, is not installed: npm install @langchain\/core$/),
        GavelSkillRetriever: missing(exact("gavel-router/langchain needs @langchain/core (for GavelSkillRetriever), an optional peer dependency that is not installed: npm install @langchain/core")),
        gavelSearchSkillsTool: missing(/needs @langchain\/core \(for gavelSearchSkillsTool\).*npm install @langchain\/core$/),
        gavelLoadSkillTool: missing(/needs @langchain\/core \(for gavelLoadSkillTool\).*npm install @langchain\/core$/),
      });
    }, 60_000);

    it(`gavel-router/mastra (${format}) without @mastra/core: the processor works, the tools name @mastra/core`, async () => {
      const out = await load("mastra", format, "@mastra/core");
      expect(out.calls).toEqual({
        gavelSkillProcessor: "ok",
        gavelSkillTools: missing(exact("gavel-router/mastra needs @mastra/core (for gavelSkillTools), an optional peer dependency that is not installed: npm install @mastra/core")),
      });
    }, 60_000);
  }

  it("with every framework installed, every call of both builds works", async () => {
    for (const adapter of ["ai-sdk", "langchain", "mastra"]) {
      for (const format of ["esm", "cjs"] as const) {
        const out = await load(adapter, format, "");
        expect(Object.values(out.calls).every((c) => c === "ok"), JSON.stringify(out)).toBe(true);
      }
    }
  }, 120_000);
});
