// `gavel route` with the embedded default pair over examples/skills (issue 13): the abstention and
// its reason, the verdict's state, --no-abstain, --abstain and --no-verdict, as a user runs them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "../helpers/paths.js";
import { run } from "../helpers/run.js";
import { offDomainPrompts } from "../helpers/off-domain-prompts.js";

const cli = join(repoRoot, "dist", "cli", "gavel.js");
const offDomain = "Write a haiku about autumn leaves.";
const inDomain = "Turn the 400 product photos in ./photos into 256 pixel square thumbnails in WebP.";

describe("gavel route with the embedded default pair", () => {
  let dir: string;
  const gavel = (...args: string[]) =>
    run(process.execPath, [cli, ...args, "--bank", join(dir, "bank"), "--threads", "1"], {
      timeoutMs: 300_000,
      env: { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "" },
    });
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-route-abstain-"));
    const inst = await gavel("install", join(repoRoot, "examples", "skills"));
    expect(inst.code, inst.err).toBe(0);
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("gavel info on the bank says the embedded pair built it", async () => {
    const info = (...args: string[]) => run(process.execPath, [cli, "info", ...args], { timeoutMs: 120_000 });
    const b = await info(join(dir, "bank"));
    expect(b.code, b.err).toBe(0);
    const bank = JSON.parse(b.out) as { kind: string; skills: number; builtWithEmbeddedPair: boolean; projectionsHash: string };
    const listed = JSON.parse((await gavel("list", "--json")).out) as unknown[];
    expect(bank).toMatchObject({ kind: "bank", skills: listed.length, builtWithEmbeddedPair: true });
    const p = JSON.parse((await info(join(repoRoot, "models", "gavel-mini.projections.gguf"))).out) as { keysHash: string };
    expect(bank.projectionsHash).toBe(p.keysHash);
  });

  it("declines an off-domain prompt and says why; routes an in-domain one", async () => {
    const off = await gavel("route", offDomain);
    expect(off.code, off.err).toBe(0);
    // the re-ranker applies at every library size: its R is a column
    expect(off.out).toMatch(/^skill\s+g\s+L\s+V\s+B\s+S\s+R$/m);
    // a route that abstains skips the verdict (it loads nothing), and says so; L and V print as "–"
    expect(off.out).toMatch(/^verdict: skipped \(the route abstained: it loads nothing; R, the re-ranker's cheap stage, orders the shortlist\)$/m);
    expect(off.out).toMatch(/^\S+\s+[\d.]+\s+–\s+–\s+-?[\d.]+\s+-?[\d.]+\s+-?[\d.]+$/m);
    expect(off.out).toMatch(/^abstention: p\(off-domain\) [\d.]+ is above the calibrated [\d.]+ \(logit .*\), from /m);
    expect(off.out).toMatch(/^abstained: no installed skill serves this task; load nothing$/m);
    expect(off.out).toMatch(/^\(a task for an agent routes best stated concretely: what to do, to what, and the tools/m);
    expect(off.out).not.toMatch(/^chosen:/m);
    const on = await gavel("route", inDomain);
    expect(on.out).toMatch(/^abstention: p\(off-domain\) [\d.]+ is at or below the calibrated/m);
    expect(on.out).toMatch(/^chosen: image-resizing$/m);
    expect(on.out).not.toMatch(/routes best stated concretely/);
    expect(on.out).toMatch(/^verdict: skipped \(the re-ranker's cheap stage picks, R: /m);
    expect(on.out).toMatch(/^image-resizing\s+[\d.]+\s+–\s+–\s+-?[\d.]+\s+-?[\d.]+\s+-?[\d.]+$/m);
    const json = JSON.parse((await gavel("route", offDomain, "--json")).out) as { abstained: boolean; skill: string | null; verdict: string; abstention: { reason: string } };
    expect(json).toMatchObject({ abstained: true, skill: null, verdict: "skipped" });
    expect(json.abstention.reason).toMatch(/is above the calibrated/);
  });

  it("--no-abstain, --abstain and --no-verdict", async () => {
    const never = await gavel("route", offDomain, "--no-abstain");
    expect(never.code, never.err).toBe(0);
    expect(never.out).not.toMatch(/^abstention:/m);
    expect(never.out).toMatch(/^chosen: \S+$/m);
    const forced = await gavel("route", inDomain, "--abstain");
    expect(forced.out).toMatch(/^abstention: /m);
    const noVerdict = await gavel("route", inDomain, "--no-verdict");
    expect(noVerdict.code, noVerdict.err).toBe(0);
    expect(noVerdict.out).toMatch(/^verdict: off \(L and V not computed; the re-ranker's cheap stage picks, R\)$/m);
    expect(noVerdict.out).toMatch(/verdict off/);
    const both = await gavel("route", offDomain, "--abstain", "--no-abstain");
    expect(both.code).toBe(1);
    expect(both.err).toMatch(/--abstain and --no-abstain contradict each other/);
    const help = await gavel("route", "--help");
    for (const flag of ["--abstain", "--no-abstain", "--no-verdict", "--no-library-cut"]) expect(help.out + help.err).toContain(flag);
  });
});

// Under 125 skills a route also abstains at the library's own cut; --no-library-cut routes by the
// calibrated model alone. Over three example skills the cut declines some of the held-out off-domain
// prompts the model lets through: each such prompt says so, and the flag never adds a decline.
describe("gavel route --no-library-cut over a small library", () => {
  let dir: string;
  const gavel = (...args: string[]) =>
    run(process.execPath, [cli, ...args, "--bank", join(dir, "bank"), "--threads", "1"], {
      timeoutMs: 300_000,
      env: { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_LIBRARY_CUT: "" },
    });
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-route-cut-"));
    for (const s of ["bash-scripting", "readme-writing", "rust-cargo"]) {
      const inst = await gavel("install", join(repoRoot, "examples", "skills", s));
      expect(inst.code, inst.err).toBe(0);
    }
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("the cut only adds declines, each naming the library's cut; the flag turns it off", async () => {
    const prompts = offDomainPrompts(["offhw7", "offhw8"]);
    expect(prompts.length).toBeGreaterThanOrEqual(16);
    let byCut = 0;
    for (const p of prompts) {
      const on = JSON.parse((await gavel("route", p, "--json")).out) as { abstained: boolean; abstention: { reason: string } };
      const off = await gavel("route", p, "--json", "--no-library-cut");
      expect(off.code, off.err).toBe(0);
      const o = JSON.parse(off.out) as { abstained: boolean; abstention: { reason: string } };
      expect(o.abstention.reason).not.toMatch(/this library's own cut/);
      if (o.abstained) expect(on.abstained).toBe(true);
      if (on.abstained && !o.abstained) {
        byCut++;
        expect(on.abstention.reason).toMatch(/; but this library's own cut, logit [−-]?[\d.]+ \(8 of the projections' 120 off-domain reference prompts score under it over these 3 skills\)/);
      }
    }
    expect(byCut).toBeGreaterThan(0);
  }, 600_000);
});
