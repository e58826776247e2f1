// The built adapters (dist/adapters/*.js and *.cjs) in a process where a framework is installed but
// outside gavel-router's peer range: a release without an export the adapter calls (langchain 0.3 has
// no createMiddleware). test/helpers/fake-packages.mjs resolves the package from a fake folder here
// (its package.json and an index exporting only something else), for import() and require() alike.
// The import succeeds, and the first call that needs the export throws a GavelError
// DEPENDENCY_MISSING naming the package, the export, the installed version and the peer range; the
// ES module build threw a raw `TypeError: createMiddleware is not a function` there (a dynamic
// import checks no named exports), as did the CommonJS build.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { exact, loadAdapter, type ChildOut, type Described } from "../helpers/adapter-peers.js";
import { repoRoot } from "../helpers/paths.js";
import { tempDirs } from "../helpers/temp-dirs.js";

const tempDir = tempDirs("gavel-peer-range-");
let root: string;

/** A fake `pkg`@`version` in `root`/node_modules: each subpath ("." and others) exports only `somethingElse`. */
function fakePackage(pkg: string, version: string, subpaths: readonly string[] = ["."]): void {
  const dir = join(root, "node_modules", pkg);
  mkdirSync(dir, { recursive: true });
  const exports: Record<string, unknown> = { "./package.json": "./package.json" };
  for (const sub of subpaths) {
    const base = sub === "." ? "index" : sub.slice(2).replace(/\//g, "-");
    writeFileSync(join(dir, `${base}.js`), "export const somethingElse = 1;\n");
    writeFileSync(join(dir, `${base}.cjs`), "exports.somethingElse = 1;\n");
    exports[sub] = { import: `./${base}.js`, require: `./${base}.cjs` };
  }
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: pkg, version, type: "module", exports }));
}

beforeAll(() => {
  root = tempDir();
  fakePackage("langchain", "0.3.0");
  fakePackage("ai", "4.3.16");
  fakePackage("@mastra/core", "0.10.0", [".", "./tools"]);
});

/** The child's report for `adapter`'s build `format`, with `fake` resolved from the fakes. */
function load(adapter: string, format: "esm" | "cjs", fake: string): Promise<ChildOut> {
  return loadAdapter(adapter, format, "fake-packages.mjs", { GAVEL_FAKE_PACKAGES: fake, GAVEL_FAKE_PACKAGES_ROOT: root });
}

const RANGE = "install a release within gavel-router's peer range (see package.json peerDependencies)";
/** The DEPENDENCY_MISSING a call threw, with exactly `message`. */
function missing(message: string): Described {
  return { name: "GavelError", code: "DEPENDENCY_MISSING", message: expect.stringMatching(exact(message)) as unknown as string };
}

describe.skipIf(!existsSync(join(repoRoot, "dist", "adapters", "ai-sdk.cjs")))("the adapters with a framework outside the peer range (after the build)", () => {
  for (const format of ["esm", "cjs"] as const) {
    it(`gavel-router/langchain (${format}) with langchain 0.3 (no createMiddleware): the middleware names it, the rest works`, async () => {
      const out = await load("langchain", format, "langchain");
      expect(out.calls).toEqual({
        gavelSkillMiddleware: missing(`gavel-router/langchain needs langchain (for gavelSkillMiddleware); the installed one (0.3.0) has no export createMiddleware: ${RANGE}: npm install langchain`),
        GavelSkillRetriever: "ok",
        gavelSearchSkillsTool: "ok",
        gavelLoadSkillTool: "ok",
      });
    }, 60_000);

    it(`gavel-router/ai-sdk (${format}) with an ai without tool: prepareStep works, the tools name ai's tool`, async () => {
      const out = await load("ai-sdk", format, "ai");
      expect(out.calls).toEqual({
        gavelPrepareStep: "ok",
        gavelLoadSkillTool: missing(`gavel-router/ai-sdk needs ai (for gavelLoadSkillTool); the installed one (4.3.16) has no export tool: ${RANGE}: npm install ai`),
        gavelSearchSkillsTool: missing(`gavel-router/ai-sdk needs ai (for gavelSearchSkillsTool); the installed one (4.3.16) has no export tool: ${RANGE}: npm install ai`),
        gavelSkills: missing(`gavel-router/ai-sdk needs ai (for gavelLoadSkillTool); the installed one (4.3.16) has no export tool: ${RANGE}: npm install ai`),
        gavelSkillTools: missing(`gavel-router/ai-sdk needs ai (for gavelSearchSkillsTool); the installed one (4.3.16) has no export tool: ${RANGE}: npm install ai`),
      });
    }, 60_000);

    it(`gavel-router/mastra (${format}) with an @mastra/core whose tools lack createTool: the processor works, the tools name the subpath`, async () => {
      const out = await load("mastra", format, "@mastra/core");
      expect(out.calls).toEqual({
        gavelSkillProcessor: "ok",
        gavelSkillTools: missing(`gavel-router/mastra needs @mastra/core (for gavelSkillTools); the installed one (0.10.0) has no export createTool in @mastra/core/tools: ${RANGE}: npm install @mastra/core`),
      });
    }, 60_000);
  }
});
