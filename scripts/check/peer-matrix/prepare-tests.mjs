// Copies one adapter's e2e test (test/e2e/adapters-<adapter>.test.ts) and its router fixture
// (test/helpers/adapter-router.ts) into a scratch project, so that they run against the packed
// gavel-router installed there instead of this repository's src/:
//   ../../src/adapters/<adapter>.js → gavel-router/<adapter>
//   ../../src/index.js              → gavel-router
//   repoRoot (examples/skills)      → the installed package's folder (the tarball ships examples/)
// For AI SDK 5 (`--ai 5`), whose ai/test has MockLanguageModelV2 (provider spec v2) and not V3, the mock's
// class, its usage and its finish reason take the v2 shapes; the assertions are untouched.
// Every replacement must match once, or this exits 1 (the test file changed: update this script).
//
//   node scripts/check/peer-matrix/prepare-tests.mjs <scratch dir> <ai-sdk|langchain|mastra> [--ai 5]
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const [dest, adapter, flag, aiMajor] = process.argv.slice(2);
if (!dest || !["ai-sdk", "langchain", "mastra"].includes(adapter)) {
  console.error("usage: prepare-tests.mjs <scratch dir> <ai-sdk|langchain|mastra> [--ai 5]");
  process.exit(2);
}
const ai = flag === "--ai" ? Number(aiMajor) : undefined;

/** Applies [from, to] pairs, each of which must occur exactly once. */
function rewrite(file, text, pairs) {
  for (const [from, to] of pairs) {
    const n = text.split(from).length - 1;
    if (n !== 1) {
      console.error(`prepare-tests: ${file}: expected one "${from.slice(0, 60)}", found ${n}`);
      process.exit(1);
    }
    text = text.replace(from, to);
  }
  return text;
}

const testName = `adapters-${adapter}.test.ts`;
let test = readFileSync(join(root, "test", "e2e", testName), "utf8");
const testPairs = [[`"../../src/adapters/${adapter}.js"`, `"gavel-router/${adapter}"`]];
if (adapter === "ai-sdk" && ai === 5) {
  testPairs.push(
    [`import { MockLanguageModelV3 } from "ai/test";`, `import { MockLanguageModelV2 as MockLanguageModelV3 } from "ai/test";`],
    [
      `const usage = {\n  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },\n  outputTokens: { total: 5, text: 5, reasoning: undefined },\n};`,
      `const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 }; // provider spec v2 (AI SDK 5)`,
    ],
    [`const finish = (unified: "stop" | "tool-calls") => ({ unified, raw: undefined });`, `const finish = (unified: "stop" | "tool-calls") => unified; // v2: a plain string`],
  );
}
test = rewrite(testName, test, testPairs);

let helper = readFileSync(join(root, "test", "helpers", "adapter-router.ts"), "utf8");
helper = rewrite("adapter-router.ts", helper, [
  [`from "../../src/index.js";`, `from "gavel-router";`],
  [
    `import { repoRoot } from "./paths.js";`,
    `import { createRequire } from "node:module";\nimport { dirname as dirOf } from "node:path";\nconst repoRoot = dirOf(createRequire(import.meta.url).resolve("gavel-router/package.json"));`,
  ],
]);

mkdirSync(join(dest, "test", "e2e"), { recursive: true });
mkdirSync(join(dest, "test", "helpers"), { recursive: true });
writeFileSync(join(dest, "test", "e2e", testName), test);
writeFileSync(join(dest, "test", "helpers", "adapter-router.ts"), helper);
writeFileSync(
  join(dest, "vitest.config.mjs"),
  `export default { test: { include: ["test/**/*.test.ts"], testTimeout: 120000, hookTimeout: 300000, pool: "forks" } };\n`,
);
console.log(`prepared test/e2e/${testName}${ai === 5 ? " (AI SDK 5 mock: MockLanguageModelV2)" : ""}`);
