// Builds the addon with cmake-js. Default: against the prebuilt CPU libraries of
// @node-llama-cpp/linux-x64, in seconds. GAVEL_CUDA=1: compiles llama.cpp with CUDA from the bundled
// source too (minutes). --prebuild copies the result to prebuilds/linux-x64/ for node-gyp-build.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { llamaSourceDir, prebuiltLibDir } from "./llama-source.mjs";
import { nativeSourcesHash } from "./native-sources.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const cuda = process.env.GAVEL_CUDA === "1";
const args = ["cmake-js", "build", "--out", cuda ? "build-cuda" : "build", `--CDLLAMA_SRC_DIR=${llamaSourceDir()}`];
if (cuda) {
  args.push("--CDGAVEL_CUDA=ON", `--CDCMAKE_CUDA_ARCHITECTURES=${process.env.CUDA_ARCHS ?? "90"}`);
} else {
  args.push(`--CDLLAMA_LIB_DIR=${prebuiltLibDir()}`);
}
if (process.env.GAVEL_DEBUG === "1") args.push("--debug");
execFileSync("npx", args, { cwd: root, stdio: "inherit" });
if (process.argv.includes("--prebuild")) {
  if (cuda) throw new Error("--prebuild ships the CPU build only");
  const dest = join(root, "prebuilds", "linux-x64");
  mkdirSync(dest, { recursive: true });
  copyFileSync(join(root, "build", "Release", "gavel.node"), join(dest, "gavel-router.node"));
  writeFileSync(join(dest, "gavel-router.sources.sha256"), nativeSourcesHash() + "\n");
  console.log(`copied to ${dest}/gavel-router.node`);
}
