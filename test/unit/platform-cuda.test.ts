// The opt-in CUDA package (gavel-router-linux-x64-cuda) as an install sees it: a temporary app whose
// node_modules holds gavel-router (this checkout's dist, package.json, CMakeLists.txt, prebuilds and
// models) and beside it a CUDA package whose binary cannot load: an ELF that needs a library no
// machine has (built here with cc, the way a CUDA addon needs libcuda.so.1 and cuBLAS), or, without cc,
// a truncated addon; both are genuine dlopen failures. The loader must fall back to the CPU addon,
// keep the reason (addonStatus(), the GAVEL_CUDA_FALLBACK warning) and route as the CPU addon does.
// Needs dist/ (npx tsup). Linux x64 only: the CUDA package exists nowhere else.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "../helpers/paths.js";
import { runNode } from "../helpers/run.js";
import { cudaPackageCandidate } from "../../src/native/cuda-package.js";
// @ts-expect-error plain .mjs build script without types
import * as pp from "../../scripts/platform-packages.mjs";
// @ts-expect-error plain .mjs build script without types
import { nativeSourcesHash } from "../../scripts/native-sources.mjs";
import { CUDA_PACKAGE_NAME, CUDA_PLATFORM } from "../../src/native/platform.js";

const scripts = pp as {
  CUDA_PACKAGE: string;
  CUDA_PLATFORM: string;
  OPTIONAL_PLATFORMS: string[];
  manifestProblems(platform: string): string[];
  mainManifest(main?: unknown): { optionalDependencies: Record<string, string> };
  packFolder(dir: string, dest: string): string;
  checkCudaTarball(tarball: string, hash?: string): string[];
  platformAddon(platform: string): string;
};
const linuxX64 = process.platform === "linux" && process.arch === "x64";
const hasCc = spawnSync("sh", ["-c", "command -v cc"], { stdio: "ignore" }).status === 0;
const cpuHash = readFileSync(join(repoRoot, "prebuilds", "linux-x64", "gavel-router.sources.sha256"), "utf8").trim();
const tmp = mkdtempSync(join(tmpdir(), "gavel-cuda-pkg-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/**
 * A shared object built with cc that needs `sonames` (each a stub library made, linked against and
 * deleted, so the result needs a library that is no longer anywhere) and exports N-API's two entry
 * points only (never called: it is not meant to load).
 */
function elfNeeding(dir: string, sonames: string[]): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "stub.c"), "int gavel_test_stub(void) { return 1; }\n");
  const libs: string[] = [];
  for (const [i, soname] of sonames.entries()) {
    const cc = spawnSync("cc", ["-shared", "-fPIC", "-o", join(dir, `libstub${i}.so`), join(dir, "stub.c"), `-Wl,-soname,${soname}`], { encoding: "utf8" });
    if (cc.status !== 0) throw new Error(cc.stderr);
    libs.push(`-lstub${i}`);
  }
  writeFileSync(
    join(dir, "addon.c"),
    '#define API __attribute__((visibility("default")))\n' +
      "API void* napi_register_module_v1(void* env, void* exports) { (void)env; return exports; }\n" +
      "API int node_api_module_get_api_version_v1(void) { return 8; }\n" +
      "int gavel_test_stub(void);\nint gavel_test_use(void) { return gavel_test_stub(); }\n",
  );
  const out = join(dir, "addon.node");
  const cc = spawnSync("cc", ["-shared", "-fPIC", "-fvisibility=hidden", "-o", out, join(dir, "addon.c"), `-L${dir}`, "-Wl,--no-as-needed", ...libs], { encoding: "utf8" });
  if (cc.status !== 0) throw new Error(cc.stderr);
  for (let i = 0; i < sonames.length; i++) rmSync(join(dir, `libstub${i}.so`));
  return out;
}

describe("the CUDA package's place in the loader's order", () => {
  it("is tried on linux-x64 only, after GAVEL_ADDON and a local build, unless GAVEL_CUDA_ADDON=off", () => {
    const root = join(tmp, "order", "node_modules", "gavel-router");
    mkdirSync(join(root, "prebuilds", "linux-x64"), { recursive: true });
    writeFileSync(join(root, "package.json"), JSON.stringify({ name: "gavel-router", version: "9.9.9" }));
    writeFileSync(join(root, "prebuilds", "linux-x64", "gavel-router.sources.sha256"), "a".repeat(64) + "\n");
    const auto = { cudaAddon: "auto" as const };
    expect(cudaPackageCandidate(root, auto, "darwin", "arm64")).toBeNull();
    expect(cudaPackageCandidate(root, auto, "linux", "arm64")).toBeNull();
    expect(cudaPackageCandidate(root, auto, "linux", "x64")).toEqual({ status: { package: CUDA_PACKAGE_NAME, state: "not-installed" } });
    const pkg = join(tmp, "order", "node_modules", CUDA_PACKAGE_NAME);
    const prebuilds = join(pkg, "prebuilds", CUDA_PLATFORM);
    mkdirSync(prebuilds, { recursive: true });
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: CUDA_PACKAGE_NAME }));
    expect(cudaPackageCandidate(root, auto, "linux", "x64")).toMatchObject({ status: { state: "fallback", reason: expect.stringMatching(/holds no prebuilds\/linux-x64-cuda\/gavel-router\.node/) } });
    writeFileSync(join(prebuilds, "gavel-router.node"), "");
    expect(cudaPackageCandidate(root, auto, "linux", "x64")).toMatchObject({ status: { state: "fallback", reason: expect.stringMatching(/records no sources hash/) } });
    writeFileSync(join(prebuilds, "gavel-router.sources.sha256"), "b".repeat(64) + "\n");
    expect(cudaPackageCandidate(root, auto, "linux", "x64")).toMatchObject({
      status: { state: "fallback", reason: expect.stringMatching(/built from other native sources \(sources hash bbbbbbbbbbbb…\) than this gavel-router \(aaaaaaaaaaaa…\): install gavel-router-linux-x64-cuda@9\.9\.9/) },
    });
    writeFileSync(join(prebuilds, "gavel-router.sources.sha256"), "a".repeat(64) + "\n");
    expect(cudaPackageCandidate(root, auto, "linux", "x64")).toMatchObject({ status: { state: "fallback", reason: "its addon is not an ELF file" } });
    copyFileSync(join(repoRoot, "prebuilds", "linux-x64", "gavel-router.node"), join(prebuilds, "gavel-router.node"));
    expect(cudaPackageCandidate(root, auto, "linux", "x64")).toEqual({ file: join(prebuilds, "gavel-router.node") });
    expect(cudaPackageCandidate(root, { cudaAddon: "off" }, "linux", "x64")).toEqual({ status: { package: CUDA_PACKAGE_NAME, state: "off", reason: "GAVEL_CUDA_ADDON=off" } });
    expect(cudaPackageCandidate(root, { ...auto, addon: "/x/gavel.node" }, "linux", "x64")).toMatchObject({ status: { state: "skipped", reason: expect.stringMatching(/GAVEL_ADDON is set/) } });
    mkdirSync(join(root, "build", "Release"), { recursive: true });
    writeFileSync(join(root, "build", "Release", "gavel.node"), "");
    expect(cudaPackageCandidate(root, auto, "linux", "x64")).toMatchObject({ status: { state: "skipped", reason: expect.stringMatching(/a local build/) } });
  });
});

/** What the child prints. */
interface ChildOut {
  status: { file: string; source: string; cuda: { package: string; state: string; file?: string; reason?: string } };
  cuda: boolean;
  kernelIsa: string;
  installed?: number;
  route?: { name: string | null; shortlist: [string, number][] };
}

describe.skipIf(!linuxX64)("an installed CUDA package whose addon cannot load", () => {
  const app = join(tmp, "app");
  const root = join(app, "node_modules", "gavel-router");
  const cudaDir = join(app, "node_modules", CUDA_PACKAGE_NAME, "prebuilds", CUDA_PLATFORM);
  const skills = join(tmp, "skills");
  // loads the addon, prints its status, and with ROUTE=1 routes a task over three example skills
  const child = [
    `import { loadBinding, addonStatus, Model, Router, defaultModelPaths } from ${JSON.stringify(join(root, "dist", "index.js"))};`,
    "const b = loadBinding();",
    "const out = { status: addonStatus(), cuda: b.buildInfo().cuda, kernelIsa: b.kernelIsa() };",
    "if (process.argv[1] === 'route') {",
    "  const paths = defaultModelPaths();",
    "  const model = await Model.load(paths.model, { contextSize: 2048 });",
    `  const router = await Router.open(model, { projections: paths.projections, bankDir: ${JSON.stringify(join(tmp, "bank-"))} + process.pid, skillBudget: 1024 });`,
    `  out.installed = (await router.install(${JSON.stringify(skills)})).installed.length;`,
    "  const r = await router.route('Turn the 400 product photos in ./photos into 256 pixel square thumbnails in WebP.');",
    "  out.route = { name: r.name, shortlist: r.shortlist.map((c) => [c.name, c.score]) };",
    "  await router.close(); await model.dispose();",
    "}",
    "console.log(JSON.stringify(out));",
  ].join("\n");
  const load = async (env: Record<string, string>, mode = "status") => {
    const r = await runNode(["--input-type=module", "-e", child, mode], { env: { ...process.env, GAVEL_ADDON: "", GAVEL_CUDA_ADDON: "", ...env }, timeoutMs: 300_000 });
    expect(r.code, r.err).toBe(0);
    return { ...(JSON.parse(r.out.trim().split("\n").pop()!) as ChildOut), err: r.err };
  };
  const placeBinary = (file: string, hash = cpuHash) => {
    copyFileSync(file, join(cudaDir, "gavel-router.node"));
    writeFileSync(join(cudaDir, "gavel-router.sources.sha256"), hash + "\n");
  };
  let broken: string;

  beforeAll(() => {
    mkdirSync(root, { recursive: true });
    for (const f of ["package.json", "CMakeLists.txt"]) copyFileSync(join(repoRoot, f), join(root, f));
    cpSync(join(repoRoot, "dist"), join(root, "dist"), { recursive: true }); // a copy: the package root is found from dist's real path
    for (const d of ["prebuilds", "models", "node_modules"]) symlinkSync(join(repoRoot, d), join(root, d));
    mkdirSync(cudaDir, { recursive: true });
    writeFileSync(join(app, "node_modules", CUDA_PACKAGE_NAME, "package.json"), readFileSync(join(repoRoot, "npm", CUDA_PLATFORM, "package.json")));
    if (hasCc) broken = elfNeeding(join(tmp, "elf"), ["libgavel-test-absent-cuda.so.1"]);
    else {
      console.warn("[cc missing] the CUDA package's broken binary is a truncated addon, not one that needs an absent library");
      broken = join(tmp, "truncated.node");
      writeFileSync(broken, readFileSync(join(repoRoot, "prebuilds", "linux-x64", "gavel-router.node")).subarray(0, 65536));
    }
    mkdirSync(skills);
    for (const s of ["image-resizing", "dockerfile", "sql-query-tuning"]) cpSync(join(repoRoot, "examples", "skills", s), join(skills, s), { recursive: true });
  });

  it("falls back to the CPU addon with the loader's reason and a warning, and routes as the CPU addon does", async () => {
    placeBinary(broken);
    const fell = await load({}, "route");
    expect(fell.status.source).toBe("prebuild");
    expect(fell.status.file).toMatch(/prebuilds\/linux-x64(-avx512)?\/gavel-router\.node$/);
    expect(fell.status.cuda).toMatchObject({ package: CUDA_PACKAGE_NAME, state: "fallback", file: join(cudaDir, "gavel-router.node") });
    expect(fell.status.cuda.reason).toMatch(hasCc ? /^its addon did not load: .*libgavel-test-absent-cuda\.so\.1: cannot open shared object file/ : /^its addon is truncated: 65536 bytes of the \d+ its ELF headers describe/);
    expect(fell.cuda).toBe(false);
    expect(fell.err).toMatch(/\[GAVEL_CUDA_FALLBACK\] Warning: gavel-router-linux-x64-cuda is installed but not used, its addon did not load/);
    expect(fell.installed).toBe(3);
    expect(fell.route?.name).toBe("image-resizing");
    // the same route as a process that never tries the CUDA package
    const off = await load({ GAVEL_CUDA_ADDON: "off" }, "route");
    expect(off.status.cuda).toEqual({ package: CUDA_PACKAGE_NAME, state: "off", reason: "GAVEL_CUDA_ADDON=off" });
    expect(off.err).not.toMatch(/GAVEL_CUDA_FALLBACK/);
    expect(off.route).toEqual(fell.route);
  }, 600_000);

  it("falls back on a truncated addon and on one built from other native sources without loading them, and on one in which no CUDA device answers", async () => {
    writeFileSync(join(tmp, "truncated.node"), readFileSync(join(repoRoot, "prebuilds", "linux-x64", "gavel-router.node")).subarray(0, 65536));
    placeBinary(join(tmp, "truncated.node"));
    const truncated = await load({});
    // dlopen would map the missing pages and die of SIGBUS: the loader refuses it by its ELF headers first
    expect(truncated.status.cuda).toMatchObject({ state: "fallback", reason: expect.stringMatching(/^its addon is truncated: 65536 bytes of the \d+ its ELF headers describe/) });
    expect(truncated.kernelIsa).toMatch(/^(avx512|avx2|generic)$/);
    // an addon that loads but is no CUDA build (the CPU prebuild in the package's place): refused at init
    placeBinary(join(repoRoot, "prebuilds", "linux-x64", "gavel-router.node"));
    const noDevice = await load({});
    expect(noDevice.status.cuda).toMatchObject({ state: "fallback", reason: expect.stringMatching(/^its addon loaded, but no CUDA device answered \(ggml found CPU/) });
    expect(noDevice.status.source).toBe("prebuild");
    placeBinary(broken, "0".repeat(64));
    const stale = await load({});
    expect(stale.status.cuda).toMatchObject({ state: "fallback", reason: expect.stringMatching(/built from other native sources \(sources hash 000000000000…\)/) });
    expect(stale.status.source).toBe("prebuild");
  }, 300_000);

  it("is reported by `gavel info --addon`, skipped under GAVEL_ADDON, and reported not-installed once removed", async () => {
    placeBinary(broken);
    const cli = await runNode([join(root, "dist", "cli", "gavel.js"), "info", "--addon"], { env: { ...process.env, GAVEL_ADDON: "", GAVEL_CUDA_ADDON: "" }, timeoutMs: 120_000 });
    expect(cli.code, cli.err).toBe(0);
    const info = JSON.parse(cli.out) as ChildOut["status"] & { kind: string; build: { cuda: boolean } };
    expect(info).toMatchObject({ kind: "addon", source: "prebuild", build: { cuda: false }, cuda: { state: "fallback", reason: expect.stringMatching(/^its addon /) } });
    const explicit = await load({ GAVEL_ADDON: join(repoRoot, "prebuilds", "linux-x64", "gavel-router.node") });
    expect(explicit.status).toMatchObject({ source: "GAVEL_ADDON", cuda: { state: "skipped" } });
    expect(explicit.err).not.toMatch(/GAVEL_CUDA_FALLBACK/);
    rmSync(join(app, "node_modules", CUDA_PACKAGE_NAME), { recursive: true });
    const none = await load({});
    expect(none.status.cuda).toEqual({ package: CUDA_PACKAGE_NAME, state: "not-installed" });
    expect(none.status.source).toBe("prebuild");
  }, 300_000);
});

describe("the CUDA package", () => {
  it("has its manifest in npm/linux-x64-cuda/ (linux, x64, glibc), and stays out of the released main package's optionalDependencies", () => {
    expect(scripts.CUDA_PLATFORM).toBe(CUDA_PLATFORM);
    expect(scripts.CUDA_PACKAGE).toBe(CUDA_PACKAGE_NAME);
    expect(scripts.manifestProblems(CUDA_PLATFORM)).toEqual([]);
    expect(scripts.OPTIONAL_PLATFORMS).not.toContain(CUDA_PLATFORM);
    const released = scripts.mainManifest();
    expect(Object.keys(released.optionalDependencies).length).toBe(scripts.OPTIONAL_PLATFORMS.length);
    expect(released.optionalDependencies).not.toHaveProperty(CUDA_PACKAGE_NAME);
  });

  /** npm/linux-x64-cuda's manifest with `binary` as its addon, packed; returns the tarball. */
  const pack = (name: string, binary: string, hash: string) => {
    const dir = join(tmp, "pkg-" + name);
    mkdirSync(join(dir, "prebuilds", CUDA_PLATFORM), { recursive: true });
    copyFileSync(join(repoRoot, "npm", CUDA_PLATFORM, "package.json"), join(dir, "package.json"));
    copyFileSync(binary, join(dir, "prebuilds", CUDA_PLATFORM, "gavel-router.node"));
    writeFileSync(join(dir, "prebuilds", CUDA_PLATFORM, "gavel-router.sources.sha256"), hash + "\n");
    mkdirSync(join(tmp, "packs-" + name), { recursive: true });
    return scripts.packFolder(dir, join(tmp, "packs-" + name));
  };

  it.skipIf(!linuxX64)("tarball check rejects the CPU prebuild (no libcuda needed) and a stale sources hash", () => {
    const problems = scripts.checkCudaTarball(pack("cpu", join(repoRoot, "prebuilds", "linux-x64", "gavel-router.node"), "0".repeat(64)));
    expect(problems).toEqual([
      expect.stringMatching(/^needs no libcuda\.so\.1 \(libstdc\+\+\.so\.6, .*\): not a CUDA build$/),
      expect.stringMatching(/sources hash is 0{64}, not this tree's .*scripts\/device\/gpu-build\.sh on the GPU machine, then node scripts\/cuda-package\.mjs/),
    ]);
  });

  it.skipIf(!linuxX64 || !hasCc)("tarball check passes an ELF that needs libcuda.so.1 and exports N-API's entry points only, and rejects a shared CUDA runtime", () => {
    const hash = nativeSourcesHash() as string;
    expect(scripts.checkCudaTarball(pack("cuda", elfNeeding(join(tmp, "elf-cuda"), ["libcuda.so.1", "libcublas.so.13"]), hash), hash)).toEqual([]);
    const cudart = pack("cudart", elfNeeding(join(tmp, "elf-cudart"), ["libcuda.so.1", "libcudart.so.13"]), hash);
    expect(scripts.checkCudaTarball(cudart, hash)).toEqual([expect.stringMatching(/needs the CUDA runtime as a shared library \(libcudart\.so\.13\): it must be linked in statically/)]);
    const empty = pack("empty", "/dev/null", hash);
    expect(scripts.checkCudaTarball(empty, hash)).toEqual([expect.stringMatching(/is no known binary, not elf x64/)]);
  });

  const placed = existsSync(scripts.platformAddon(CUDA_PLATFORM));
  const required = process.env.GAVEL_TEST_PLATFORMS === "all";
  if (!placed && !required) console.warn("[skip] no CUDA addon placed in npm/linux-x64-cuda/ (node scripts/cuda-package.mjs <built gavel.node>)");
  it.skipIf(!placed && !required)("tarball of npm/linux-x64-cuda holds a CUDA addon built from these sources", () => {
    const tarball = scripts.packFolder(join(repoRoot, "npm", CUDA_PLATFORM), join(tmp, "packs-cuda-placed"));
    expect(scripts.checkCudaTarball(tarball, nativeSourcesHash() as string)).toEqual([]);
  });
});
