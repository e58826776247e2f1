// Builds the addon. Default: llama.cpp and ggml compiled from node-llama-cpp's bundled source into the
// addon as static libraries with hidden symbols, for the baseline x86-64 level (GAVEL_CPU_VARIANT=avx2,
// into build/; minutes the first time, then only what changed), with cmake-js.
// GAVEL_CPU_VARIANT=avx512: the AVX-512 level, into build-avx512/. GAVEL_CUDA=1: llama.cpp with CUDA,
// also static with hidden symbols, into build-cuda/. --prebuild builds both CPU levels and copies them
// to prebuilds/linux-x64/ (avx2, which node-gyp-build finds) and prebuilds/linux-x64-avx512/ (which
// src/native/binding.ts picks on CPUs that have it). Parallel jobs: GAVEL_JOBS (default 2).
//
// --platform P cross-builds for another platform from a Linux x64 machine, with plain CMake and the
// toolchain of PLATFORMS[P] (below), into build-P/: linux-arm64 (Debian's gcc-aarch64-linux-gnu),
// win32-x64 (Debian's mingw-w64, posix threads; node.exe's N-API import library made with dlltool from
// node-api-headers' .def files), darwin-arm64 and darwin-x64 (zig's clang, `zig cc -target`, whose
// bundled macOS libc headers stand in for an SDK; the addon resolves N-API at load:
// -undefined dynamic_lookup). With --prebuild as well, the result goes to npm/P/ (the optional package
// of that platform, see scripts/build-all-platforms.mjs), stripped, with its sources hash;
// --configure-only stops after CMake's configure (the toolchain's checks).
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { llamaSourceDir, packageDir } from "./llama-source.mjs";
import { nativeSourcesHash } from "./native-sources.mjs";
import { inspectAddon } from "./platform-packages.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const cuda = process.env.GAVEL_CUDA === "1";
const prebuild = process.argv.includes("--prebuild");
const jobs = process.env.GAVEL_JOBS ?? "2";
const OUT = { avx2: "build", avx512: "build-avx512" };

/** The zig executable: ZIG on PATH, or the one .cache/zig holds (unpacked from an npm package). */
function zig() {
  for (const p of [join(root, ".cache", "zig", "zig")]) if (existsSync(p)) return p;
  return "zig";
}

/**
 * The cross targets: CMake's system name and processor, the C/C++ compilers (a wrapper is written for
 * zig, whose compiler is `zig cc -target T`), the strip program, the file the addon is, and the x86
 * level where the target is x86-64 (ggml's CPU code fixed at AVX2, as the linux-x64 prebuild).
 */
export const PLATFORMS = {
  "linux-arm64": {
    system: "Linux",
    processor: "aarch64",
    cc: "aarch64-linux-gnu-gcc",
    cxx: "aarch64-linux-gnu-g++",
    strip: "aarch64-linux-gnu-strip",
  },
  "win32-x64": {
    system: "Windows",
    processor: "AMD64",
    cc: "x86_64-w64-mingw32-gcc-posix",
    cxx: "x86_64-w64-mingw32-g++-posix",
    strip: "x86_64-w64-mingw32-strip",
    variant: "avx2",
  },
  "darwin-arm64": { system: "Darwin", processor: "arm64", zigTarget: "aarch64-macos.11.0", strip: null },
  "darwin-x64": { system: "Darwin", processor: "x86_64", zigTarget: "x86_64-macos.11.0", strip: null, variant: "avx2" },
};

/** node.exe's N-API import library for mingw, from node-api-headers' .def files (they name NODE.EXE). */
function nodeImportLib(out) {
  const defs = join(packageDir("node-api-headers"), "def");
  const names = ["js_native_api.def", "node_api.def"].flatMap((f) =>
    readFileSync(join(defs, f), "utf8").split("\n").map((l) => l.trim()).filter((l) => l && !/^(NAME|EXPORTS)\b/.test(l)),
  );
  const def = join(out, "node.def");
  writeFileSync(def, `LIBRARY node.exe\nEXPORTS\n${[...new Set(names)].join("\n")}\n`);
  const lib = join(out, "libnode.a");
  execFileSync("x86_64-w64-mingw32-dlltool", ["-d", def, "-l", lib, "-D", "node.exe"], { stdio: "inherit" });
  return lib;
}

function crossBuild(platform) {
  const t = PLATFORMS[platform];
  if (!t) throw new Error(`--platform must be one of ${Object.keys(PLATFORMS).join(", ")}, not ${platform}`);
  const out = join(root, `build-${platform}`);
  mkdirSync(out, { recursive: true });
  let { cc, cxx } = t;
  if (t.zigTarget) {
    // zig's cc/c++ as one executable each (CMake takes no compiler arguments); its cache beside the build
    const z = zig();
    for (const [name, sub] of [["cc", "cc"], ["c++", "c++"]]) {
      const w = join(out, `zig-${name}`);
      writeFileSync(w, `#!/bin/sh\nexec "${z}" ${sub} -target ${t.zigTarget} "$@"\n`);
      chmodSync(w, 0o755);
    }
    cc = join(out, "zig-cc");
    cxx = join(out, "zig-c++");
  }
  const inc = [join(packageDir("node-api-headers"), "include"), packageDir("node-addon-api")].join(";");
  const args = [
    "-S", root, "-B", out, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
    `-DCMAKE_SYSTEM_NAME=${t.system}`, `-DCMAKE_SYSTEM_PROCESSOR=${t.processor}`,
    `-DCMAKE_C_COMPILER=${cc}`, `-DCMAKE_CXX_COMPILER=${cxx}`,
    // headers and libraries of the target only, programs of the host
    "-DCMAKE_FIND_ROOT_PATH_MODE_PROGRAM=NEVER", "-DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY",
    "-DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY", "-DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY",
    `-DLLAMA_SRC_DIR=${llamaSourceDir()}`, `-DCMAKE_JS_INC=${inc}`,
    `-DCMAKE_LIBRARY_OUTPUT_DIRECTORY=${join(out, "Release")}`, `-DCMAKE_RUNTIME_OUTPUT_DIRECTORY=${join(out, "Release")}`,
  ];
  if (t.variant) args.push(`-DGAVEL_CPU_VARIANT=${t.variant}`);
  if (t.system === "Windows") args.push(`-DGAVEL_NODE_IMPORT_LIB=${nodeImportLib(out)}`);
  if (t.system === "Darwin") args.push(`-DCMAKE_OSX_DEPLOYMENT_TARGET=11.0`, "-DCMAKE_AR=" + join(out, "zig-ar"), "-DCMAKE_RANLIB=" + join(out, "zig-ranlib"));
  if (t.zigTarget) {
    // CMake's compiler checks and try_compile build static libraries, linking nothing: a zig link for
    // macOS first builds libc++, libc++abi, libunwind and compiler-rt for the target and the flags, which
    // the checks' Debug flags would do once more than the addon's own link needs
    args.push("-DCMAKE_TRY_COMPILE_TARGET_TYPE=STATIC_LIBRARY");
    // CMake requires install_name_tool for a Darwin target; it runs only at `cmake --install`, never here
    if (t.system === "Darwin") args.push("-DCMAKE_INSTALL_NAME_TOOL=/bin/true");
    for (const tool of ["ar", "ranlib"]) {
      const w = join(out, `zig-${tool}`);
      writeFileSync(w, `#!/bin/sh\nexec "${zig()}" ${tool} "$@"\n`);
      chmodSync(w, 0o755);
    }
  }
  execFileSync("cmake", args, { cwd: root, stdio: "inherit" });
  if (process.argv.includes("--configure-only")) process.exit(0); // toolchain and options checked, nothing compiled
  execFileSync("cmake", ["--build", out, "--parallel", jobs, "--target", "gavel_router"], { cwd: root, stdio: "inherit" });
  return { built: join(out, "Release", "gavel.node"), strip: t.strip };
}

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
function strip(file, program = "strip") {
  try {
    execFileSync(program, ["--strip-unneeded", file], { stdio: "inherit" });
  } catch (e) {
    console.warn(`strip unavailable (${e.message.split("\n")[0]}): ${file} ships unstripped`);
  }
}

/** Copies a built addon to dest/gavel-router.node with its sources hash. */
function ship(built, dest, stripper) {
  mkdirSync(dest, { recursive: true });
  copyFileSync(built, join(dest, "gavel-router.node"));
  if (stripper !== null) strip(join(dest, "gavel-router.node"), stripper);
  writeFileSync(join(dest, "gavel-router.sources.sha256"), nativeSourcesHash() + "\n");
  console.log(`copied ${built} to ${dest}/gavel-router.node`);
}

const platformAt = process.argv.indexOf("--platform");
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (platformAt !== -1) {
    if (cuda) throw new Error("--platform cross-builds the CPU addon only");
    const platform = process.argv[platformAt + 1];
    const { built, strip: stripper } = crossBuild(platform);
    // what it needs and exports: N-API's entry points only, no llama.cpp library (platform-packages.mjs)
    const { facts, problems } = inspectAddon(platform, built);
    console.log(`${platform}: ${facts.join("; ")}`);
    if (problems.length) throw new Error(`${built}: ${problems.join("; ")}`);
    if (prebuild) ship(built, join(root, "npm", platform, "prebuilds", platform), stripper ?? null);
    else console.log(`built ${built}`);
  } else if (prebuild) {
    if (cuda) throw new Error("--prebuild ships the CPU builds only");
    for (const [variant, folder] of [["avx2", "linux-x64"], ["avx512", "linux-x64-avx512"]]) {
      ship(build(variant), join(root, "prebuilds", folder), "strip");
    }
  } else {
    build(process.env.GAVEL_CPU_VARIANT ?? "avx2");
  }
}
