// The x86-64 levels of the prebuilt addon (src/native/cpu.ts): a CPU without the baseline gets a typed
// error before any addon is loaded (never SIGILL), and an AVX-512 CPU gets the AVX-512 prebuild.
import { describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import { AVX512_CPU_FEATURES, missingCpuFeatures, REQUIRED_CPU_FEATURES, selectCpuVariant } from "../../src/native/cpu.js";

const cpuinfo = (flags: string[]) => `processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu vme ${flags.join(" ")} lm\n\nprocessor\t: 1\n`;
const baseline = [...REQUIRED_CPU_FEATURES];
const avx512 = [...baseline, ...AVX512_CPU_FEATURES];
const pick = (text: string, forced?: string) => selectCpuVariant(() => text, "linux", "x64", forced);

describe("the prebuild a CPU runs", () => {
  it("refuses a CPU without the AVX2 baseline with NATIVE_UNAVAILABLE, naming what it lacks", () => {
    // a Sandy Bridge: AVX but no AVX2, FMA, F16C, BMI2
    const old = cpuinfo(["sse4_2", "avx"]);
    expect(missingCpuFeatures(old)).toEqual(["avx2", "fma", "f16c", "bmi2"]);
    let err: unknown;
    try {
      pick(old);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GavelError);
    expect((err as GavelError).code).toBe("NATIVE_UNAVAILABLE");
    expect((err as GavelError).message).toMatch(/lacks avx2, fma, f16c, bmi2/);
    expect((err as GavelError).message).toMatch(/What you can do/);
    // one missing feature is enough
    expect(() => pick(cpuinfo(baseline.filter((f) => f !== "f16c")))).toThrow(/lacks f16c/);
  });

  it("runs the avx2 prebuild on the baseline and the avx512 one where every AVX-512 feature is there", () => {
    expect(pick(cpuinfo(baseline))).toBe("avx2");
    expect(pick(cpuinfo(avx512))).toBe("avx512");
    // AVX-512 without VNNI (a Skylake-X) stays on avx2
    expect(pick(cpuinfo(avx512.filter((f) => f !== "avx512_vnni")))).toBe("avx2");
    expect(pick(cpuinfo(avx512), "avx2")).toBe("avx2");
    expect(() => pick(cpuinfo(baseline), "avx512")).toThrow(/GAVEL_CPU_VARIANT=avx512, but this CPU lacks avx512f/);
    expect(() => pick(cpuinfo(avx512), "sse")).toThrow(/GAVEL_CPU_VARIANT must be avx2 or avx512/);
  });

  it("does not judge where it cannot read the flags (the addon's own check answers there)", () => {
    expect(missingCpuFeatures("no flags here")).toBeNull();
    expect(pick("no flags here")).toBe("avx2");
    expect(selectCpuVariant(() => { throw new Error("EACCES"); }, "linux", "x64", undefined)).toBe("avx2");
    expect(selectCpuVariant(() => cpuinfo([]), "darwin", "arm64", undefined)).toBe("avx2");
  });

  it("passes on this machine, and its /proc/cpuinfo has the baseline", () => {
    expect(["avx2", "avx512"]).toContain(selectCpuVariant());
  });
});
