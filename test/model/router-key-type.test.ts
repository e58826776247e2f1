// A router holding its bank's keys in f16 (RouterOpenOptions.keyType, GAVEL_KEY_TYPE) over the 24
// example skills with the embedded pair: half the keys' memory, the bank on disk unchanged (float32),
// the same skills ranked with g within f16's rounding of float32's, through the exact glance and the
// key IVF; what it installs is read back by a float32 router exactly as a float32 install's.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GavelError, Model, Router } from "../../src/index.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { repoRoot } from "../helpers/paths.js";
import { withEnv } from "../helpers/env.js";

const tasks = ["demo-tasks.json", "everyday-tasks.json"].flatMap((f) => (JSON.parse(readFileSync(join(repoRoot, "examples", f), "utf8")) as { task: string }[]).map((t) => t.task)).slice(0, 8);
const skillsDir = join(repoRoot, "examples", "skills");
const open = (model: Model, bankDir: string, extra: Record<string, unknown> = {}) => Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir, skillBudget: 512, ...extra });

describe("a router with f16 keys", () => {
  let model: Model;
  let f32: Router;
  let bankDir: string;
  const dirs: string[] = [];
  beforeAll(async () => {
    model = await Model.load(DEFAULT_MODEL, { contextSize: 4096, threads: 1 });
    bankDir = mkdtempSync(join(tmpdir(), "gavel-keytype-"));
    dirs.push(bankDir);
    f32 = await open(model, bankDir);
    await withEnv({ GAVEL_KEY_IVF: "on" }, async () => expect((await f32.install(skillsDir)).failed).toEqual([]));
  });
  afterAll(async () => {
    await f32?.close();
    await model?.dispose();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("holds the keys in half the memory, and says so", async () => {
    const r16 = await open(model, bankDir, { readOnly: true, keyType: "f16" });
    try {
      const s32 = f32.stats(), s16 = r16.stats();
      expect(s32.keyType).toBe("f32");
      expect(s16.keyType).toBe("f16");
      expect(s16.keys).toBe(s32.keys);
      const keyBytes = s32.keys * f32.projections.dim * 4;
      // the keys dominate the native memory: f32 holds 4 bytes a value, f16 2, the bookkeeping the same
      expect(s32.memoryBytes).toBeGreaterThanOrEqual(keyBytes);
      expect(s32.memoryBytes - s16.memoryBytes).toBe(keyBytes / 2);
    } finally {
      await r16.close();
    }
  });

  it("ranks as the float32 router does, g within f16's rounding, exact glance and key IVF alike", async () => {
    const r16 = await open(model, bankDir, { readOnly: true, keyType: "f16" });
    try {
      for (const mode of ["off", "on"] as const) {
        await withEnv({ GAVEL_KEY_IVF: mode }, async () => {
          let top5 = 0;
          for (const t of tasks) {
            const a = await f32.glance(t, { topK: 24 });
            const b = await r16.glance(t, { topK: 24 });
            expect(b.map((h) => h.skill).sort()).toEqual(a.map((h) => h.skill).sort());
            expect(b[0].skill).toBe(a[0].skill);
            const g32 = new Map(a.map((h) => [h.skill, h.g]));
            // g sums each row's vote w·m; f16 keys move each m by at most 2⁻¹¹ (unit vectors), so a
            // skill that keeps its rows' votes moves by at most 2⁻¹¹ Σw. A near tie at a row's k-th
            // place could move a vote; over these tasks every g agrees to 3e-5 of the best g (the
            // bound leaves 70× room).
            const scale = Math.abs(a[0].g);
            for (const h of b) expect(Math.abs(h.g - g32.get(h.skill)!)).toBeLessThanOrEqual(2e-3 * scale);
            const b5 = new Set(b.slice(0, 5).map((h) => h.skill));
            top5 += a.slice(0, 5).filter((h) => b5.has(h.skill)).length;
            // not the float32 glance in disguise: some g differ
            if (t === tasks[0]) expect(b.some((h) => h.g !== g32.get(h.skill))).toBe(true);
          }
          expect(top5 / (5 * tasks.length)).toBeGreaterThanOrEqual(0.9);
        });
      }
      // the route picks as the float32 router's
      for (const t of tasks.slice(0, 3)) {
        const [a, b] = [await f32.route(t, { verdict: false }), await r16.route(t, { verdict: false })];
        expect(b.skill).toBe(a.skill);
      }
    } finally {
      await r16.close();
    }
  });

  it("installs float32 keys on disk: a float32 router reads its bank as a float32 install's", async () => {
    const other = mkdtempSync(join(tmpdir(), "gavel-keytype-f16-"));
    dirs.push(other);
    await withEnv({ GAVEL_KEY_TYPE: "f16", GAVEL_KEY_IVF: "off" }, async () => {
      const w16 = await open(model, other);
      try {
        expect(w16.stats().keyType).toBe("f16"); // from the environment
        expect((await w16.install(skillsDir)).failed).toEqual([]);
      } finally {
        await w16.close();
      }
    });
    const r32 = await open(model, other, { readOnly: true, keyType: "f32" });
    try {
      await withEnv({ GAVEL_KEY_IVF: "off" }, async () => {
        for (const t of tasks.slice(0, 3)) {
          const a = await f32.glance(t, { topK: 24 });
          const b = await r32.glance(t, { topK: 24 });
          expect(b.map((h) => [h.skill, h.g])).toEqual(a.map((h) => [h.skill, h.g]));
        }
      });
    } finally {
      await r32.close();
    }
  });

  it("refuses a key type it does not know, by option and by environment", async () => {
    await expect(open(model, bankDir, { readOnly: true, keyType: "f8" })).rejects.toSatisfy((e: unknown) => e instanceof GavelError && e.code === "INVALID_ARGUMENT" && /keyType/.test(e.message));
    await expect(withEnv({ GAVEL_KEY_TYPE: "bf16" }, () => open(model, bankDir, { readOnly: true }))).rejects.toSatisfy(
      (e: unknown) => e instanceof GavelError && e.code === "INVALID_ARGUMENT" && /GAVEL_KEY_TYPE/.test(e.message),
    );
  });
});
