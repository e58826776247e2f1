// Builds the addon with cmake-js. Default: llama.cpp and ggml compiled from node-llama-cpp's bundled
// source into the addon as static libraries with hidden symbols, for the baseline x86-64 level
// (GAVEL_CPU_VARIANT=avx2, into build/; minutes the first time, then only what changed).
// GAVEL_CPU_VARIANT=avx512: the AVX-512 level, into build-avx512/. GAVEL_CUDA=1: llama.cpp with CUDA,
// as shared libraries, into build-cuda/. --prebuild builds both CPU levels and copies them to
// prebuilds/linux-x64/ (avx2, which node-gyp-build finds) and prebuilds/linux-x64-avx512/ (which
// src/native/binding.ts picks on CPUs that have it). Parallel jobs: GAVEL_JOBS (default 2).
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { llamaSourceDir } from "./llama-source.mjs";
import { nativeSourcesHash } from "./native-sources.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const cuda = process.env.GAVEL_CUDA === "1";
const prebuild = process.argv.includes("--prebuild");
const jobs = process.env.GAVEL_JOBS ?? "2";
const OUT = { avx2: "build", avx512: "build-avx512" };

function build(variant) {
  const out = cuda ? "build-cuda" : OUT[variant];
  if (!out) throw new Error(`GAVEL_CPU_VARIANT must be avx2 or avx512, not ${variant}`);
  const args = ["cmake-js", "build", "--out", out, "--parallel", jobs, `--CDLLAMA_SRC_DIR=${llamaSourceDir()}`];
  if (cuda) args.push("--CDGAVEL_CUDA=ON", `--CDCMAKE_CUDA_ARCHITECTURES=${process.env.CUDA_ARCHS ?? "90a"}`);
  else args.push(`--CDGAVEL_CPU_VARIANT=${variant}`);
  if (process.env.GAVEL_DEBUG === "1") args.push("--debug");
  execFileSync("npx", args, { cwd: root, stdio: "inherit" });
  return join(root, out, "Release", "gavel.node");
}

// What ships is stripped of its local symbols (~14% of the file): the addon's exports and the dynamic
// symbol table stay, so loading and stack traces through N-API are unchanged. Without binutils the copy
// stays as built.
function strip(file) {
  try {
    execFileSync("strip", ["--strip-unneeded", file], { stdio: "inherit" });
  } catch (e) {
    console.warn(`strip unavailable (${e.message.split("\n")[0]}): ${file} ships unstripped`);
  }
}

if (prebuild) {
  if (cuda) throw new Error("--prebuild ships the CPU builds only");
  const hash = nativeSourcesHash() + "\n";
  for (const [variant, folder] of [["avx2", "linux-x64"], ["avx512", "linux-x64-avx512"]]) {
    const built = build(variant);
    const dest = join(root, "prebuilds", folder);
    mkdirSync(dest, { recursive: true });
    copyFileSync(built, join(dest, "gavel-router.node"));
    strip(join(dest, "gavel-router.node"));
    writeFileSync(join(dest, "gavel-router.sources.sha256"), hash);
    console.log(`copied ${variant} to ${dest}/gavel-router.node`);
  }
} else {
  build(process.env.GAVEL_CPU_VARIANT ?? "avx2");
}
