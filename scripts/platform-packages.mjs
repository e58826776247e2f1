// The per-platform addon packages (npm/<platform>/, one per platform other than linux-x64; see
// src/native/platform.ts for how the package finds them at run time) and their checks.
//
// A platform package is `gavel-router-<platform>` with `os`/`cpu` (and for Linux `libc`) fields, so npm
// installs only the one a machine matches, holding prebuilds/<platform>/gavel-router.node and the native
// sources hash it was built from (gavel-router.sources.sha256). The binaries are not committed (a
// native change would add ~6 MB per platform to the history): scripts/build-all-platforms.mjs builds
// them at release time, packs them and packs the main package with every platform package in its
// optionalDependencies (mainManifest()); the repository's package.json lists none, so `npm ci` and the
// lockfile stay as they are.
//
// linux-x64 has one more package, gavel-router-linux-x64-cuda (npm/linux-x64-cuda/, CUDA_PLATFORM): the
// CUDA addon, built on a GPU machine (scripts/device/gpu-build.sh) and placed by scripts/cuda-package.mjs.
// It is opt-in (`npm install gavel-router gavel-router-linux-x64-cuda`): never among the main package's
// optionalDependencies, so a linux-x64 install stays the size it is. checkCudaTarball() checks its tarball.
//
// checkPlatformTarball() opens a packed tarball and checks the binary it carries: the right file
// format and CPU for the platform, what it needs and exports (inspectAddon), and the sources hash of
// this tree.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { nativeSourcesHash } from "./native-sources.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The platforms with an optional package, as `${process.platform}-${process.arch}` (src/native/platform.ts). */
export const OPTIONAL_PLATFORMS = ["linux-arm64", "win32-x64", "darwin-arm64", "darwin-x64"];

/** The opt-in CUDA package's platform (its npm/ folder and prebuilds/ folder): not in OPTIONAL_PLATFORMS. */
export const CUDA_PLATFORM = "linux-x64-cuda";
export const CUDA_PACKAGE = `gavel-router-${CUDA_PLATFORM}`;

export const platformDir = (platform) => join(root, "npm", platform);
export const platformAddon = (platform) => join(platformDir(platform), "prebuilds", platform, "gavel-router.node");

/**
 * What a binary is, from its header: { format: "elf" | "pe" | "macho", arch: "x64" | "arm64" | other },
 * or null when it is none of the three. ELF e_machine 62 / 183, PE machine 0x8664 / 0xaa64, Mach-O
 * (64-bit, little-endian) cputype 0x01000007 / 0x0100000c.
 */
export function binaryKind(buf) {
  if (buf.length >= 20 && buf.readUInt32BE(0) === 0x7f454c46) {
    const machine = buf.readUInt16LE(18);
    return { format: "elf", arch: machine === 62 ? "x64" : machine === 183 ? "arm64" : `elf-machine-${machine}` };
  }
  if (buf.length >= 64 && buf.readUInt16LE(0) === 0x5a4d) {
    const pe = buf.readUInt32LE(0x3c);
    if (pe + 6 <= buf.length && buf.readUInt32LE(pe) === 0x00004550) {
      const machine = buf.readUInt16LE(pe + 4);
      return { format: "pe", arch: machine === 0x8664 ? "x64" : machine === 0xaa64 ? "arm64" : `pe-machine-${machine}` };
    }
  }
  if (buf.length >= 8 && buf.readUInt32LE(0) === 0xfeedfacf) {
    const cpu = buf.readUInt32LE(4);
    return { format: "macho", arch: cpu === 0x01000007 ? "x64" : cpu === 0x0100000c ? "arm64" : `macho-cpu-${cpu}` };
  }
  return null;
}

/** The binary kind a platform's addon must have. */
export function expectedKind(platform) {
  const [os, arch] = platform.split("-");
  return { format: os === "win32" ? "pe" : os === "darwin" ? "macho" : "elf", arch };
}

/** Problems of npm/<platform>/package.json against the main package (empty when none). */
export function manifestProblems(platform, main = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))) {
  const file = join(platformDir(platform), "package.json");
  if (!existsSync(file)) return [`${file} is missing`];
  const pkg = JSON.parse(readFileSync(file, "utf8"));
  const [os, cpu] = platform.split("-");
  const problems = [];
  if (pkg.name !== `gavel-router-${platform}`) problems.push(`name ${pkg.name}, not gavel-router-${platform}`);
  if (pkg.version !== main.version) problems.push(`version ${pkg.version}, not the main package's ${main.version}`);
  if (JSON.stringify(pkg.os) !== JSON.stringify([os])) problems.push(`os ${JSON.stringify(pkg.os)}, not ["${os}"]`);
  if (JSON.stringify(pkg.cpu) !== JSON.stringify([cpu])) problems.push(`cpu ${JSON.stringify(pkg.cpu)}, not ["${cpu}"]`);
  if (os === "linux" && JSON.stringify(pkg.libc) !== JSON.stringify(["glibc"])) problems.push(`libc ${JSON.stringify(pkg.libc)}, not ["glibc"]`);
  if (!Array.isArray(pkg.files) || !pkg.files.includes("prebuilds")) problems.push("files does not list prebuilds");
  if (!Array.isArray(pkg.files) || !pkg.files.includes(NOTICES)) problems.push(`files does not list ${NOTICES} (llama.cpp's license, compiled into the addon)`);
  if (pkg.license !== main.license) problems.push(`license ${pkg.license}, not ${main.license}`);
  return problems;
}

/**
 * The main package's manifest as it is packed for a release: every platform package of
 * OPTIONAL_PLATFORMS optional, at its version. The CUDA package (CUDA_PACKAGE) is left out on purpose:
 * it is opt-in, so that a linux-x64 install does not download the CUDA addon.
 */
export function mainManifest(main = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))) {
  const optionalDependencies = { ...(main.optionalDependencies ?? {}) };
  for (const p of OPTIONAL_PLATFORMS) optionalDependencies[`gavel-router-${p}`] = main.version;
  return { ...main, optionalDependencies };
}

/** The notices every package with an addon carries: llama.cpp and ggml are compiled into it. */
export const NOTICES = "THIRD_PARTY_NOTICES.md";

/**
 * `npm pack` of a folder into dest; returns the tarball's path. A folder other than the main package's
 * gets the main package's LICENSE and {@link NOTICES} first (copies, git-ignored in npm/), so a
 * platform package carries the licenses of what its addon holds.
 */
export function packFolder(dir, dest, extra = []) {
  mkdirSync(dest, { recursive: true });
  if (resolve(dir) !== root) for (const f of ["LICENSE", NOTICES]) copyFileSync(join(root, f), join(dir, f));
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", dest, ...extra], { cwd: dir, encoding: "utf8" });
  return join(dest, JSON.parse(out)[0].filename);
}

/**
 * Problems of a packed platform tarball (empty when none): it must hold package/prebuilds/<platform>/
 * gavel-router.node of the platform's format and CPU, and the sources hash of this tree beside it.
 */
export function checkPlatformTarball(platform, tarball, hash = nativeSourcesHash(), rebuild = "node scripts/build-all-platforms.mjs") {
  const tmp = mkdtempSync(join(tmpdir(), "gavel-platform-"));
  try {
    execFileSync("tar", ["-xzf", tarball, "-C", tmp]);
    const dir = join(tmp, "package", "prebuilds", platform);
    const problems = [];
    const addon = join(dir, "gavel-router.node");
    if (!existsSync(addon)) return [`${tarball} holds no prebuilds/${platform}/gavel-router.node`];
    const kind = binaryKind(readFileSync(addon));
    const want = expectedKind(platform);
    if (kind === null || kind.format !== want.format || kind.arch !== want.arch) {
      problems.push(`prebuilds/${platform}/gavel-router.node is ${kind ? `${kind.format} ${kind.arch}` : "no known binary"}, not ${want.format} ${want.arch}`);
    }
    else {
      const inspected = inspectAddon(platform, addon);
      problems.push(...inspected.problems);
      const skipped = inspected.facts.find((f) => f.startsWith("not inspected"));
      if (platform === CUDA_PLATFORM && skipped) problems.push(`${skipped}: what the CUDA addon needs cannot be checked`);
    }
    const sha = join(dir, "gavel-router.sources.sha256");
    const recorded = existsSync(sha) ? readFileSync(sha, "utf8").trim() : "(missing)";
    if (recorded !== hash) problems.push(`its sources hash is ${recorded}, not this tree's ${hash}: rebuild (${rebuild})`);
    for (const f of ["LICENSE", NOTICES]) if (!existsSync(join(tmp, "package", f))) problems.push(`${tarball} holds no ${f}`);
    const others = readdirSync(join(tmp, "package", "prebuilds")).filter((d) => d !== platform);
    if (others.length > 0) problems.push(`it also holds prebuilds/${others.join(", prebuilds/")}`);
    return problems;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * Problems of a packed CUDA package (empty when none): checkPlatformTarball for CUDA_PLATFORM, so an
 * ELF x86-64 binary that exports N-API's two entry points only, needs no llama.cpp library, and, being
 * a CUDA build, needs the NVIDIA driver's libcuda.so.1 and not the CUDA runtime (linked in), with this
 * tree's sources hash beside it.
 */
export function checkCudaTarball(tarball, hash = nativeSourcesHash()) {
  return checkPlatformTarball(CUDA_PLATFORM, tarball, hash, "scripts/device/gpu-build.sh on the GPU machine, then node scripts/cuda-package.mjs");
}

/** The platforms whose addon is in npm/ now. */
export function builtPlatforms() {
  return OPTIONAL_PLATFORMS.filter((p) => existsSync(platformAddon(p)));
}

const run = (cmd, args) => execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 << 20 });

/**
 * What a built addon needs and exports, read with binutils/LLVM tools of this machine, and what is
 * wrong with it: only N-API's entry points exported (nothing of ggml/llama), no libggml/libllama (for
 * CUDA_PLATFORM, libcuda.so.1 needed and no libcudart; or,
 * on Windows, no libstdc++/libgcc/winpthread DLL) needed, and on macOS only N-API left to resolve at
 * load besides libSystem. Returns { facts: string[], problems: string[] }; a tool that is missing
 * makes a fact saying so (nothing is judged then).
 */
export function inspectAddon(platform, file) {
  const facts = [];
  const problems = [];
  const [os] = platform.split("-");
  const entryPoints = ["napi_register_module_v1", "node_api_module_get_api_version_v1"];
  const foreign = /ggml|llama|gguf/i;
  try {
    if (os === "linux") {
      const readelf = platform === "linux-arm64" ? "aarch64-linux-gnu-readelf" : "readelf";
      const dyn = run(readelf, ["-d", "--dyn-syms", "-W", file]);
      const needed = [...dyn.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
      const exported = [...dyn.matchAll(/^\s*\d+:\s+[0-9a-f]+\s+\d+\s+\w+\s+(?:GLOBAL|WEAK)\s+DEFAULT\s+(?!UND)\S+\s+(\S+)/gm)].map((m) => m[1].replace(/@.*/, ""));
      facts.push(`needs ${needed.join(", ")}`, `exports ${exported.join(", ")}`);
      if (needed.some((n) => foreign.test(n))) problems.push(`needs a llama.cpp library: ${needed.join(", ")}`);
      if (JSON.stringify([...exported].sort()) !== JSON.stringify(entryPoints)) problems.push(`exports ${exported.join(", ")}, not N-API's entry points only`);
      if (platform === CUDA_PLATFORM) {
        if (!needed.includes("libcuda.so.1")) problems.push(`needs no libcuda.so.1 (${needed.join(", ")}): not a CUDA build`);
        if (needed.some((n) => /^libcudart/.test(n))) problems.push(`needs the CUDA runtime as a shared library (${needed.filter((n) => /^libcudart/.test(n)).join(", ")}): it must be linked in statically`);
      }
    } else if (os === "win32") {
      const p = run("x86_64-w64-mingw32-objdump", ["-p", file]);
      const dlls = [...p.matchAll(/DLL Name: (\S+)/g)].map((m) => m[1]);
      const table = p.slice(p.indexOf("[Ordinal/Name Pointer] Table"));
      const exported = [...table.matchAll(/^\s*\[\s*\d+\]\s+(\S+)/gm)].map((m) => m[1]);
      facts.push(`imports from ${dlls.join(", ")}`, `exports ${exported.join(", ")}`);
      if (dlls.some((d) => foreign.test(d) || /libstdc|libgcc|winpthread/i.test(d))) problems.push(`needs ${dlls.join(", ")}`);
      if (!dlls.includes("node.exe")) problems.push("imports nothing from node.exe (N-API)");
      if (JSON.stringify([...exported].sort()) !== JSON.stringify(entryPoints)) problems.push(`exports ${exported.join(", ")}, not N-API's entry points only`);
    } else if (os === "darwin") {
      const dylibs = run("llvm-objdump", ["--macho", "--dylibs-used", file]).split("\n").slice(1).map((l) => l.trim().split(" ")[0]).filter((d) => d && !d.endsWith(".node")); // less its own id
      const exported = run("llvm-objdump", ["--macho", "--exports-trie", file]).split("\n").map((l) => /^0x[0-9A-F]+\s+_(\S+)/i.exec(l.trim())?.[1]).filter(Boolean);
      const undef = run("llvm-nm", ["-m", "-u", file]).split("\n").filter(Boolean);
      const lookedUp = undef.filter((l) => !/\(from libSystem\)/.test(l)).map((l) => l.trim().split(/\s+/).find((w) => w.startsWith("_"))?.slice(1));
      const kind = run("llvm-objdump", ["--macho", "--private-header", file]).match(/MH_MAGIC_64\s+(\S+)/)?.[1] ?? "?";
      facts.push(`cputype ${kind}`, `links ${dylibs.join(", ")}`, `resolved at load (flat): ${lookedUp.length} symbols, all N-API: ${lookedUp.every((s) => /^(napi_|node_api_)/.test(s ?? ""))}`,
        `exports ${exported.length} symbols (N-API's entry points${exported.some((e) => foreign.test(e)) ? " and ggml/llama's" : "; the rest libc++'s and compiler-rt's, which zig links in"})`);
      if (dylibs.some((d) => d !== "/usr/lib/libSystem.B.dylib")) problems.push(`links ${dylibs.join(", ")} besides libSystem`);
      for (const e of entryPoints) if (!exported.includes(e)) problems.push(`does not export ${e}`);
      if (exported.some((e) => foreign.test(e))) problems.push(`exports ggml/llama symbols: ${exported.filter((e) => foreign.test(e)).slice(0, 5).join(", ")}…`);
      const stray = lookedUp.filter((s) => !/^(napi_|node_api_)/.test(s ?? ""));
      if (stray.length) problems.push(`leaves ${stray.length} non-N-API symbols to the host process: ${stray.slice(0, 8).join(", ")}`);
    }
  } catch (e) {
    facts.push(`not inspected: ${e.message.split("\n")[0]}`);
  }
  return { facts, problems };
}
