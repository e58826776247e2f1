// The states pass keeps its derived inputs (each query's masked rows, each task's BM25 look-alikes)
// beside the states: a second run reads them instead of recomputing, and trains the same projections
// bit for bit; a damaged file is recomputed, again to the same projections.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, modelFingerprint, Projections } from "../../src/index.js";
import { trainProjections, type TrainProjectionsOptions } from "../../lab/train/pipeline.js";
import { sharedDir, storiesPath, needsShared, SHARED } from "../helpers/paths.js";
import { expectCode } from "../helpers/gavel-error.js";

const NO_SHARED = needsShared("stories260K and the MIT skills library to train", SHARED.stories, SHARED.mit);

const mitSkills = join(sharedDir, "data", "skills-mit.jsonl.gz");

describe.skipIf(NO_SHARED)("the states pass's prepared inputs", () => {
  let model: Model;
  let dir: string;
  beforeAll(async () => {
    model = await Model.load(storiesPath, { contextSize: 512, sequences: 4, threads: 1 });
    dir = mkdtempSync(join(tmpdir(), "gavel-prepared-"));
  });
  afterAll(async () => {
    await model?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("are read back by a later run, and recomputed when damaged, to the same projections", async () => {
    const cache = join(dir, "cache");
    const run = async (name: string) => {
      const lines: string[] = [];
      const r = await trainProjections(model, {
        library: mitSkills, limit: 30, queries: ["description", "cloze", "headings", "composite"], queriesPerSkill: 2,
        out: join(dir, `${name}.gguf`), dim: 8, steps: 3, batchTasks: 4, batchTokens: 2000, negatives: 4, hardNegatives: 2,
        skillTokens: 160, seed: 5, threads: 1, cache, valFraction: 0, onLog: (l) => lines.push(l),
      } satisfies TrainProjectionsOptions);
      expect(r.finished).toBe(true);
      // the weights, as bytes (the file's created_at differs between runs)
      const p = await Projections.load(join(dir, `${name}.gguf`));
      return { lines, bytes: Buffer.concat([Buffer.from(p.wq.buffer, p.wq.byteOffset, p.wq.byteLength), Buffer.from(p.ws.buffer, p.ws.byteOffset, p.ws.byteLength)]) };
    };
    const first = await run("a");
    expect(first.lines.some((l) => l.startsWith("states: masks mapped"))).toBe(true);
    expect(first.lines.some((l) => /^hard negatives: BM25 look-alikes for \d+/.test(l))).toBe(true);
    const second = await run("b");
    expect(second.lines.some((l) => l.startsWith("states: masks read from the cache"))).toBe(true);
    expect(second.lines.some((l) => l.startsWith("hard negatives: BM25 look-alikes read from the cache"))).toBe(true);
    expect(second.bytes.equals(first.bytes)).toBe(true);
    // damage every prepared file: the third run recomputes them
    const stack = [cache];
    let damaged = 0;
    while (stack.length) {
      const d = stack.pop()!;
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) stack.push(join(d, e.name));
        else if (e.name.startsWith("prepared-")) {
          writeFileSync(join(d, e.name), "{ not json");
          damaged++;
        }
      }
    }
    expect(damaged).toBe(1);
    const third = await run("c");
    expect(third.lines.some((l) => l.startsWith("states: masks mapped"))).toBe(true);
    expect(third.bytes.equals(first.bytes)).toBe(true);
  });

  it("are written by a prepare-only run with no forward pass, equal to what a full run derives", async () => {
    const opts = (cache: string, name: string): TrainProjectionsOptions => ({
      library: mitSkills, limit: 30, queries: ["description", "cloze", "composite"], queriesPerSkill: 2,
      out: join(dir, `${name}.gguf`), dim: 8, steps: 2, batchTasks: 4, batchTokens: 2000, negatives: 4, hardNegatives: 2,
      skillTokens: 160, seed: 9, threads: 1, cache, valFraction: 0.1,
    });
    const prep = await trainProjections(model, { ...opts(join(dir, "p"), "p"), prepareOnly: true });
    expect(prep.finished).toBe(false);
    expect(prep.mainSteps).toBe(0);
    expect(prep.prepared && existsSync(prep.prepared)).toBe(true);
    expect(existsSync(join(dir, "p.gguf"))).toBe(false);
    // no state was computed: the cache folder holds only its about.json and the prepared file
    const folder = join(prep.prepared!, "..");
    expect(readdirSync(folder).sort()).toEqual(["about.json", prep.prepared!.slice(folder.length + 1)].sort());
    const full = await trainProjections(model, opts(join(dir, "f"), "f"));
    expect(full.finished).toBe(true);
    const read = (p: string) => JSON.parse(readFileSync(p, "utf8")) as { masks: unknown[]; hard: unknown[] };
    const fullFile = readdirSync(join(dir, "f"), { recursive: true }).map(String).find((f) => f.includes("prepared-"))!;
    expect(fullFile.endsWith(prep.prepared!.slice(folder.length + 1))).toBe(true);
    const a = read(prep.prepared!);
    const b = read(join(dir, "f", fullFile));
    expect(a.masks.some((m) => Array.isArray(m) && m.length > 0)).toBe(true);
    expect(a.hard.filter(Boolean).length).toBeGreaterThan(0);
    expect(a).toEqual(b);
    await expect(trainProjections(model, { ...opts(undefined as unknown as string, "x"), cache: undefined, prepareOnly: true })).rejects.toThrow(/prepareOnly needs a cache/);
  });

  it("takes ℓ* from the gavel-layer.json beside the output (this model's only), and refuses bad arguments before any work", async () => {
    const folder = join(dir, "layer");
    mkdirSync(folder, { recursive: true });
    const fp = await modelFingerprint(model);
    const choice = (m: typeof fp, layer: number) =>
      writeFileSync(join(folder, "gavel-layer.json"), JSON.stringify({ model: m, layer, curve: [0, 0, 0, 0, 0], skills: 2, tokensPerSkill: 512, dropTopNorm: false, span: "keyed", createdAt: new Date().toISOString() }));
    const prepare = async (extra: Partial<TrainProjectionsOptions> = {}) => {
      const lines: string[] = [];
      const r = await trainProjections(model, {
        library: mitSkills, limit: 10, queries: ["description"], out: join(folder, "x.gguf"), cache: join(folder, "cache"), prepareOnly: true, seed: 1, threads: 1, onLog: (l) => lines.push(l), ...extra,
      });
      return { layer: r.layer, lines };
    };
    const deflt = Math.floor(0.7 * model.info.nLayer);
    expect((await prepare()).layer).toBe(deflt);
    choice(fp, 1);
    const picked = await prepare();
    expect(picked.layer).toBe(1);
    expect(picked.lines).toContain(`layer ℓ* 1, from ${join(folder, "gavel-layer.json")} (gavel layer's choice beside the output)`);
    expect((await prepare({ layer: 2 })).layer).toBe(2); // the option wins
    // a choice made on another model is left out, and said so
    choice({ ...fp, nLayer: fp.nLayer + 1 }, 1);
    const other = await prepare();
    expect(other.layer).toBe(deflt);
    expect(other.lines.some((l) => l.includes("is not a layer choice for this model"))).toBe(true);
    // refused, typed, before the library is read
    await expectCode(prepare({ out: join(dir, "no-such-folder", "x.gguf") }), "FILE_NOT_FOUND", /output's folder .*no-such-folder does not exist/);
    await expectCode(prepare({ out: "" }), "INVALID_ARGUMENT");
    await expectCode(prepare({ queries: ["bogus" as never] }), "INVALID_ARGUMENT", /unknown query kind "bogus"/);
    await expectCode(trainProjections({} as never, { library: mitSkills, out: join(folder, "y.gguf"), queries: ["description"] }), "INVALID_ARGUMENT");
    await expectCode(trainProjections(model, undefined as never), "INVALID_ARGUMENT");
  });
});
