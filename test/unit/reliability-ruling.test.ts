// Issue 17, silent wrong results: NaN or infinite verdict read-outs produced a "chosen" skill, and
// `--abstain` kept it (NaN < 0 is false). Now the route refuses them with INTERNAL naming the model;
// projection constants out of range are refused on load, naming the file and the field.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { expectCode } from "../helpers/gavel-error.js";

const verdictOut: { L: number; V: number }[] = [];
vi.mock("../../src/route/verdict.js", () => ({
  judge: async (_parts: unknown, _task: string, candidates: { skill: string; name: string; g: number }[]) =>
    candidates.map((c, i) => ({ skill: c.skill, name: c.name, g: c.g, ...verdictOut[i] })),
}));

const { decide } = await import("../../src/route/decide.js");
const { checkFiniteReadouts } = await import("../../src/route/ruling.js");
const { Projections } = await import("../../src/projections/projections.js");
const { GavelError } = await import("../../src/errors.js");
type ModelFingerprint = import("../../src/model/fingerprint.js").ModelFingerprint;

const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 8, nVocab: 64, vocabHash: "ef".repeat(32) };
let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "gavel-rel-ruling-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function route(L: number[], V: number[], g = [0.5, 0.49], abstain = false) {
  const projections = (await Projections.random(fp, { dim: 4 })).withCalibration({ delta: 1 });
  verdictOut.length = 0;
  L.forEach((l, i) => verdictOut.push({ L: l, V: V[i] }));
  const parts = { projections, library: { dir: "/bank" }, model: { path: "/models/agent.gguf" } } as never;
  const ranked = g.map((x, i) => ({ skill: `s${i}`, name: `s${i}`, g: x, column: i }));
  return decide(parts, {} as never, "task", ranked as never, new Int32Array(g.length), { lexical: false, verdict: true, abstain });
}

describe("NaN and Inf in the verdict and ruling", () => {
  it("finite read-outs still rule", async () => {
    const d = await route([-1, -2], [0.5, -0.5]);
    expect(d.shortlist[0].skill).toBe("s0");
  });

  it.each([
    ["L NaN", [NaN, -2], [0.5, 0.1]],
    ["V NaN", [-1, -2], [NaN, 0.1]],
    ["V +Inf", [-1, -2], [Infinity, 0.1]],
    ["L -Inf", [-1, -Infinity], [0.5, 0.1]],
  ])("%s: INTERNAL naming the model, no chosen skill", async (_what, L, V) => {
    const err = await route(L, V).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GavelError);
    expect((err as InstanceType<typeof GavelError>).code).toBe("INTERNAL");
    expect((err as Error).message).toMatch(/model \/models\/agent\.gguf gave NaN or infinite scores/);
  });

  it("with abstention on (V < 0 rule), a NaN V is an error, never 'not abstained'", async () => {
    await expectCode(route([-1, -2], [NaN, 0.1], [0.5, 0.49], true), "INTERNAL");
    await expectCode(route([-1], [NaN], [0.5], true), "INTERNAL");
  });

  it("a NaN glance g is refused before the first stage", async () => {
    await expectCode(route([-1, -2], [0, 0], [NaN, 0.4]), "INTERNAL", /glance g of skill "s0" is NaN/);
  });

  it("checkFiniteReadouts ignores L and V when the verdict did not run", () => {
    expect(() => checkFiniteReadouts([{ skill: "a", g: 1, L: NaN, V: NaN, S: 1 }], false, "m")).not.toThrow();
    expect(() => checkFiniteReadouts([{ skill: "a", g: 1, L: NaN, V: NaN, S: NaN }], false, "m")).toThrow(/read-out S/);
  });
});

describe("projection constants out of range are refused on load, naming the file and the field", () => {
  const cases: [string, Record<string, number>, RegExp][] = [
    ["alpha", { alpha: -1 }, /alpha must be ≥ 0/],
    ["alpha", { alpha: 1e30 }, /alpha must be ≤ 1000000000/],
    ["gamma", { gamma: 1e30 }, /gamma must be ≤/],
    ["gamma", { gamma: -0.5 }, /gamma must be ≥ 0/],
    ["delta", { delta: 1e30 }, /delta must be ≤/],
    ["tau", { tau: 1e30 }, /tau must be ≤/],
    ["tau", { tau: -1 }, /tau must be > 0/],
    ["maxShortlist", { maxShortlist: 2 ** 32 - 1 }, /maxShortlist must be an integer in \[1, 1024\]/],
  ];
  it.each(cases)("%s %o", async (_field, bad, why) => {
    const p = await Projections.random(fp, { dim: 4 });
    // The constructor refuses the value (INVALID_ARGUMENT) …
    expect(() => new Projections({ ...p.meta, wq: p.wq, ws: p.ws, ...bad })).toThrow(why);
    // … and a file carrying it is CORRUPT_FILE naming the file: write it past the constructor.
    const path = join(root, `bad-${Object.keys(bad)[0]}-${Math.abs(Object.values(bad)[0])}.gguf`);
    const { writeProjectionsFile } = await import("../../src/projections/file.js");
    await writeProjectionsFile(path, { ...p.meta, wq: p.wq, ws: p.ws, ...bad } as never);
    const err = await Projections.load(path).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "CORRUPT_FILE" });
    expect((err as Error).message.startsWith(`${path}: `)).toBe(true);
    expect((err as Error).message).toMatch(why);
  });

  it("a zeroed block of W_q in the file is CORRUPT_FILE", async () => {
    const p = await Projections.random(fp, { dim: 4 });
    const wq = p.wq.slice();
    wq.fill(0, fp.nEmbd, 2 * fp.nEmbd); // row 1
    const path = join(root, "zeroed.gguf");
    const { writeProjectionsFile } = await import("../../src/projections/file.js");
    await writeProjectionsFile(path, { ...p.meta, wq, ws: p.ws });
    await expectCode(Projections.load(path), "CORRUPT_FILE", /gavel\.w_q has 1 row of zeros .*row 1/);
  });
});
