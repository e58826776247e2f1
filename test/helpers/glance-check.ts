// The check both glance test files make against the float64 oracle: every m within `tol` of the
// reference, and an argmax that differs from the reference's only on a near tie (both keys score
// within `tol` of each other for that query row).
import { expect } from "vitest";
import { dot, row } from "../oracles/glance-reference.js";

interface MaxSim {
  m: ArrayLike<number>;
  argmax: ArrayLike<number>;
}

export function expectMaxSimNearReference(
  got: MaxSim,
  want: MaxSim,
  queries: Float32Array,
  bank: Float32Array,
  offsets: ArrayLike<number>,
  dim: number,
  nSkills: number,
  tol: number,
): void {
  for (let c = 0; c < got.m.length; c++) {
    expect(Math.abs(got.m[c] - want.m[c])).toBeLessThanOrEqual(tol);
    if (got.argmax[c] !== want.argmax[c]) {
      const s = c % nSkills;
      const q = row(queries, Math.floor(c / nSkills), dim);
      const a = dot(q, row(bank, offsets[s] + got.argmax[c], dim));
      const b = dot(q, row(bank, offsets[s] + want.argmax[c], dim));
      expect(Math.abs(a - b)).toBeLessThanOrEqual(tol);
    }
  }
}
