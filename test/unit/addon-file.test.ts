// Which addon file the loader takes and the check it passes before require (src/native/addon-file.ts):
// on Linux a truncated addon (a partial download or copy) is refused from its ELF headers before
// dlopen, which would kill the process with SIGBUS; the AVX-512 prebuild that is damaged or refuses the
// CPU gives way to the avx2 one with a warning; the file is found from process.platform/arch and the
// package's folders only, whatever npm_config_arch and the other variables node-gyp-build read say.
// No test here dlopens a damaged file: the loads go through a recording stand-in for require.
import { copyFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { chooseAddon, damagedAddonMessage, DamagedAddonError, elfProblem, loadAddon } from "../../src/native/addon-file.js";
import { addonUnavailableMessage } from "../../src/native/binding.js";
import { loadCudaPackage } from "../../src/native/cuda-package.js";
import { CUDA_PACKAGE_NAME, CUDA_PLATFORM, hasLocalBuild, localBuildFile } from "../../src/native/platform.js";
import { repoRoot } from "../helpers/paths.js";
import { runNode } from "../helpers/run.js";
import { tempDirs } from "../helpers/temp-dirs.js";

const newDir = tempDirs("gavel-addon-file-");
const avx2Prebuild = join(repoRoot, "prebuilds", "linux-x64", "gavel-router.node");
const avx512Prebuild = join(repoRoot, "prebuilds", "linux-x64-avx512", "gavel-router.node");
const linuxX64 = process.platform === "linux" && process.arch === "x64";

/** A package root holding copies of both linux-x64 prebuilds (the AVX-512 one cut to `avx512Bytes` when given). */
function packageCopy(avx512Bytes?: number): string {
  const root = join(newDir(), "gavel-router");
  for (const [folder, from] of [["linux-x64", avx2Prebuild], ["linux-x64-avx512", avx512Prebuild]] as const) {
    mkdirSync(join(root, "prebuilds", folder), { recursive: true });
    copyFileSync(from, join(root, "prebuilds", folder, "gavel-router.node"));
  }
  writeFileSync(join(root, "package.json"), JSON.stringify({ name: "gavel-router", version: "9.9.9" }));
  if (avx512Bytes !== undefined) writeFileSync(join(root, "prebuilds", "linux-x64-avx512", "gavel-router.node"), readFileSync(avx512Prebuild).subarray(0, avx512Bytes));
  return root;
}

/** A stand-in for require that records the files asked for and returns their name (never dlopens). */
function recorder(fail?: (file: string) => Error | undefined) {
  const files: string[] = [];
  const warnings: string[] = [];
  const load = (file: string) => {
    files.push(file);
    const err = fail?.(file);
    if (err) throw err;
    return `addon:${file}`;
  };
  return { files, warnings, load, warn: (m: string) => void warnings.push(m) };
}

describe("the ELF check before dlopen", () => {
  it("passes a whole prebuild and refuses one cut in half, naming the bytes it has and needs", () => {
    expect(elfProblem(avx2Prebuild, "x64")).toBeNull();
    expect(elfProblem(avx512Prebuild, "x64")).toBeNull();
    const half = Math.floor(statSync(avx512Prebuild).size / 2);
    const cut = join(newDir(), "half.node");
    writeFileSync(cut, readFileSync(avx512Prebuild).subarray(0, half));
    expect(elfProblem(cut, "x64")).toMatch(new RegExp(`^is truncated: ${half} bytes of the \\d+ its ELF headers describe$`));
    writeFileSync(cut, readFileSync(avx512Prebuild).subarray(0, 100));
    expect(elfProblem(cut, "x64")).toMatch(/^is truncated \(100 bytes, shorter than its program headers\)$/);
  });

  it("sizes damaged program headers against the file before allocating for them", () => {
    // a whole prebuild's first 4 KiB with e_phentsize and e_phnum at their largest: 65,535² bytes of headers
    const head = readFileSync(avx2Prebuild).subarray(0, 4096);
    head.writeUInt16LE(0xffff, 0x36);
    head.writeUInt16LE(0xffff, 0x38);
    const damaged = join(newDir(), "damaged.node");
    writeFileSync(damaged, head);
    const alloc = vi.spyOn(Buffer, "alloc");
    try {
      expect(elfProblem(damaged, "x64")).toMatch(/^is truncated \(4096 bytes, shorter than its program headers\)$/);
      expect(Math.max(0, ...alloc.mock.calls.map((c) => Number(c[0])))).toBeLessThanOrEqual(4096);
    } finally {
      alloc.mockRestore();
    }
  });

  it("refuses what is no ELF file of this machine, and never throws on a file it cannot read", () => {
    const dir = newDir();
    writeFileSync(join(dir, "text.node"), "not an addon, just text that is long enough to fill an ELF header of sixty-four bytes");
    expect(elfProblem(join(dir, "text.node"), "x64")).toBe("is not an ELF file");
    expect(elfProblem(avx2Prebuild, "arm64")).toBe("is not a 64-bit little-endian arm64 ELF file");
    expect(elfProblem(dir, "x64")).toBe("is not a file");
    expect(elfProblem(join(dir, "absent.node"), "x64")).toBe("cannot be read (ENOENT)");
    // a FIFO is refused without opening it (an open would wait for a writer)
    if (spawnSync("mkfifo", [join(dir, "fifo.node")]).status === 0) expect(elfProblem(join(dir, "fifo.node"), "x64")).toBe("is not a file");
  });
});

describe("the addon file the loader takes", () => {
  it("is GAVEL_ADDON, else a local build, else on linux-x64 the prebuild of the CPU's variant", () => {
    const root = packageCopy();
    const p = (f: string) => join(root, "prebuilds", f, "gavel-router.node");
    expect(chooseAddon(root, "avx2", {}, "linux", "x64")).toEqual({ file: p("linux-x64"), source: "prebuild" });
    expect(chooseAddon(root, "avx512", {}, "linux", "x64")).toEqual({ file: p("linux-x64-avx512"), source: "prebuild", fallback: p("linux-x64") });
    // asked for by GAVEL_CPU_VARIANT=avx512: no fallback
    expect(chooseAddon(root, "avx512", { cpuVariant: "avx512" }, "linux", "x64")).toEqual({ file: p("linux-x64-avx512"), source: "prebuild" });
    expect(chooseAddon(root, "avx512", { addon: "rel/x.node" }, "linux", "x64")).toMatchObject({ file: join(process.cwd(), "rel", "x.node"), source: "GAVEL_ADDON" });
    mkdirSync(join(root, "build", "Debug"), { recursive: true });
    writeFileSync(join(root, "build", "Debug", "gavel.node"), "");
    expect(chooseAddon(root, "avx512", {}, "linux", "x64")).toEqual({ file: join(root, "build", "Debug", "gavel.node"), source: "local-build" });
    mkdirSync(join(root, "build", "Release"), { recursive: true });
    writeFileSync(join(root, "build", "Release", "gavel.node"), "");
    // what the loader takes is what hasLocalBuild (and so the CUDA package's and platform package's skip) sees
    expect(chooseAddon(root, "avx2", {}, "linux", "x64")).toEqual({ file: join(root, "build", "Release", "gavel.node"), source: "local-build" });
    expect(localBuildFile(root)).toBe(join(root, "build", "Release", "gavel.node"));
    expect(hasLocalBuild(root)).toBe(true);
    // another .node in build/Release is no local build of this package (node-gyp-build took any)
    rmSync(join(root, "build"), { recursive: true });
    mkdirSync(join(root, "build", "Release"), { recursive: true });
    writeFileSync(join(root, "build", "Release", "other.node"), "");
    expect(hasLocalBuild(root)).toBe(false);
    expect(chooseAddon(root, "avx2", {}, "linux", "x64").source).toBe("prebuild");
  });

  it("is the optional package's prebuild elsewhere, else the package's own prebuilds/<platform>-<arch>/", () => {
    const app = newDir();
    const root = join(app, "node_modules", "gavel-router");
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, "package.json"), "{}");
    expect(chooseAddon(root, "avx2", {}, "darwin", "arm64")).toEqual({ file: join(root, "prebuilds", "darwin-arm64", "gavel-router.node"), source: "prebuild" });
    const dep = join(app, "node_modules", "gavel-router-darwin-arm64");
    mkdirSync(dep, { recursive: true });
    writeFileSync(join(dep, "package.json"), JSON.stringify({ name: "gavel-router-darwin-arm64" }));
    expect(chooseAddon(root, "avx2", {}, "darwin", "arm64")).toEqual({ file: join(dep, "prebuilds", "darwin-arm64", "gavel-router.node"), source: "platform-package" });
  });

  it("follows process.platform and process.arch only: npm_config_arch and node-gyp-build's other variables do not steer it", () => {
    const root = packageCopy();
    const saved = { ...process.env };
    try {
      Object.assign(process.env, { npm_config_arch: "arm64", npm_config_platform: "darwin", LIBC: "musl", PREBUILDS_ONLY: "1", GAVEL_ROUTER_PREBUILD: "/nowhere" });
      expect(chooseAddon(root, "avx2", {})).toEqual({ file: join(root, "prebuilds", `${process.platform}-${process.arch}`, "gavel-router.node"), source: "prebuild" });
    } finally {
      for (const k of ["npm_config_arch", "npm_config_platform", "LIBC", "PREBUILDS_ONLY", "GAVEL_ROUTER_PREBUILD"]) if (saved[k] === undefined) delete process.env[k]; else process.env[k] = saved[k];
    }
  });

  it("says why GAVEL_CPU_VARIANT=avx512 is not honoured", () => {
    const root = packageCopy();
    const why = (variant: "avx2" | "avx512", settings: { addon?: string }, platform = "linux", arch = "x64") => chooseAddon(root, variant, { cpuVariant: "avx512", ...settings }, platform, arch).notHonoured;
    expect(why("avx512", {})).toBeUndefined();
    expect(why("avx2", {})).toBe("/proc/cpuinfo could not be read or lists no CPU flags to check it against");
    expect(why("avx2", {}, "darwin", "x64")).toBe("there is no AVX-512 prebuild for darwin-x64");
    expect(why("avx512", { addon: "/x/gavel.node" })).toBe("GAVEL_ADDON names the addon to load");
    rmSync(join(root, "prebuilds", "linux-x64-avx512"), { recursive: true });
    expect(why("avx512", {})).toMatch(/prebuilds\/linux-x64-avx512\/gavel-router\.node is missing$/);
    expect(chooseAddon(root, "avx512", {}, "linux", "x64").notHonoured).toBeUndefined(); // not asked for: nothing to say
  });
});

describe.skipIf(!linuxX64)("loading the addon file", () => {
  it("refuses a truncated prebuild before require, naming the file and saying reinstall", () => {
    const root = packageCopy();
    const file = join(root, "prebuilds", "linux-x64", "gavel-router.node");
    writeFileSync(file, readFileSync(avx2Prebuild).subarray(0, 65536));
    const r = recorder();
    let err: unknown;
    try {
      loadAddon(chooseAddon(root, "avx2", {}, "linux", "x64"), r.load, r.warn, "linux", "x64");
    } catch (e) {
      err = e;
    }
    expect(r.files).toEqual([]); // never handed to require
    expect(err).toBeInstanceOf(DamagedAddonError);
    const message = damagedAddonMessage(err as DamagedAddonError, "prebuild");
    expect(message).toMatch(/^gavel-router's native addon .*prebuilds\/linux-x64\/gavel-router\.node is truncated: 65536 bytes of the \d+ its ELF headers describe, so it was not loaded \(dlopen would stop the process with SIGBUS on its missing pages\)\. What you can do: reinstall gavel-router/);
    // GAVEL_ADDON's file is checked too
    const r2 = recorder();
    expect(() => loadAddon(chooseAddon(root, "avx2", { addon: file }, "linux", "x64"), r2.load, r2.warn, "linux", "x64")).toThrow(DamagedAddonError);
    expect(r2.files).toEqual([]);
  });

  it("falls back from a truncated AVX-512 prebuild to the avx2 one with a warning", () => {
    const half = Math.floor(statSync(avx512Prebuild).size / 2);
    const root = packageCopy(half);
    const r = recorder();
    const got = loadAddon(chooseAddon(root, "avx512", {}, "linux", "x64"), r.load, r.warn, "linux", "x64");
    const avx2 = join(root, "prebuilds", "linux-x64", "gavel-router.node");
    expect(got).toEqual({ value: `addon:${avx2}`, file: avx2 });
    expect(r.files).toEqual([avx2]);
    expect(r.warnings).toEqual([expect.stringMatching(new RegExp(`^the AVX-512 prebuild .*linux-x64-avx512/gavel-router\\.node is truncated: ${half} bytes of the \\d+ its ELF headers describe \\(reinstall gavel-router to restore it\\); the avx2 prebuild runs instead \\(GAVEL_CPU_VARIANT=avx2 selects it and silences this\\)$`))]);
    // asked for by GAVEL_CPU_VARIANT=avx512: refused, not replaced
    const forced = recorder();
    expect(() => loadAddon(chooseAddon(root, "avx512", { cpuVariant: "avx512" }, "linux", "x64"), forced.load, forced.warn, "linux", "x64")).toThrow(/is truncated/);
    expect(forced.files).toEqual([]);
  });

  it("falls back from an AVX-512 prebuild that refuses the CPU at load, and passes other load errors on", () => {
    const root = packageCopy();
    const avx512 = join(root, "prebuilds", "linux-x64-avx512", "gavel-router.node");
    const avx2 = join(root, "prebuilds", "linux-x64", "gavel-router.node");
    const refusing = recorder((f) => (f === avx512 ? new Error("this CPU lacks avx512f,avx512vnni, which the addon's llama.cpp was compiled for (sse4.2,avx)") : undefined));
    expect(loadAddon(chooseAddon(root, "avx512", {}, "linux", "x64"), refusing.load, refusing.warn, "linux", "x64").file).toBe(avx2);
    expect(refusing.files).toEqual([avx512, avx2]);
    expect(refusing.warnings).toEqual([expect.stringMatching(/^the AVX-512 prebuild refused this CPU, though \/proc\/cpuinfo lists every feature it needs .*: this CPU lacks avx512f,avx512vnni, .*; the avx2 prebuild runs instead \(GAVEL_CPU_VARIANT=avx2 selects it and silences this\)$/)]);
    const other = recorder((f) => (f === avx512 ? new Error("GLIBC_2.38 not found") : undefined));
    expect(() => loadAddon(chooseAddon(root, "avx512", {}, "linux", "x64"), other.load, other.warn, "linux", "x64")).toThrow("GLIBC_2.38 not found");
    expect(other.warnings).toEqual([]);
  });

  it("says a missing file is missing, before any check", () => {
    const root = packageCopy();
    rmSync(join(root, "prebuilds"), { recursive: true });
    const r = recorder();
    expect(() => loadAddon(chooseAddon(root, "avx2", {}, "linux", "x64"), r.load, r.warn, "linux", "x64")).toThrow(/prebuilds\/linux-x64\/gavel-router\.node does not exist$/);
  });
});

describe("the messages", () => {
  it("an AVX-512 refusal under GAVEL_CPU_VARIANT=avx512 points at avx2, not at a Haswell CPU", () => {
    const avx512 = addonUnavailableMessage(new Error("this CPU lacks avx512f,avx512vnni, which the addon's llama.cpp was compiled for (…)"), "linux", "x64");
    expect(avx512).toMatch(/The AVX-512 prebuild \(GAVEL_CPU_VARIANT=avx512\) needs .* unset GAVEL_CPU_VARIANT, or set it to avx2/);
    expect(avx512).not.toMatch(/Haswell/);
    expect(addonUnavailableMessage(new Error("this CPU lacks avx2,fma, which the addon's llama.cpp was compiled for (…)"), "linux", "x64")).toMatch(/Haswell/);
  });
});

describe.skipIf(!linuxX64)("the CUDA package whose files cannot be read", () => {
  it("falls back with the reason instead of throwing, so the CPU addon is tried", () => {
    const app = newDir();
    const root = join(app, "node_modules", "gavel-router");
    mkdirSync(join(root, "prebuilds", "linux-x64"), { recursive: true });
    writeFileSync(join(root, "package.json"), JSON.stringify({ name: "gavel-router", version: "9.9.9" }));
    const prebuilds = join(app, "node_modules", CUDA_PACKAGE_NAME, "prebuilds", CUDA_PLATFORM);
    mkdirSync(join(prebuilds, "gavel-router.sources.sha256"), { recursive: true }); // a directory where the hash should be
    writeFileSync(join(app, "node_modules", CUDA_PACKAGE_NAME, "package.json"), JSON.stringify({ name: CUDA_PACKAGE_NAME }));
    copyFileSync(avx2Prebuild, join(prebuilds, "gavel-router.node"));
    const prepared: string[] = [];
    const got = loadCudaPackage(root, { cudaAddon: "auto" }, (f) => prepared.push(f), "linux", "x64");
    expect(got).toEqual({ status: { package: CUDA_PACKAGE_NAME, state: "fallback", reason: expect.stringMatching(/^its files could not be read: EISDIR/) } });
    expect(prepared).toEqual([]);
  });
});

describe.skipIf(!linuxX64)("a process started by npm with another npm_config_arch", () => {
  it("loads this machine's addon (dist/; npx tsup first)", async () => {
    // the avx2 prebuild: the file node-gyp-build used to find (the AVX-512 one never went through it)
    const cli = join(repoRoot, "dist", "cli", "gavel.js");
    const env = { ...process.env, GAVEL_ADDON: "", GAVEL_CUDA_ADDON: "off", GAVEL_CPU_VARIANT: "avx2", npm_config_arch: "arm64", npm_config_platform: "darwin", LIBC: "musl" };
    const r = await runNode([cli, "info", "--addon"], { env, timeoutMs: 120_000 });
    expect(r.code, r.err).toBe(0);
    const expected = localBuildFile(repoRoot) ?? join(repoRoot, "prebuilds", "linux-x64", "gavel-router.node");
    expect(JSON.parse(r.out)).toMatchObject({ kind: "addon", file: expected });
  });
});
