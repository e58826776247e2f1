// The per-platform addon packages (npm/<platform>/) and how the loader finds them. Every platform
// binary present in npm/ is packed and checked (file format and CPU of its platform, sources hash of
// this tree); a platform not built here is listed and skipped, unless GAVEL_TEST_PLATFORMS=all (the
// release, after scripts/build-all-platforms.mjs), which requires every one.
import { afterAll, describe, expect, it } from "vitest";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
// @ts-expect-error plain .mjs build script without types
import * as pp from "../../scripts/platform-packages.mjs";
// @ts-expect-error plain .mjs build script without types
import { nativeSourcesHash } from "../../scripts/native-sources.mjs";
import { OPTIONAL_PACKAGE_PLATFORMS, platformPackageDir, platformPackageName } from "../../src/native/platform.js";
import { addonUnavailableMessage } from "../../src/native/binding.js";
import { repoRoot } from "../helpers/paths.js";

interface Kind {
  format: string;
  arch: string;
}
const scripts = pp as {
  OPTIONAL_PLATFORMS: string[];
  binaryKind(buf: Buffer): Kind | null;
  manifestProblems(platform: string): string[];
  mainManifest(main?: unknown): { optionalDependencies: Record<string, string>; version: string };
  packFolder(dir: string, dest: string): string;
  checkPlatformTarball(platform: string, tarball: string, hash?: string): string[];
  inspectAddon(platform: string, file: string): { facts: string[]; problems: string[] };
  builtPlatforms(): string[];
};
const mainPkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
  version: string;
  files: string[];
  optionalDependencies?: Record<string, string>;
  os: string[];
  cpu: string[];
};
const x64Prebuild = join(repoRoot, "prebuilds", "linux-x64", "gavel-router.node");
const tmp = mkdtempSync(join(tmpdir(), "gavel-platforms-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("the platform packages", () => {
  it("are the same list in the loader and the build scripts, one npm/<platform>/package.json each, in step with the main package", () => {
    expect([...OPTIONAL_PACKAGE_PLATFORMS]).toEqual(scripts.OPTIONAL_PLATFORMS);
    for (const p of scripts.OPTIONAL_PLATFORMS) expect(scripts.manifestProblems(p), p).toEqual([]);
    // the main package admits every platform, and its tarball carries none of npm/
    for (const p of scripts.OPTIONAL_PLATFORMS) {
      const [os, cpu] = p.split("-");
      expect(mainPkg.os).toContain(os);
      expect(mainPkg.cpu).toContain(cpu);
    }
    expect(mainPkg.files.some((f) => f === "npm" || f.startsWith("npm/"))).toBe(false);
  });

  it("become the main package's optionalDependencies only when it is packed for a release (the lockfile lists none)", () => {
    expect(Object.keys(mainPkg.optionalDependencies ?? {}).filter((n) => n.startsWith("gavel-router-"))).toEqual([]);
    const packed = scripts.mainManifest();
    expect(packed.version).toBe(mainPkg.version);
    expect(packed.optionalDependencies).toEqual(
      Object.fromEntries(scripts.OPTIONAL_PLATFORMS.map((p) => [`gavel-router-${p}`, mainPkg.version])),
    );
  });

  it("are found from the package root: the installed one of this platform, a local build first, none for linux-x64", () => {
    expect(platformPackageName("linux", "arm64")).toBe("gavel-router-linux-arm64");
    expect(platformPackageName("win32", "x64")).toBe("gavel-router-win32-x64");
    expect(platformPackageName("linux", "x64")).toBeNull();
    expect(platformPackageName("win32", "arm64")).toBeNull();
    const root = join(tmp, "app", "node_modules", "gavel-router");
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, "package.json"), "{}");
    expect(platformPackageDir(root, "darwin", "arm64")).toBeNull(); // not installed
    const dep = join(tmp, "app", "node_modules", "gavel-router-darwin-arm64");
    mkdirSync(dep, { recursive: true });
    writeFileSync(join(dep, "package.json"), JSON.stringify({ name: "gavel-router-darwin-arm64" }));
    expect(platformPackageDir(root, "darwin", "arm64")).toBe(dep);
    expect(platformPackageDir(root, "linux", "x64")).toBeNull();
    mkdirSync(join(root, "build", "Release"), { recursive: true });
    writeFileSync(join(root, "build", "Release", "gavel.node"), "");
    expect(platformPackageDir(root, "darwin", "arm64")).toBeNull(); // the loader takes the local build
  });

  it("are named in the message of a failed load on their platform", () => {
    // as a release lists them (its package.json's optionalDependencies)
    const m = addonUnavailableMessage(new Error("cannot open"), "linux", "arm64", () => true);
    expect(m).toMatch(/optional package gavel-router-linux-arm64/);
    expect(m).toMatch(/node_modules\/gavel-router-linux-arm64\/prebuilds\/linux-arm64\/gavel-router\.node/);
    expect(m).toMatch(/--omit=optional/);
    // a CPU below the x86-64 level of the win32/darwin x64 addons: the addon's own check, named as such
    const cpu = addonUnavailableMessage(new Error("this CPU lacks avx2, which the addon's llama.cpp was compiled for"), "win32", "x64");
    expect(cpu).toMatch(/What you can do: run gavel-router on a newer x86-64 machine/);
    expect(cpu).not.toMatch(/optional package/);
  });
});

describe("a binary's platform, from its header", () => {
  it("reads ELF, PE and Mach-O headers, and nothing else", () => {
    expect(scripts.binaryKind(readFileSync(x64Prebuild))).toEqual({ format: "elf", arch: "x64" });
    const elf = Buffer.alloc(64);
    elf.writeUInt32BE(0x7f454c46, 0);
    elf.writeUInt16LE(183, 18);
    expect(scripts.binaryKind(elf)).toEqual({ format: "elf", arch: "arm64" });
    const pe = Buffer.alloc(256);
    pe.writeUInt16LE(0x5a4d, 0);
    pe.writeUInt32LE(0x80, 0x3c);
    pe.writeUInt32LE(0x4550, 0x80);
    pe.writeUInt16LE(0x8664, 0x84);
    expect(scripts.binaryKind(pe)).toEqual({ format: "pe", arch: "x64" });
    const macho = Buffer.alloc(32);
    macho.writeUInt32LE(0xfeedfacf, 0);
    macho.writeUInt32LE(0x0100000c, 4);
    expect(scripts.binaryKind(macho)).toEqual({ format: "macho", arch: "arm64" });
    macho.writeUInt32LE(0x01000007, 4);
    expect(scripts.binaryKind(macho)).toEqual({ format: "macho", arch: "x64" });
    expect(scripts.binaryKind(Buffer.from("#!/bin/sh\necho not a binary\n"))).toBeNull();
  });
});

describe("what an addon needs and exports", () => {
  it("is N-API's entry points only for the linux-x64 prebuild, and not for a library that exports more", () => {
    expect(scripts.inspectAddon("linux-x64", x64Prebuild).problems).toEqual([]);
    const libm = ["/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6"].find((f) => existsSync(f));
    if (libm) expect(scripts.inspectAddon("linux-x64", libm).problems).toEqual([expect.stringMatching(/not N-API's entry points only/)]);
  });
});

describe("a packed platform tarball", () => {
  it("fails the check with another platform's binary or a stale sources hash", () => {
    // a linux-arm64 package that carries the x86-64 addon, with a hash from other sources
    const dir = join(tmp, "fake-linux-arm64");
    mkdirSync(join(dir, "prebuilds", "linux-arm64"), { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "gavel-router-linux-arm64", version: "0.0.0", files: ["prebuilds"] }));
    copyFileSync(x64Prebuild, join(dir, "prebuilds", "linux-arm64", "gavel-router.node"));
    writeFileSync(join(dir, "prebuilds", "linux-arm64", "gavel-router.sources.sha256"), "0".repeat(64) + "\n");
    mkdirSync(join(tmp, "packs"), { recursive: true });
    const problems = scripts.checkPlatformTarball("linux-arm64", scripts.packFolder(dir, join(tmp, "packs")));
    // (its files list no THIRD_PARTY_NOTICES.md: npm packs the LICENSE it was given, not the notices)
    expect(problems).toEqual([
      expect.stringMatching(/is elf x64, not elf arm64/),
      expect.stringMatching(/sources hash is 0{64}, not this tree's/),
      expect.stringMatching(/holds no THIRD_PARTY_NOTICES\.md$/),
    ]);
  });

  const built: string[] = scripts.builtPlatforms();
  const required = process.env.GAVEL_TEST_PLATFORMS === "all";
  if (built.length === 0 && !required) console.warn("[skip] no platform package built in npm/ (node scripts/build-all-platforms.mjs)");

  it.each(required ? scripts.OPTIONAL_PLATFORMS : built)("of %s holds its platform's addon built from these sources", (platform) => {
    const tarball = scripts.packFolder(join(repoRoot, "npm", platform), join(tmp, "packs"));
    expect(scripts.checkPlatformTarball(platform, tarball, nativeSourcesHash() as string)).toEqual([]);
  });
});
