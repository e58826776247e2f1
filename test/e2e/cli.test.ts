// The gavel command, run as a user would (node dist/cli/gavel.js …).
import { describe, expect, it } from "vitest";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { repoRoot } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { run } from "../helpers/run.js";

const cli = join(repoRoot, "dist", "cli", "gavel.js");
function gavel(...args: string[]) {
  return run(process.execPath, [cli, ...args], { timeoutMs: 300_000, env: { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "" } });
}

describe("gavel CLI", () => {
  it("info prints model.info as JSON", async () => {
    const r = await gavel("info", TINY_LLAMA_PATH);
    expect(r.code, r.err).toBe(0);
    const info = JSON.parse(r.out);
    expect(info).toMatchObject({ architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512 });
  });

  it("fails clearly on bad input", async () => {
    const r = await gavel("info", "/no/such.gguf");
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/FILE_NOT_FOUND/);
    expect((await gavel("frobnicate")).code).toBe(2);
    const noProj = await gavel("route", "a task", "--model", TINY_LLAMA_PATH);
    expect(noProj.code).toBe(1);
    expect(noProj.err).toMatch(/projections/);
    // usage errors (a stray positional, an unknown option, a missing value) exit 2 with one line, no stack
    for (const args of [["projections", "/tmp/x.gguf", "--out", "/tmp/y.gguf"], ["eval", "--frobnicate"], ["eval", "--tasks"]]) {
      const u = await gavel(...args);
      expect(u.code, args.join(" ")).toBe(2);
      expect(u.err).toMatch(/^gavel: .*--help shows the usage\)\n$/);
    }
    // an unknown option of 100 KB (Node's parser quotes it twice): one line of a few hundred bytes
    const huge = `--${"o".repeat(100 * 1024)}`;
    for (const json of [false, true]) {
      const u = await gavel("eval", huge, ...(json ? ["--json"] : []));
      expect(u.code).toBe(2);
      expect(u.err.length).toBeLessThan(1024);
      expect(u.err).toMatch(json ? /"code":"USAGE".*chars cut.*--help shows the usage/ : /^gavel: .*chars cut.*--help shows the usage\)\n$/);
    }
    // `gavel projections FILE` reads a projections file: a missing one is a typed error, not usage
    const missing = await gavel("projections", join(tmpdir(), "gavel-no-such-projections.gguf"));
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/FILE_NOT_FOUND/);
  });

  it("refuses a flag its reading would drop, and option values before loading the model", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-cli-flags-"));
    // --context sizes a model: gavel info reads a projections file, a bank or the addon without one
    const noModel = /^gavel: --context is for a model file: .*; run it without --context \[INVALID_ARGUMENT\]\n$/;
    for (const args of [["--addon"], [DEFAULT_PROJECTIONS], [dir]]) {
      const r = await gavel("info", ...args, "--context", "512");
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.err, args.join(" ")).toMatch(noModel);
    }
    // --dim and --layer checked before the model loads (the model here does not exist)
    const noSuchModel = join(dir, "no-such-model.gguf");
    for (const [flag, value, want] of [["--dim", "0", "a whole number from 1 to 4096"], ["--dim", "5000", "a whole number from 1 to 4096"], ["--layer", "-1", "a non-negative integer"]]) {
      const r = await gavel("projections", "--model", noSuchModel, "--out", join(dir, "p.gguf"), `${flag}=${value}`);
      expect(r.code, `${flag} ${value}`).toBe(1);
      expect(r.err).toBe(`gavel: ${flag} must be ${want}, got ${value} [INVALID_ARGUMENT]\n`);
    }
    // --out naming the model file (here through a link) is refused, and the model is left as it was
    const model = join(dir, "model.gguf");
    copyFileSync(TINY_LLAMA_PATH, model);
    symlinkSync(model, join(dir, "link.gguf"));
    const before = readFileSync(model);
    const same = await gavel("projections", "--model", model, "--out", join(dir, "link.gguf"));
    expect(same.code).toBe(1);
    // one line: no warning before it about a --context the command was not given
    expect(same.err).toMatch(/^gavel: --out .*link\.gguf is the model file: give another path for the projections \[INVALID_ARGUMENT\]\n$/);
    expect(readFileSync(model).equals(before)).toBe(true);
    rmSync(dir, { recursive: true, force: true });
  });

  it("projections → install → glance → route → list → uninstall", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-cli-"));
    const proj = join(dir, "p.gguf");
    const common = ["--model", TINY_LLAMA_PATH, "--projections", proj, "--bank", join(dir, "bank"), "--context", "1024", "--skill-budget", "256"];
    expect((await gavel("projections", "--model", TINY_LLAMA_PATH, "--out", proj, "--dim", "64")).code).toBe(0);
    const inst = await gavel("install", join(repoRoot, "examples", "skills"), "--limit", "5", ...common);
    expect(inst.code, inst.err).toBe(0);
    expect(inst.out).toMatch(/installed 5, unchanged 0, failed 0/);
    expect(inst.err).toMatch(/5\/5/); // progress
    expect(inst.out).toMatch(/stages, summed over skills in flight: render [\d.]+ s, forward [\d.]+ s/);
    const again = await gavel("install", join(repoRoot, "examples", "skills"), "--limit", "5", "--jobs", "3", ...common);
    expect(again.out).toMatch(/installed 0, unchanged 5/);
    const badJobs = await gavel("install", join(repoRoot, "examples", "skills"), "--jobs", "2.5", ...common);
    expect(badJobs.code).toBe(1);
    expect(badJobs.err).toMatch(/--jobs must be a whole number from 1 to 256, got 2\.5 \[INVALID_ARGUMENT\]/);
    const gl = await gavel("glance", "write a dockerfile", "--top", "3", "--json", ...common);
    expect(gl.code, gl.err).toBe(0);
    expect(JSON.parse(gl.out)).toHaveLength(3);
    const rt = await gavel("route", "write a dockerfile", "--explain", ...common);
    expect(rt.code, rt.err).toBe(0);
    expect(rt.out).toMatch(/^skill\s+g\s+L\s+V\s+S/m);
    expect(rt.out).toMatch(/chosen: \S+/);
    const ls = await gavel("list", "--json", ...common);
    const skills = JSON.parse(ls.out) as { id: string }[];
    expect(skills).toHaveLength(5);
    expect((await gavel("uninstall", skills[0].id, ...common)).code).toBe(0);
    const after = JSON.parse((await gavel("list", "--json", ...common)).out) as { id: string; keys: number }[];
    expect(after.map((s) => s.id)).toEqual(skills.slice(1).map((s) => s.id));
    // list reads the manifest alone: this bank, built with stories260K, lists with no model flags (the
    // embedded gavel-mini would not match it), and with a model path that does not exist
    const bank = ["--bank", join(dir, "bank")];
    for (const extra of [[], ["--model", join(dir, "no-such.gguf")]]) {
      const bare = await gavel("list", "--json", ...bank, ...extra);
      expect(bare.code, bare.err).toBe(0);
      expect(JSON.parse(bare.out)).toEqual(after);
    }
    const text = await gavel("list", ...bank);
    expect(text.out).toMatch(new RegExp(`^${after[0].id}\\s+${after[0].keys}\\s+\\d+`, "m"));
    // a route on the same bank without the flags still says which model the bank needs
    const mismatch = await gavel("route", "write a dockerfile", ...bank);
    expect(mismatch.code).toBe(1);
    expect(mismatch.err).toMatch(/\[BANK_MISMATCH\]/);
    // …and how to find out: `gavel info <bank>` reads what built it, with no model flags
    expect(mismatch.err).toContain(`gavel info ${join(dir, "bank")}`);
    const bankInfo = await gavel("info", join(dir, "bank"));
    expect(bankInfo.code, bankInfo.err).toBe(0);
    const bi = JSON.parse(bankInfo.out) as Record<string, unknown> & { model: { nLayer: number } };
    const pi = JSON.parse((await gavel("info", proj)).out) as { keysHash: string; layer: number; dim: number; model: unknown };
    expect(bi).toMatchObject({ kind: "bank", skills: after.length, keys: after.reduce((n, s) => n + s.keys, 0), projectionsHash: pi.keysHash, layer: pi.layer, dim: 64 });
    expect(bi.model).toEqual(pi.model);
    // the embedded pair (gavel-mini) did not build it; null only where the package has no embedded projections
    expect(bi.builtWithEmbeddedPair).toBe(existsSync(join(repoRoot, "models", "gavel-mini.projections.gguf")) ? false : null);
    // uninstall with no model flags: the bank is opened as it was built (stories260K here), no model loaded
    const gone = after[0].id;
    const un = await gavel("uninstall", gone, ...bank);
    expect(un.code, un.err).toBe(0);
    expect(un.out).toMatch(/^removed /m);
    const left = JSON.parse((await gavel("list", "--json", ...bank)).out) as { id: string }[];
    expect(left.map((s) => s.id)).toEqual(after.slice(1).map((s) => s.id));
    expect((await gavel("uninstall", gone, ...bank)).code).toBe(1); // nothing left to remove
    expect((await gavel("check", ...bank)).code).toBe(0);
    // the bank still routes with the pair that built it
    const again2 = await gavel("glance", "write a dockerfile", "--top", "10", "--json", ...common);
    expect(again2.code, again2.err).toBe(0);
    expect((JSON.parse(again2.out) as { skill: string }[]).map((h) => h.skill).sort()).toEqual(left.map((s) => s.id).sort());
    // a pair given is checked as for any command
    const wrongPair = await gavel("uninstall", left[0].id, ...bank, "--projections", join(repoRoot, "models", "gavel-mini.projections.gguf"));
    expect(wrongPair.code).toBe(1);
    expect(wrongPair.err).toMatch(/\[(BANK_MISMATCH|PROJECTIONS_MISMATCH)\]/);
  }, 600_000);
});
