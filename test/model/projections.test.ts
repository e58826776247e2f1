// Projections and model fingerprints on the real stories260K model: save/load round trips bit for bit,
// the hash tracks what changes keys and nothing else, and every broken file fails with a typed error.
import { mkdtemp, readFile, readdir, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import { GgufWriter, f64, readGgufHeader, str, u32 } from "../../src/gguf/index.js";
import { Model } from "../../src/model/Model.js";
import { describeMismatch, modelFingerprint, sameModel, type ModelFingerprint } from "../../src/model/fingerprint.js";
import { PROJECTION_DEFAULTS, Projections, defaultLayer } from "../../src/projections/projections.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { expectCode, expectCodeSync } from "../helpers/gavel-error.js";
import { freshSeed } from "../helpers/random.js";

let dir: string;
let model: Model;
let fp: ModelFingerprint;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gavel-projections-test-"));
  model = await Model.load(TINY_LLAMA_PATH, { contextSize: 128, sequences: 2 });
  fp = await modelFingerprint(model);
});
afterAll(async () => {
  await model?.dispose();
  await rm(dir, { recursive: true, force: true });
});

describe("modelFingerprint", () => {
  it("reads shape from the model and hashes the GGUF vocabulary", async () => {
    expect(fp).toMatchObject({ architecture: "llama", nLayer: model.info.nLayer, nEmbd: model.info.nEmbd, nVocab: model.info.nVocab });
    expect(fp.vocabHash).toMatch(/^[0-9a-f]{64}$/);
    const header = await readGgufHeader(TINY_LLAMA_PATH);
    const tokens = header.metadata.get("tokenizer.ggml.tokens");
    expect(tokens?.type).toBe("arr");
    expect((tokens!.value as string[]).length).toBe(fp.nVocab);
    // Cached, and stable.
    const again = await modelFingerprint(model);
    expect(again).toEqual(fp);
    expect(sameModel(fp, again)).toBe(true);
    expect(describeMismatch(fp, again)).toBeUndefined();
  });

  it("describes each difference", () => {
    const other = { ...fp, architecture: "qwen3", nLayer: 36 };
    expect(sameModel(fp, other)).toBe(false);
    expect(describeMismatch(other, fp)).toBe(`architecture qwen3 vs llama; 36 layers vs ${fp.nLayer}`);
    const vocabOnly = { ...fp, vocabHash: "0".repeat(64) };
    expect(describeMismatch(fp, vocabOnly)).toMatch(/same shapes but a different vocabulary/);
  });
});

describe("Projections", () => {
  it("random() uses the paper's defaults and ~70% depth", async () => {
    const p = await Projections.random(model, { seed: 1, dim: 16 });
    expect(p.layer).toBe(defaultLayer(fp.nLayer));
    expect(p.layer).toBe(Math.floor(0.7 * fp.nLayer));
    expect(p).toMatchObject({ dim: 16, tau: 40, eps: 0.83, alpha: 1, gamma: 0.025, delta: 0.133, maxShortlist: 20 });
    expect(PROJECTION_DEFAULTS.dim).toBe(768);
    expect(p.model).toEqual(fp);
    expect(p.wq.length).toBe(16 * fp.nEmbd);
    // Deterministic per seed, different across seeds, scaled 1/sqrt(nEmbd).
    const same = await Projections.random(model, { seed: 1, dim: 16 });
    expect(same.hash).toBe(p.hash);
    const other = await Projections.random(model, { seed: 2, dim: 16 });
    expect(other.hash).not.toBe(p.hash);
    const big = await Projections.random(fp, { seed: freshSeed() });
    let ss = 0;
    for (const v of big.ws) ss += v * v;
    const std = Math.sqrt(ss / big.ws.length);
    expect(std * Math.sqrt(fp.nEmbd)).toBeGreaterThan(0.97);
    expect(std * Math.sqrt(fp.nEmbd)).toBeLessThan(1.03);
    expect(defaultLayer(1)).toBe(0);
    expect(defaultLayer(64)).toBe(44);
  });

  it("save → load round-trips weights, metadata and hash", async () => {
    const seed = freshSeed();
    const p = (await Projections.random(model, { seed, dim: 24, layer: 1 })).withCalibration({ alpha: 0.7, gamma: 0.1, delta: 0.2 });
    const path = join(dir, `p-${seed}.gguf`);
    await p.save(path);
    // Only the file itself remains: no temp files.
    expect((await readdir(dir)).filter((n) => n.includes(`p-${seed}`))).toEqual([`p-${seed}.gguf`]);
    const q = await Projections.load(path);
    expect(q.meta).toEqual(p.meta);
    expect(q.wq).toEqual(p.wq);
    expect(q.ws).toEqual(p.ws);
    expect(q.hash).toBe(p.hash);
    expect(q.eps).toBe(0.83); // f64 in the file: exact
    const h = await readGgufHeader(path);
    expect(h.metadata.get("general.architecture")?.value).toBe("gavel-projections");
    for (const key of ["gavel.version", "gavel.layer", "gavel.dim", "gavel.tau", "gavel.eps", "gavel.alpha", "gavel.gamma", "gavel.delta", "gavel.max_shortlist", "gavel.model.architecture", "gavel.model.n_layer", "gavel.model.n_embd", "gavel.model.n_vocab", "gavel.model.vocab_hash"]) {
      expect(h.metadata.has(key), key).toBe(true);
    }
    expect(h.tensors.map((t) => [t.name, t.dims])).toEqual([
      ["gavel.w_q", [fp.nEmbd, 24]],
      ["gavel.w_s", [fp.nEmbd, 24]],
    ]);
    // Overwriting in place works (atomic rename over the old file).
    const r = await Projections.random(model, { seed: seed + 1, dim: 24 });
    await r.save(path);
    expect((await Projections.load(path)).hash).toBe(r.hash);
  });

  it("hash follows W_s, W_q, layer and dim, but not calibration", async () => {
    const p = await Projections.random(model, { seed: freshSeed(), dim: 8 });
    const ws = p.ws.slice();
    ws[ws.length - 1] += 1e-3;
    const changedWs = new Projections({ ...p.meta, wq: p.wq, ws });
    expect(changedWs.hash).not.toBe(p.hash);
    const wq = p.wq.slice();
    wq[0] = -wq[0] || 1;
    expect(new Projections({ ...p.meta, wq, ws: p.ws }).hash).not.toBe(p.hash);
    expect(new Projections({ ...p.meta, wq: p.wq, ws: p.ws, layer: (p.layer + 1) % fp.nLayer }).hash).not.toBe(p.hash);
    expect(new Projections({ ...p.meta, wq: p.wq, ws: p.ws }).hash).toBe(p.hash);
    const cal = p.withCalibration({ alpha: 2, gamma: 0.5, delta: 0.01 });
    expect(cal).not.toBe(p);
    expect(cal).toMatchObject({ alpha: 2, gamma: 0.5, delta: 0.01, eps: p.eps, layer: p.layer });
    expect(p.alpha).toBe(1); // the original is untouched
    expect(cal.hash).toBe(p.hash);
    expect(p.withCalibration({ gamma: 0.3 })).toMatchObject({ alpha: p.alpha, gamma: 0.3, delta: p.delta });
    expect(() => p.withCalibration({ alpha: NaN })).toThrow(GavelError);
  });

  it("checkModel throws PROJECTIONS_MISMATCH naming the difference", async () => {
    const p = await Projections.random(model, { dim: 8 });
    expect(() => p.checkModel(fp)).not.toThrow();
    const qwen = { architecture: "qwen3", nLayer: 36, nEmbd: 4096, nVocab: 151936, vocabHash: "3fa2".padEnd(64, "0") };
    const foreign = await Projections.random(qwen, { dim: 4 });
    expectCodeSync(() => foreign.checkModel(fp), "PROJECTIONS_MISMATCH", /trained for qwen3 with 36 layers.*this model is llama with \d+ layers/);
    expect(() => p.checkModel({ ...fp, vocabHash: "f".repeat(64) })).toThrow(/different vocabulary/);
  });

  it("validates constructor arguments", async () => {
    const p = await Projections.random(model, { dim: 4 });
    expect(() => new Projections({ ...p.meta, wq: p.wq, ws: p.ws.subarray(1) })).toThrow(/ws has/);
    const nan = p.ws.slice();
    nan[3] = NaN;
    expect(() => new Projections({ ...p.meta, wq: p.wq, ws: nan })).toThrow(GavelError);
    expect(() => new Projections({ ...p.meta, wq: p.wq, ws: p.ws, layer: fp.nLayer })).toThrow(/out of range/);
    expect(() => new Projections({ ...p.meta, wq: p.wq, ws: p.ws, eps: 0 })).toThrow(/eps/);
  });

  describe("load errors", () => {
    let good: Projections;
    let goodPath: string;
    beforeAll(async () => {
      good = await Projections.random(model, { seed: 7, dim: 8 });
      goodPath = join(dir, "good.gguf");
      await good.save(goodPath);
    });

    /** A copy of the good file's metadata and tensors with `edit` applied. */
    async function variant(name: string, edit: (w: GgufWriter) => void, tensors = true): Promise<string> {
      const w = new GgufWriter();
      const h = await readGgufHeader(goodPath);
      for (const [k, v] of h.metadata) w.set(k, v);
      if (tensors) {
        w.addTensor("gavel.w_q", [fp.nEmbd, 8], good.wq);
        w.addTensor("gavel.w_s", [fp.nEmbd, 8], good.ws);
      }
      edit(w);
      const path = join(dir, name);
      await w.write(path);
      return path;
    }

    it("FILE_NOT_FOUND for a missing file", async () => {
      await expectCode(Projections.load(join(dir, "nope.gguf")), "FILE_NOT_FOUND");
    });

    it("NOT_GGUF for other files", async () => {
      const path = join(dir, "text.gguf");
      await writeFile(path, "this is not a gguf file at all, just text\n");
      await expectCode(Projections.load(path), "NOT_GGUF");
    });

    it("CORRUPT_FILE for a model file, missing keys, bad shapes, non-finite weights, truncation", async () => {
      await expectCode(Projections.load(TINY_LLAMA_PATH), "CORRUPT_FILE", /not a gavel projections file.*llama/);
      await expectCode(Projections.load(await variant("nokey.gguf", (w) => w.delete("gavel.eps"))), "CORRUPT_FILE", /gavel\.eps is missing/);
      await expectCode(Projections.load(await variant("badtype.gguf", (w) => w.set("gavel.layer", str("3")))), "CORRUPT_FILE", /gavel\.layer/);
      await expectCode(Projections.load(await variant("badlayer.gguf", (w) => w.set("gavel.layer", u32(fp.nLayer)))), "CORRUPT_FILE", /out of range/);
      await expectCode(Projections.load(await variant("badeps.gguf", (w) => w.set("gavel.eps", f64(-1)))), "CORRUPT_FILE", /eps/);
      await expectCode(Projections.load(await variant("newer.gguf", (w) => w.set("gavel.version", u32(99)))), "CORRUPT_FILE", /version 99/);
      await expectCode(
        Projections.load(await variant("notensor.gguf", (w) => w.addTensor("gavel.w_q", [fp.nEmbd, 8], good.wq), false)),
        "CORRUPT_FILE",
        /gavel\.w_s is missing/,
      );
      await expectCode(
        Projections.load(
          await variant("shape.gguf", (w) => {
            w.addTensor("gavel.w_q", [8, fp.nEmbd], good.wq);
            w.addTensor("gavel.w_s", [fp.nEmbd, 8], good.ws);
          }, false),
        ),
        "CORRUPT_FILE",
        /shape/,
      );
      const inf = good.ws.slice();
      inf[5] = Infinity;
      await expectCode(
        Projections.load(
          await variant("inf.gguf", (w) => {
            w.addTensor("gavel.w_q", [fp.nEmbd, 8], good.wq);
            w.addTensor("gavel.w_s", [fp.nEmbd, 8], inf);
          }, false),
        ),
        "CORRUPT_FILE",
        /non-finite/,
      );
      // Cut inside the tensor data: the header claims more than the file has.
      const cut = join(dir, "cut.gguf");
      await writeFile(cut, await readFile(goodPath));
      const size = (await readFile(cut)).length;
      await truncate(cut, size - 17);
      await expectCode(Projections.load(cut), "CORRUPT_FILE");
      // Sanity: the unedited variant loads.
      expect((await Projections.load(await variant("same.gguf", () => undefined))).hash).toBe(good.hash);
    });
  });
});
