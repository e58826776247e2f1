// `gavel train --device cuda|cpu --precision bf16|fp32` (issue 12): a CPU build answers --device cuda
// with CUDA_UNAVAILABLE before any work (before the model loads and the library is read: both paths
// here do not exist, so any work would fail otherwise), in the CLI and in trainProjections; a bad
// value is INVALID_ARGUMENT; the CPU trainer takes the options through the loop.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import { loadBinding } from "../../src/native/binding.js";
import type { Model } from "../../src/model/Model.js";
import { trainProjections } from "../../lab/train/pipeline.js";
import { assertTrainerDevice, createTrainer, runTraining } from "../../lab/train/trainer.js";
import { repoRoot } from "../helpers/paths.js";
import { run as runCommand } from "../helpers/run.js";
import { expectCode } from "../helpers/gavel-error.js";

const cli = join(repoRoot, "dist", "cli", "gavel.js");
const cudaBuild = loadBinding().buildInfo().cuda;
const run = (...args: string[]) => runCommand(process.execPath, [cli, "train", ...args], { timeoutMs: 60_000 });
const base = ["--model", "/nonexistent/model.gguf", "--library", "/nonexistent/library.jsonl", "--queries", "all", "--out", "/nonexistent/p.gguf"];

describe("gavel train --device / --precision", () => {
  it.skipIf(cudaBuild)("--device cuda on a CPU build fails with CUDA_UNAVAILABLE before any work", async () => {
    const r = await run(...base, "--device", "cuda");
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/CUDA_UNAVAILABLE/);
    expect(r.err).not.toMatch(/FILE_NOT_FOUND/);
    const bf = await run(...base, "--device", "cuda", "--precision", "fp32");
    expect(bf.err).toMatch(/CUDA_UNAVAILABLE/);
  });

  it("rejects an unknown device or precision with INVALID_ARGUMENT", async () => {
    expect((await run(...base, "--device", "gpu")).err).toMatch(/device must be "cpu" or "cuda".*INVALID_ARGUMENT/);
    expect((await run(...base, "--precision", "fp16")).err).toMatch(/precision must be "bf16" or "fp32".*INVALID_ARGUMENT/);
  });

  it("--device cpu goes on to the work (here: the missing model)", async () => {
    const r = await run(...base, "--device", "cpu", "--precision", "fp32");
    expect(r.code).not.toBe(0);
    expect(r.err).not.toMatch(/CUDA_UNAVAILABLE|INVALID_ARGUMENT/);
  });

  it.skipIf(cudaBuild)("trainProjections and createTrainer throw CUDA_UNAVAILABLE for device cuda", async () => {
    expect(() => assertTrainerDevice("cuda")).toThrow(GavelError);
    expect(() => assertTrainerDevice("cuda", "bf16")).toThrow(expect.objectContaining({ code: "CUDA_UNAVAILABLE" }));
    expect(() => createTrainer({ nEmbd: 4, dim: 2, device: "cuda" })).toThrow(expect.objectContaining({ code: "CUDA_UNAVAILABLE" }));
    // No model is touched before the check: a stand-in that throws on any use.
    const model = new Proxy({}, { get: () => { throw new Error("the model was used"); } }) as unknown as Model;
    await expectCode(trainProjections(model, { library: "/nonexistent", queries: ["description"], out: "/nonexistent/p.gguf", device: "cuda" }), "CUDA_UNAVAILABLE");
    // runTraining too, before any step
    const set = { nEmbd: 4, skills: [new Float32Array(8), new Float32Array(8)], train: [{ query: new Float32Array(4), positives: [0] }], val: [] };
    await expectCode(runTraining(set, { dim: 2, steps: 1, device: "cuda" }), "CUDA_UNAVAILABLE");
  });

  it("the CPU trainer takes device cpu and any precision", () => {
    assertTrainerDevice("cpu", "fp32");
    assertTrainerDevice(undefined, undefined);
    const t = createTrainer({ nEmbd: 4, dim: 2, device: "cpu", precision: "bf16" });
    expect(t.device).toBe("cpu");
    expect(t.precision).toBe("fp32");
    t.dispose();
  });
});
