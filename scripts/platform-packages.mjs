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
// checkPlatformTarball() opens a packed tarball and checks the binary it carries: the right file
// format and CPU for the platform, and the sources hash of this tree.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { nativeSourcesHash } from "./native-sources.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The platforms with an optional package, as `${process.platform}-${process.arch}` (src/native/platform.ts). */
export const OPTIONAL_PLATFORMS = ["linux-arm64", "win32-x64", "darwin-arm64", "darwin-x64"];

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
  if (!Array.isArray(pkg.files) || !pkg.files.includes("prebuilds")) problems.push("files does not list prebuilds");
  if (pkg.license !== main.license) problems.push(`license ${pkg.license}, not ${main.license}`);
  return problems;
}

/** The main package's manifest as it is packed for a release: every platform package optional, at its version. */
export function mainManifest(main = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))) {
  const optionalDependencies = { ...(main.optionalDependencies ?? {}) };
  for (const p of OPTIONAL_PLATFORMS) optionalDependencies[`gavel-router-${p}`] = main.version;
  return { ...main, optionalDependencies };
}

/** `npm pack` of a folder into dest; returns the tarball's path. */
export function packFolder(dir, dest, extra = []) {
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", dest, ...extra], { cwd: dir, encoding: "utf8" });
  return join(dest, JSON.parse(out)[0].filename);
}

/**
 * Problems of a packed platform tarball (empty when none): it must hold package/prebuilds/<platform>/
 * gavel-router.node of the platform's format and CPU, and the sources hash of this tree beside it.
 */
export function checkPlatformTarball(platform, tarball, hash = nativeSourcesHash()) {
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
    const sha = join(dir, "gavel-router.sources.sha256");
    const recorded = existsSync(sha) ? readFileSync(sha, "utf8").trim() : "(missing)";
    if (recorded !== hash) problems.push(`its sources hash is ${recorded}, not this tree's ${hash}: rebuild (node scripts/build-all-platforms.mjs)`);
    const others = readdirSync(join(tmp, "package", "prebuilds")).filter((d) => d !== platform);
    if (others.length > 0) problems.push(`it also holds prebuilds/${others.join(", prebuilds/")}`);
    return problems;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** The platforms whose addon is in npm/ now. */
export function builtPlatforms() {
  return OPTIONAL_PLATFORMS.filter((p) => existsSync(platformAddon(p)));
}
