// The abstention model in the projections file (every kind round-trips exactly; a file without the
// keys has none) and `gavel calibrate --off-domain` choosing and writing one from gzipped records.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it, vi } from "vitest";
import { calibrateCommand } from "../../lab/cli/calibrate.js";
import { readGgufHeader } from "../../src/gguf/index.js";
import { writeProjectionsFile } from "../../src/projections/file.js";
import { ABSTAIN_KEY, Projections, type AbstentionModel } from "../../src/projections/projections.js";
import type { BandAbstention } from "../../src/projections/abstention-model.js";
import { needsLexical } from "../../src/route/index.js";
import type { AbstentionRecord } from "../../lab/eval/index.js";
import { synthSet } from "../helpers/abstention-records.js";
import { expectCode } from "../helpers/gavel-error.js";

const model = { architecture: "llama", nLayer: 2, nEmbd: 4, nVocab: 10, vocabHash: "0".repeat(64) };
const dir = mkdtempSync(join(tmpdir(), "abstain-"));
const base = () => new Projections({ wq: Float32Array.from({ length: 8 }, (_, i) => i / 8), ws: new Float32Array(8), dim: 2, layer: 1, model });

const BAND: BandAbstention[] = [
  { kind: "threshold", feature: "V", threshold: -0.4, marginCap: 0.7 },
  { kind: "threshold", feature: "lift", threshold: -6.123456789012345, marginCap: 1e-300, targetTriggerRate: 0.1 },
  { kind: "threshold", feature: "margin", threshold: 0.1 + 0.2, marginCap: 3 },
  {
    kind: "logistic",
    features: ["margin", "V", "g", "B", "lift"],
    weights: [-0.1, 1 / 3, -Math.PI, 1e-17, -2.5],
    bias: Math.E,
    mean: [0.25, 8.1, 0.43, -10.37, 0.93],
    scale: [0.22, 3.3, 0.054, 0.83, 7.27],
    threshold: 0.022820573287669583,
    marginCap: 0.7285899305448305,
    targetTriggerRate: 0.05,
  },
  { kind: "logistic", features: ["g"], weights: [-1], bias: 0, mean: [0], scale: [1], threshold: -1, marginCap: 1 },
  { kind: "logistic", features: ["B", "lift", "coverage", "reach"], weights: [-1.5, 0.25, -0.5, -3], bias: -3.7, mean: [-2.8, 3.9, 0.19, 2.9], scale: [2.27, 4.34, 0.095, 1.61], threshold: 0.185, marginCap: 0.0035 },
  { kind: "threshold", feature: "reach", threshold: 0.5, marginCap: 1 },
  { kind: "logistic", features: ["reach", "logN", "reach*logN", "g*logN"], weights: [-3, 0.2, -0.7, 0.1], bias: -2.2, mean: [2, 5.9, 13.4, 0.66], scale: [1.1, 3.4, 14.1, 0.39], threshold: -0.12, marginCap: 0.116 },
];
const MODELS: AbstentionModel[] = [
  ...BAND,
  // two bands: the small one in the plain keys, the large one under gavel.abstain.large.
  { kind: "bySize", from: 1000, small: BAND[5], large: BAND[7] },
  { kind: "bySize", from: 2, small: BAND[0], large: BAND[3] },
  // three bands: the middle one under gavel.abstain.mid., where the large one starts in mid_until
  { kind: "bySize", from: 125, small: BAND[5], mid: BAND[6], midUntil: 10_000, large: BAND[7] },
];

describe("the projections file keeps the abstention model", () => {
  it("round-trips every kind exactly, as f64 keys", async () => {
    for (const [i, m] of MODELS.entries()) {
      const p = base().withCalibration({ abstention: m, alpha: 0.5 });
      const path = join(dir, `m${i}.gguf`);
      await p.save(path);
      const back = await Projections.load(path);
      expect(back.abstention).toEqual(m);
      expect(back.meta).toEqual(p.meta);
      expect(back.hash).toBe(base().hash); // calibration leaves the hash alone
      const h = await readGgufHeader(path);
      // a by-size model: its small band in the plain keys (what a reader without bands reads), its
      // large band under gavel.abstain.large.
      const plain = m.kind === "bySize" ? m.small : m;
      expect(h.metadata.get(ABSTAIN_KEY.kind)).toEqual({ type: "str", value: plain.kind });
      expect(h.metadata.get(ABSTAIN_KEY.threshold)?.type).toBe("f64");
      if (plain.kind === "logistic") expect(h.metadata.get(ABSTAIN_KEY.weights)).toMatchObject({ type: "arr", itemType: "f64" });
      else expect(h.metadata.has(ABSTAIN_KEY.weights)).toBe(false);
      if (m.kind === "bySize") {
        expect(h.metadata.get(ABSTAIN_KEY.largeFrom)).toEqual({ type: "f64", value: m.from });
        expect(h.metadata.get("gavel.abstain.large.kind")).toEqual({ type: "str", value: m.large.kind });
        expect(h.metadata.get("gavel.abstain.large.threshold")).toEqual({ type: "f64", value: m.large.threshold });
        if (m.mid) {
          expect(h.metadata.get(ABSTAIN_KEY.midUntil)).toEqual({ type: "f64", value: m.midUntil });
          expect(h.metadata.get("gavel.abstain.mid.kind")).toEqual({ type: "str", value: m.mid.kind });
          expect(h.metadata.get("gavel.abstain.mid.threshold")).toEqual({ type: "f64", value: m.mid.threshold });
        } else expect([...h.metadata.keys()].filter((k) => k.startsWith("gavel.abstain.mid"))).toEqual([]);
      } else expect(h.metadata.has(ABSTAIN_KEY.largeFrom)).toBe(false);
    }
  });

  it("reads a file without the keys as no model; null removes one, undefined keeps it", async () => {
    const path = join(dir, "none.gguf");
    await base().save(path);
    expect((await Projections.load(path)).abstention).toBeNull();
    // the shipped pair's file carries one (scripts/device/refit-abstention.ts), read back like any other
    expect((await Projections.load("models/gavel-mini.projections.gguf")).abstention).toMatchObject({ kind: expect.stringMatching(/^(threshold|logistic|bySize)$/) });
    const withModel = base().withCalibration({ abstention: MODELS[0] });
    expect(withModel.withCalibration({ alpha: 2 }).abstention).toEqual(MODELS[0]);
    expect(withModel.withCalibration({ abstention: null }).abstention).toBeNull();
    expect(() => base().withCalibration({ abstention: { ...BAND[0], threshold: NaN } })).toThrow(/threshold/);
  });

  it("refuses a malformed stored model as a corrupt file", async () => {
    const path = join(dir, "bad.gguf");
    const p = base();
    const bad = { ...MODELS[3], weights: [1, 2] } as unknown as AbstentionModel;
    await writeProjectionsFile(path, { ...p.meta, wq: p.wq, ws: p.ws, abstention: bad });
    await expectCode(Projections.load(path), "CORRUPT_FILE", /weights must hold 5/);
    // a by-size model's large band is checked as the small one is
    const badLarge = { kind: "bySize", from: 100, small: BAND[0], large: { ...BAND[3], weights: [1, 2] } } as unknown as AbstentionModel;
    await writeProjectionsFile(path, { ...p.meta, wq: p.wq, ws: p.ws, abstention: badLarge });
    await expectCode(Projections.load(path), "CORRUPT_FILE", /weights must hold 5/);
    const badFrom = { kind: "bySize", from: 1.5, small: BAND[0], large: BAND[3] } as unknown as AbstentionModel;
    await writeProjectionsFile(path, { ...p.meta, wq: p.wq, ws: p.ws, abstention: badFrom });
    await expectCode(Projections.load(path), "CORRUPT_FILE", /from must be an integer ≥ 2/);
    // a middle band is checked as the others, and must end above where it starts
    const badMid = { kind: "bySize", from: 125, small: BAND[0], mid: { ...BAND[3], weights: [1] }, midUntil: 10_000, large: BAND[3] } as unknown as AbstentionModel;
    await writeProjectionsFile(path, { ...p.meta, wq: p.wq, ws: p.ws, abstention: badMid });
    await expectCode(Projections.load(path), "CORRUPT_FILE", /weights must hold 5/);
    const badUntil = { kind: "bySize", from: 125, small: BAND[0], mid: BAND[3], midUntil: 100, large: BAND[3] } as unknown as AbstentionModel;
    await writeProjectionsFile(path, { ...p.meta, wq: p.wq, ws: p.ws, abstention: badUntil });
    await expectCode(Projections.load(path), "CORRUPT_FILE", /midUntil must be an integer > from \(125\)/);
  });
});

/** Writes records as gzipped JSONL. */
function writeGz(name: string, records: AbstentionRecord[]): string {
  const path = join(dir, name);
  writeFileSync(path, gzipSync(records.map((r) => JSON.stringify(r) + "\n").join("")));
  return path;
}

/** Runs `gavel calibrate` in-process and returns its exit code and what it printed. */
async function calibrateCli(...args: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const spy = vi.spyOn(console, "log").mockImplementation((...xs: unknown[]) => void lines.push(xs.join(" ")));
  try {
    const code = await calibrateCommand.run(args);
    return { code, out: lines.join("\n") };
  } finally {
    spy.mockRestore();
  }
}

describe("gavel calibrate --off-domain", () => {
  afterEach(() => vi.restoreAllMocks());
  const { inDomain, offDomain } = synthSet(21, 60, 80);
  const val = writeGz("val.jsonl.gz", inDomain);
  const off = writeGz("off.jsonl.gz", offDomain.map(({ offDomain: _, ...r }) => r)); // the flag comes from the option

  it("fits the ruling, then chooses an abstention model and writes it", async () => {
    const proj = join(dir, "cal.gguf");
    await base().save(proj);
    const { code, out } = await calibrateCli("--per-query", val, "--off-domain", off, "--projections", proj, "--write", "--json");
    expect(code).toBe(0);
    const result = JSON.parse(out);
    const written = await Projections.load(proj);
    expect(written.abstention).toEqual(result.abstention.model);
    expect([written.alpha, written.gamma, written.delta, written.beta]).toEqual([result.alpha, result.gamma, result.delta, result.beta]);
    expect(result.abstention.report).toMatchObject({ inDomain: 60, offDomain: 80, folds: 5, targetTriggerRate: 0.1 });
    expect(result.abstention.report.fitting.triggerRate).toBeLessThanOrEqual(0.1);
    expect(needsLexical(written.abstention)).toBe(true); // the best B is what separates these records
    // recalibrating without --off-domain drops the model fitted under the old constants
    const again = await calibrateCli("--per-query", val, "--projections", proj, "--write");
    expect(again.out).toMatch(/dropped its abstention model/);
    expect((await Projections.load(proj)).abstention).toBeNull();
  });

  it("prints both rates and the chosen model; --trigger-rate sets the target; a file of tasks is refused", async () => {
    const { code, out } = await calibrateCli("--per-query", val, "--off-domain", off, "--trigger-rate", "0.05");
    expect(code).toBe(0);
    expect(out).toMatch(/abstention: 60 in-domain, 80 off-domain records; features margin, V, g, B, lift, reach; 5-fold cross-validation/);
    expect(out).toMatch(/target: triggers on ≤ 5\.0% of off-domain prompts/);
    expect(out).toMatch(/chosen: .+\n {2}abstains on \d+\.\d% of in-domain tasks, triggers on \d+\.\d% of off-domain prompts \(out of fold/);
    expect(out).toMatch(/lift < t/);
    expect(out).toMatch(/\(not written/);
    const plain = await calibrateCli("--per-query", val, "--json");
    expect(JSON.parse(plain.out).abstention).toBeUndefined();
    await expect(calibrateCli("--per-query", val, "--off-domain", val)).rejects.toThrow(/--off-domain takes prompts no skill serves/);
    await expect(calibrateCli("--per-query", val, "--off-domain", off, "--trigger-rate", "1")).rejects.toThrow(/--trigger-rate/);
  });
});
