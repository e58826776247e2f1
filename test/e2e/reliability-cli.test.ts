// Issue 17, "data lost by a read-only-looking command": with manifest.json missing, `gavel list -b
// BANK` re-initialised the bank and truncated keys.bin to 0 bytes, with exit code 0, and a mistyped
// `-b` silently created a bank. Now read-only commands never create a bank, and no command
// re-initialises one whose manifest is gone. The CLI runs from source (vite-node), as a user runs it.
import { existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BankStore, bankHeaderFor } from "../../src/bank/index.js";
import { Model } from "../../src/model/Model.js";
import { modelFingerprint } from "../../src/model/fingerprint.js";
import { Projections } from "../../src/projections/projections.js";
import { repoRoot } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { run } from "../helpers/run.js";

const root = mkdtempSync(join(tmpdir(), "gavel-rel-cli-"));
const proj = join(root, "p.gguf");
const bank = join(root, "bank");
afterAll(() => rmSync(root, { recursive: true, force: true }));

function gavel(...args: string[]) {
  return run(join(repoRoot, "node_modules", ".bin", "vite-node"), [join(repoRoot, "src", "cli", "gavel.ts"), "--", ...args], {
    cwd: repoRoot,
    timeoutMs: 120_000,
    env: { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" },
  });
}
const common = (b: string) => ["--model", TINY_LLAMA_PATH, "--projections", proj, "--bank", b, "--context", "256", "--skill-budget", "64"];

beforeAll(async () => {
  const model = await Model.load(TINY_LLAMA_PATH, { contextSize: 64, threads: 1 });
  const p = await Projections.random(await modelFingerprint(model), { dim: 16 });
  await model.dispose();
  await p.save(proj);
  // a committed bank of one skill, then its manifest is lost
  const store = await BankStore.open(bank, bankHeaderFor(p), { create: true });
  await store.put({ id: "a", name: "a", description: "d", contentHash: "ab".repeat(32), source: "t", disableModelInvocation: false, keyTokens: [1, 2], renderTokens: 2 }, new Float32Array(32).fill(0.5));
  await store.commit();
  await store.close();
  unlinkSync(join(bank, "manifest.json"));
}, 120_000);

describe("read-only commands never create or re-initialise a bank", () => {
  it("list and install on a bank whose manifest is gone: CORRUPT_FILE with a recovery hint, keys.bin untouched", async () => {
    const before = readFileSync(join(bank, "keys.bin"));
    expect(before.byteLength).toBe(128);
    for (const args of [["list"], ["route", "a task"], ["install", join(root, "nothing")]]) {
      const r = await gavel(...args, ...common(bank));
      expect(r.code, `${args[0]}: ${r.err}`).toBe(1);
      expect(r.err).toMatch(/holds keys\.bin \(128 bytes\) but no manifest\.json.*nothing was changed.*\[CORRUPT_FILE\]/);
      expect(Buffer.compare(readFileSync(join(bank, "keys.bin")), before)).toBe(0);
      expect(readdirSync(bank)).toEqual(["keys.bin"]);
    }
  });

  it("a mistyped --bank is FILE_NOT_FOUND for list, route and glance, and nothing is created", async () => {
    const typo = join(root, "bnak");
    for (const args of [["list"], ["route", "a task"], ["glance", "a task"]]) {
      const r = await gavel(...args, ...common(typo));
      expect(r.code, r.err).toBe(1);
      expect(r.err).toMatch(/no bank at .*bnak.*gavel install.*\[FILE_NOT_FOUND\]/);
      expect(existsSync(typo)).toBe(false);
    }
    // an existing folder that holds no bank: FILE_NOT_FOUND and the folder stays empty
    const empty = join(root, "empty");
    mkdirSync(empty);
    const r = await gavel("list", ...common(empty));
    expect(r.err).toMatch(/\[FILE_NOT_FOUND\]/);
    expect(readdirSync(empty)).toEqual([]);
  });
});
