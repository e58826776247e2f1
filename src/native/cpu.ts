/**
 * The x86-64 levels of the prebuilt addon. Its llama.cpp/ggml is compiled into it for one fixed
 * instruction set (CMakeLists.txt, GAVEL_CPU_VARIANT), and two prebuilds ship:
 *  - "avx2" (prebuilds/linux-x64/): AVX2, FMA, F16C and BMI2 with AVX and SSE4.2, the x86-64-v3 level
 *    of Intel CPUs since Haswell (2013) and AMD CPUs since Excavator (2015);
 *  - "avx512" (prebuilds/linux-x64-avx512/): that plus AVX-512 F/CD/VL/DQ/BW/VBMI/VNNI (Intel Ice
 *    Lake and newer, AMD Zen 4 and newer), picked where the CPU has them (Q8_0 models run faster).
 * On a CPU without the avx2 level ggml's code would die of SIGILL, so the loader reads /proc/cpuinfo
 * before it loads an addon and throws a typed error instead; the addon checks again (cpuid) at load.
 * The win32-x64 and darwin-x64 addons (optional packages, ./platform.ts) are built for the same avx2
 * level; there only the addon's own check at load answers. arm64 addons need nothing beyond ARMv8-A.
 */
import { readFileSync } from "node:fs";
import { GavelError, clip } from "../errors.js";
import { config } from "../config.js";

/** The features of the baseline ("avx2") prebuild, as /proc/cpuinfo names them. */
export const REQUIRED_CPU_FEATURES = ["sse4_2", "avx", "avx2", "fma", "f16c", "bmi2"] as const;

/** The features the "avx512" prebuild needs beyond the baseline, as /proc/cpuinfo names them. */
export const AVX512_CPU_FEATURES = ["avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw", "avx512vbmi", "avx512_vnni"] as const;

export type CpuVariant = "avx2" | "avx512";

/** The flags of the first processor of a /proc/cpuinfo text, or null when it lists none. */
function cpuFlags(cpuinfo: string): Set<string> | null {
  const line = cpuinfo.split("\n").find((l) => /^flags\s*:/.test(l));
  if (line === undefined) return null;
  return new Set(line.slice(line.indexOf(":") + 1).trim().split(/\s+/));
}

/**
 * The baseline features missing from a /proc/cpuinfo text, or null when the text lists no flags at
 * all (nothing to judge by).
 */
export function missingCpuFeatures(cpuinfo: string): string[] | null {
  const flags = cpuFlags(cpuinfo);
  return flags === null ? null : REQUIRED_CPU_FEATURES.filter((f) => !flags.has(f));
}

/** The message for a CPU that lacks `missing` of the baseline. */
export function unsupportedCpuMessage(missing: readonly string[]): string {
  return (
    `gavel-router's prebuilt addon needs an x86-64 CPU with ${REQUIRED_CPU_FEATURES.join(", ")} ` +
    `(Intel Haswell / AMD Excavator or newer), and this CPU lacks ${missing.join(", ")}, so the addon was not loaded ` +
    "(its llama.cpp would stop the process with an illegal instruction). " +
    "What you can do: run gavel-router on a newer x86-64 machine; in a virtual machine, let the guest see " +
    "the host CPU's features (e.g. QEMU/KVM `-cpu host`)."
  );
}

/**
 * The prebuild this machine runs: "avx512" when its CPU has every AVX-512 feature that one needs,
 * else "avx2". GAVEL_CPU_VARIANT=avx2 forces the baseline. Throws GavelError NATIVE_UNAVAILABLE on a
 * Linux x64 CPU without the baseline. Elsewhere (no prebuild to guard), or when /proc/cpuinfo cannot
 * be read or lists no flags, it answers "avx2" without judging: the addon's own check at load still
 * answers with a typed error.
 */
export function selectCpuVariant(
  readCpuinfo: () => string = () => readFileSync("/proc/cpuinfo", "utf8"),
  platform: string = process.platform,
  arch: string = process.arch,
  forced: string | undefined = config().cpuVariant,
): CpuVariant {
  if (forced !== undefined && forced !== "" && forced !== "avx2" && forced !== "avx512") {
    throw new GavelError(`GAVEL_CPU_VARIANT must be avx2 or avx512, not ${JSON.stringify(clip(forced))}`, "INVALID_ARGUMENT");
  }
  if (platform !== "linux" || arch !== "x64") return "avx2";
  let flags: Set<string> | null;
  try {
    flags = cpuFlags(readCpuinfo());
  } catch {
    return "avx2";
  }
  if (flags === null) return "avx2";
  const missing = REQUIRED_CPU_FEATURES.filter((f) => !flags.has(f));
  if (missing.length > 0) throw new GavelError(unsupportedCpuMessage(missing), "NATIVE_UNAVAILABLE");
  if (forced === "avx2") return "avx2";
  const has512 = AVX512_CPU_FEATURES.every((f) => flags.has(f));
  if (forced === "avx512" && !has512) {
    const lacks = AVX512_CPU_FEATURES.filter((f) => !flags.has(f));
    throw new GavelError(`GAVEL_CPU_VARIANT=avx512, but this CPU lacks ${lacks.join(", ")}: unset it to run the avx2 prebuild`, "NATIVE_UNAVAILABLE");
  }
  return has512 ? "avx512" : "avx2";
}
