// The route's glance through the bank's key IVF (GAVEL_KEY_IVF, src/route/glance-index-use.ts) over the
// 24 example skills with the embedded pair: the index is trained at install and written into the bank
// folder; the glance through it ranks the same skills as the exact glance, its top 20 agreeing; another
// router reads the file back without rewriting it, and the index follows an uninstall.
import { describe, expect, it } from "vitest";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { KEY_IVF_FILE } from "../../src/route/glance-index-use.js";
import { repoRoot } from "../helpers/paths.js";
import { withEnv } from "../helpers/env.js";
import { suiteRouter } from "../helpers/model-suite.js";

const tasks = (JSON.parse(readFileSync(join(repoRoot, "examples", "everyday-tasks.json"), "utf8")) as { task: string }[]).map((t) => t.task).slice(0, 5);

function withKeyIvf<T>(mode: "on" | "off", f: () => Promise<T>): Promise<T> {
  return withEnv({ GAVEL_KEY_IVF: mode }, f);
}

describe("the key IVF in the route", () => {
  const fx = suiteRouter("gavel-kivf-route-", async () => {
    await withKeyIvf("on", async () => expect((await fx.router.install(join(repoRoot, "examples", "skills"))).failed).toEqual([]));
  });

  it("is trained at install and written into the bank folder", () => {
    expect(existsSync(join(fx.bankDir, KEY_IVF_FILE))).toBe(true);
  });

  it("ranks the same skills as the exact glance, its top 20 agreeing", async () => {
    let agree = 0;
    for (const t of tasks) {
      const exact = await withKeyIvf("off", () => fx.router.glance(t, { topK: 24 }));
      const ivf = await withKeyIvf("on", () => fx.router.glance(t, { topK: 24 }));
      expect(ivf.map((h) => h.skill).sort()).toEqual(exact.map((h) => h.skill).sort());
      const top = new Set(ivf.slice(0, 20).map((h) => h.skill));
      agree += exact.slice(0, 20).filter((h) => top.has(h.skill)).length / 20;
    }
    expect(agree / tasks.length).toBeGreaterThanOrEqual(0.9);
  });

  it("warm() codes every list, and the glance after it is the same; nothing without the index", async () => {
    const before = await withKeyIvf("on", () => fx.router.glance(tasks[1], { topK: 24 }));
    const w = await withKeyIvf("on", () => fx.router.warm());
    expect(w.keyIvf).toBe(true);
    const keys = fx.router.stats().keys;
    // one row over every list: every key is scored in int8 (its seed list's twice: once for the
    // floor, once with the bound), and the codes are held
    expect(w.coded).toBeGreaterThanOrEqual(keys);
    expect(w.coded).toBeLessThan(2 * keys);
    expect(w.bytes).toBeGreaterThan(w.coded * fx.router.projections.dim);
    const after = await withKeyIvf("on", () => fx.router.glance(tasks[1], { topK: 24 }));
    expect(after.map((h) => [h.skill, h.g])).toEqual(before.map((h) => [h.skill, h.g]));
    // the float32 scan alone: the index opened, nothing coded
    expect(await withEnv({ GAVEL_KEY_IVF: "on", GAVEL_KEY_IVF_I8: "off" }, () => fx.router.warm())).toMatchObject({ keyIvf: true, coded: 0 });
    // a glance that does not read the index: nothing to warm
    expect(await withKeyIvf("off", () => fx.router.warm())).toEqual({ keyIvf: false, coded: 0, codeMs: 0, bytes: 0 });
  });

  it("is read back from its file by another router, and follows an uninstall", async () => {
    const path = join(fx.bankDir, KEY_IVF_FILE);
    const written = statSync(path).mtimeMs;
    await fx.router.close();
    fx.router = await fx.open();
    const first = await withKeyIvf("on", () => fx.router.glance(tasks[0], { topK: 24 }));
    expect(statSync(path).mtimeMs).toBe(written); // loaded as it was: nothing to rewrite
    expect(await fx.router.uninstall(first[0].skill)).toBe(true);
    const after = await withKeyIvf("on", () => fx.router.glance(tasks[0], { topK: 24 }));
    expect(after.map((h) => h.skill)).not.toContain(first[0].skill);
    expect(after.length).toBe(23);
  });
});

// GAVEL_KEY_IVF=auto (the default) reads only an index an install wrote: a route never trains one.
describe("the key IVF under auto", () => {
  const auto = { GAVEL_KEY_IVF: "auto", GAVEL_KEY_IVF_FROM: "1" };
  const fx = suiteRouter("gavel-kivf-auto-", async () => {
    await withKeyIvf("off", async () => expect((await fx.router.install(join(repoRoot, "examples", "skills"))).failed).toEqual([]));
  });

  it("glances exactly, and trains nothing, while the bank holds no index", async () => {
    const path = join(fx.bankDir, KEY_IVF_FILE);
    expect(existsSync(path)).toBe(false);
    for (const t of tasks.slice(0, 2)) {
      const exact = await withKeyIvf("off", () => fx.router.glance(t, { topK: 24 }));
      const got = await withEnv(auto, () => fx.router.glance(t, { topK: 24 }));
      expect(got.map((h) => [h.skill, h.g])).toEqual(exact.map((h) => [h.skill, h.g]));
    }
    expect(existsSync(path)).toBe(false);
  });

  it("reads the index an install wrote", async () => {
    const path = join(fx.bankDir, KEY_IVF_FILE);
    const removed = (await withKeyIvf("off", () => fx.router.glance(tasks[0], { topK: 24 })))[0].skill;
    await withEnv(auto, async () => {
      expect(await fx.router.uninstall(removed)).toBe(true);
      await fx.router.install(join(repoRoot, "examples", "skills"));
    });
    expect(existsSync(path)).toBe(true);
    let differs = 0;
    for (const t of tasks) {
      const viaFile = await withEnv(auto, () => fx.router.glance(t, { topK: 24 }));
      const on = await withKeyIvf("on", () => fx.router.glance(t, { topK: 24 }));
      const exact = await withKeyIvf("off", () => fx.router.glance(t, { topK: 24 }));
      expect(viaFile.map((h) => [h.skill, h.g])).toEqual(on.map((h) => [h.skill, h.g]));
      if (JSON.stringify(viaFile.map((h) => [h.skill, h.g])) !== JSON.stringify(exact.map((h) => [h.skill, h.g]))) differs++;
    }
    // the probe (1/16 of the lists) misses some rows' best keys: the glance read the index, not every key
    expect(differs).toBeGreaterThan(0);
  });
});

// An install whose every skill fails, into a bank without a key row, returns its report with either
// index forced on (it rejected with "the bank holds no key to train the key IVF on", the report lost).
describe("an install with nothing to index", () => {
  const fx = suiteRouter("gavel-kivf-empty-");

  it("returns the report of its failures under GAVEL_KEY_IVF=on and GAVEL_GLANCE_INDEX=on", async () => {
    for (const env of [{ GAVEL_KEY_IVF: "on" }, { GAVEL_GLANCE_INDEX: "on" }]) {
      const report = await withEnv(env, () => fx.router.install([{ id: "broken", name: "", description: "", body: "" }]));
      expect(report.installed, JSON.stringify(env)).toEqual([]);
      expect(report.failed.map((f) => f.error.code), JSON.stringify(env)).toEqual(["SKILL_INVALID"]);
      expect(existsSync(join(fx.bankDir, KEY_IVF_FILE))).toBe(false);
    }
  });
});

// A skill with disable-model-invocation (routable by no glance) no longer keeps the route off the key
// IVF: the glance reads the index over the routable skills, the flagged one taking no part, and ranks
// the same skills as the exact glance; warm() opens the index (it did nothing while any skill was
// flagged).
describe("the key IVF beside a disable-model-invocation skill", () => {
  const fx = suiteRouter("gavel-kivf-flagged-", async () => {
    await withKeyIvf("on", async () => {
      expect((await fx.router.install(join(repoRoot, "examples", "skills"))).failed).toEqual([]);
      const flagged = { id: "manual-deploy", name: "manual-deploy", description: "Deploy the docker image to production by hand; run only when asked.", body: "Build the Dockerfile, push the image, then deploy it.", disableModelInvocation: true };
      expect((await fx.router.install([flagged])).failed).toEqual([]);
    });
  });

  it("reads the index over the routable skills, the flagged one taking no part", async () => {
    expect((await withKeyIvf("on", () => fx.router.warm())).keyIvf).toBe(true);
    let agree = 0;
    for (const t of tasks) {
      const exact = await withKeyIvf("off", () => fx.router.glance(t, { topK: 30 }));
      const ivf = await withKeyIvf("on", () => fx.router.glance(t, { topK: 30 }));
      expect(ivf.map((h) => h.skill)).not.toContain("manual-deploy");
      expect(ivf.map((h) => h.skill).sort()).toEqual(exact.map((h) => h.skill).sort());
      const top = new Set(ivf.slice(0, 20).map((h) => h.skill));
      agree += exact.slice(0, 20).filter((h) => top.has(h.skill)).length / 20;
    }
    expect(agree / tasks.length).toBeGreaterThanOrEqual(0.9);
  });
});
