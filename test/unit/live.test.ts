// The live context's incremental glance against a plain float64 reference: after N appended rows
// (in several uneven batches) its scores equal a from-scratch live glance over the same N rows,
// g(s) = Σ_i w_i v_i(s) / Σ_i w_i with w_i = 2^(−(N−1−i)/64), computed here from the definitions
// (projection, normalisation, max-sim, top-k vote) in float64 on fresh random inputs.
import { describe, expect, it } from "vitest";
import { KeyBank } from "../../src/bank/key-bank.js";
import { voteK } from "../../src/kernels/kernels.js";
import { LiveContext } from "../../src/route/live.js";
import type { RouterParts } from "../../src/route/parts.js";
import { freshSeed, randArray, rng } from "../helpers/random.js";

function unit(v: Float64Array): Float64Array {
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n);
  return v.map((x) => x / n);
}

/** The float64 reference: project, normalise, max-sim, top-k vote, decayed weights. */
function reference(states: Float32Array, nEmbd: number, wq: Float32Array, dim: number, skills: Float32Array[], k: number): Float64Array {
  const n = states.length / nEmbd;
  const S = skills.length;
  const acc = new Float64Array(S);
  let W = 0;
  for (let i = 0; i < n; i++) {
    const q = new Float64Array(dim);
    for (let r = 0; r < dim; r++) {
      let s = 0;
      for (let c = 0; c < nEmbd; c++) s += wq[r * nEmbd + c] * states[i * nEmbd + c];
      q[r] = s;
    }
    const qu = unit(q);
    const m = skills.map((keys) => {
      let best = -Infinity;
      for (let j = 0; j < keys.length / dim; j++) {
        let s = 0;
        for (let r = 0; r < dim; r++) s += qu[r] * keys[j * dim + r];
        best = Math.max(best, s);
      }
      return best;
    });
    const order = m.map((_, s) => s).sort((a, b) => m[b] - m[a] || a - b).slice(0, Math.min(k, S));
    const w = 2 ** (-(n - 1 - i) / 64);
    W += w;
    for (const s of order) acc[s] += w * m[s];
  }
  return acc.map((a) => a / W);
}

function unitKeys(r: () => number, rows: number, dim: number): Float32Array {
  const a = randArray(r, rows * dim);
  for (let i = 0; i < rows; i++) {
    let n = 0;
    for (let j = 0; j < dim; j++) n += a[i * dim + j] ** 2;
    n = Math.sqrt(n);
    for (let j = 0; j < dim; j++) a[i * dim + j] /= n;
  }
  return a;
}

describe("LiveContext (incremental glance)", () => {
  it.each([
    [12, 40],
    [40, 300],
  ])("after N appended rows equals a from-scratch float64 live glance (%i skills, N=%i; |Δ| ≤ 2e-6)", async (nSkills, N) => {
    const seed = freshSeed();
    const r = rng(seed);
    const nEmbd = 24, dim = 8;
    const wq = randArray(r, dim * nEmbd, 0.3);
    const bank = new KeyBank(dim);
    const skills: Float32Array[] = [];
    const handles: number[] = [];
    for (let s = 0; s < nSkills; s++) {
      const keys = unitKeys(r, 1 + Math.floor(r() * 6), dim);
      skills.push(keys);
      handles.push(bank.add(keys));
    }
    const parts = {
      model: { info: { nEmbd } },
      projections: { layer: 3, wq, dim },
      library: {
        routable: () => Int32Array.from(handles),
        keys: bank,
        idOf: (h: number) => `s${h}`,
        entry: (id: string) => ({ name: id }),
      },
    } as unknown as RouterParts;
    const live = new LiveContext(parts);
    const states = randArray(r, N * nEmbd);
    // Uneven batches: one prompt-like block, then single tokens, then a block.
    const cuts = [0, Math.floor(N / 3), Math.floor(N / 3) + 1, Math.floor(N / 3) + 2, Math.floor(N / 2), N];
    for (let c = 0; c + 1 < cuts.length; c++) {
      await live.append(states.subarray(cuts[c] * nEmbd, cuts[c + 1] * nEmbd));
      const n = cuts[c + 1];
      if (n === 0) continue;
      const ref = reference(states.subarray(0, n * nEmbd), nEmbd, wq, dim, skills, voteK(nSkills));
      const { g } = live.scores();
      for (let s = 0; s < nSkills; s++) expect(Math.abs(g[s] - ref[s]), `seed ${seed}, n ${n}, skill ${s}`).toBeLessThanOrEqual(2e-6);
    }
    expect(live.tokens).toBe(N);
    bank.dispose();
  });

  it("rejects states that are not rows of nEmbd", async () => {
    const parts = { model: { info: { nEmbd: 4 } } } as unknown as RouterParts;
    const live = new LiveContext(parts);
    await expect(live.append(new Float32Array(5))).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(live.append(Float32Array.of(1, 2, 3, Number.NaN))).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });
});
