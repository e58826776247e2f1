// Issue 16: gavel-router and node-llama-cpp in one process, in either order, with node-llama-cpp
// 3.21.1 (the dev dependency) and 3.22.x (the alias node-llama-cpp-3-22). Our addon carries its own
// llama.cpp/ggml with hidden symbols, so neither library binds to the other's ggml: each child does
// real work in both and must exit 0 with the results of the runs that loaded one library alone.
// (Before the fix, gavel first then node-llama-cpp 3.22 died: "symbol lookup error: …
// libllama.v0.5.0.so: undefined symbol: ggml_prec_set_acc", exit 127.)
// GAVEL_TEST_COEXIST_ADDON=path runs gavel's side with that addon instead of the package's (the CUDA
// build on the GPU machine: `GAVEL_TEST_COEXIST_ADDON=$(cat ~/gavel/addon-path)`), so the same checks
// hold in a CUDA process: static llama.cpp, ggml and CUDA runtime, no libggml/libllama mapped.
import { describe, expect, it } from "vitest";
import { join } from "node:path";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { repoRoot } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { runNode } from "../helpers/run.js";

const child = join(repoRoot, "test", "helpers", "coexist-child.mjs");

interface GavelResult {
  tokens: number[];
  layer1: string;
  last: string;
  sample: number[];
}
interface NlcResult {
  version: string;
  tokens: number[];
  greedy: number[];
}

async function run(steps: string, nlcName: string): Promise<{ gavel?: GavelResult; nlc?: NlcResult; libs: string[] }> {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_LLAMA_CPP_SKIP_DOWNLOAD: "true" };
  delete env.GAVEL_ADDON;
  if (process.env.GAVEL_TEST_COEXIST_ADDON) env.GAVEL_ADDON = process.env.GAVEL_TEST_COEXIST_ADDON;
  const r = await runNode([child, steps, nlcName, TINY_LLAMA_PATH], { env, timeoutMs: 120_000 });
  const what = `${steps} with ${nlcName}: exit ${r.code}\n${r.err.slice(-3000)}`;
  expect(r.err, what).not.toMatch(/symbol lookup error|undefined symbol/);
  expect(r.code, what).toBe(0);
  const line = r.out.trim().split("\n").pop() ?? "";
  return JSON.parse(line) as { gavel?: GavelResult; nlc?: NlcResult; libs: string[] };
}

/** The folder of the prebuilt llama.cpp libraries that node-llama-cpp package `name` loads. */
function nlcBinaries(name: string): string {
  const nested = join(repoRoot, "node_modules", name, "node_modules", "@node-llama-cpp", "linux-x64");
  return realpathSync(existsSync(nested) ? nested : join(repoRoot, "node_modules", "@node-llama-cpp", "linux-x64"));
}

const versions = [
  { name: "node-llama-cpp", expected: /^3\.21\.1$/ },
  { name: "node-llama-cpp-3-22", expected: /^3\.22\.\d+$/ },
];

describe("gavel-router beside node-llama-cpp in one process", () => {
  it.each(versions)("works in both orders with $name", async ({ name, expected }) => {
    // alone: the reference results (gavel's hidden states are computed with one thread, so bit-exact)
    const alone = await run("gavel", name);
    const nlcAlone = await run("nlc", name);
    expect(nlcAlone.nlc!.version).toMatch(expected);
    expect(alone.gavel!.tokens.length).toBeGreaterThan(10);
    expect(nlcAlone.nlc!.greedy).toHaveLength(6);
    // the tokenizers agree (node-llama-cpp adds no BOS here; gavel was asked to)
    expect(alone.gavel!.tokens.slice(-nlcAlone.nlc!.tokens.length)).toEqual(nlcAlone.nlc!.tokens);
    const together: Record<string, string[]> = {};
    for (const steps of ["gavel,nlc", "nlc,gavel"]) {
      const both = await run(steps, name);
      expect(both.gavel, steps).toEqual(alone.gavel);
      expect(both.nlc, steps).toEqual(nlcAlone.nlc);
      together[steps] = both.libs;
    }
    // our addon carries its own llama.cpp: gavel alone maps no libggml / libllama at all, and with both
    // loaded the only llama.cpp libraries mapped are node-llama-cpp's own, those it maps alone (before
    // issue 16's fix, our addon mapped node-llama-cpp 3.21.1's libraries beside 3.22's)
    expect(alone.libs).toEqual([]);
    const theirs = nlcBinaries(name);
    expect(nlcAlone.libs.length).toBeGreaterThan(0);
    for (const lib of nlcAlone.libs) expect(lib.startsWith(theirs + "/"), `${lib} outside ${theirs}`).toBe(true);
    for (const [steps, libs] of Object.entries(together)) expect(libs, steps).toEqual(nlcAlone.libs);
  }, 300_000);

  it("tests two different node-llama-cpp versions", () => {
    const v = (n: string) => JSON.parse(readFileSync(join(repoRoot, "node_modules", n, "package.json"), "utf8")).version as string;
    expect(v("node-llama-cpp")).not.toBe(v("node-llama-cpp-3-22"));
  });
});
