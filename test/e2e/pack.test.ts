// The tarball is whole: `npm pack` of the built package, checked generically (no page names known
// here): every link of README.md, CHANGELOG.md and docs/*.md that points inside the repository, and
// every docs/…md path the runtime prints (grepped out of dist/), is in the tarball; the addon, the
// embedded pair, dist's entry points, LICENSE and THIRD_PARTY_NOTICES.md are there; tests, benchmark
// results, candidate models and docs/history are not.
// Then the tarball is installed into a default `npm init -y` project (CommonJS), offline from the
// cache `npm ci` filled, and examples/quickstart runs there as shipped: route.mjs and route.cjs with
// node, route.ts type-checked by the repository's tsc in strict mode.
//
// SLOW (packs ~35 MB, installs, routes twice: ~2 min on two loaded cores), so it runs in the full set
// only (`npm run test:full`, GAVEL_TEST_FULL=1; GAVEL_TEST_PACK=1 runs it alone). It needs dist/ built
// (`npm test` builds it first).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, normalize, posix } from "node:path";
import { repoRoot } from "../helpers/paths.js";
import { run, type Ran } from "../helpers/run.js";

const tsc = join(repoRoot, "node_modules", "typescript", "bin", "tsc");

/** The environment of a user's shell: no GAVEL_* overrides. */
function userEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("GAVEL_") && !k.startsWith("npm_")) env[k] = v;
  return { ...env, ...extra };
}

/** Markdown link targets of `text` (inline links and images), fragments and titles dropped. */
function linkTargets(text: string): string[] {
  const noCode = text.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  return [...noCode.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]);
}

/** Every file under `dir` (relative, posix separators). */
function walk(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name), base) : [posix.normalize(join(dir, e.name).slice(base.length + 1))],
  );
}

const run_ = process.env.GAVEL_TEST_FULL === "1" || process.env.GAVEL_TEST_PACK === "1";
if (!run_) console.warn("[skip] the pack test is slow (~2 min): it runs under npm run test:full (or GAVEL_TEST_PACK=1)");

describe.runIf(run_)("the packed tarball (slow, full set only: npm pack, offline install, two routes)", () => {
  let root: string;
  let project: string;
  let files: Set<string>;
  let unpacked: string;
  let install: Ran;
  const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
    main: string;
    module: string;
    types: string;
    bin: Record<string, string>;
    exports: Record<string, unknown>;
    engines: { node: string };
  };

  beforeAll(async () => {
    if (!existsSync(join(repoRoot, "dist", "index.js"))) throw new Error("dist/ is not built: run `npm run build` (npm test does) before this test");
    root = mkdtempSync(join(tmpdir(), "gavel-pack-"));
    // --ignore-scripts: prepack's tsup would clean dist/ under the other test files that import it
    const pack = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", root], { cwd: repoRoot, timeoutMs: 240_000 });
    if (pack.code !== 0) throw new Error(`npm pack failed: ${pack.err}`);
    const packed = (JSON.parse(pack.out) as { filename: string; files: { path: string }[] }[])[0];
    files = new Set(packed.files.map((f) => f.path));
    const tarball = join(root, packed.filename);
    project = join(root, "user-app");
    mkdirSync(project);
    const init = await run("npm", ["init", "-y"], { cwd: project, env: userEnv(), timeoutMs: 60_000 });
    if (init.code !== 0) throw new Error(`npm init -y failed: ${init.err}`);
    const args = ["install", "--no-audit", "--no-fund", "--no-update-notifier", tarball];
    install = await run("npm", [args[0], "--offline", ...args.slice(1)], { cwd: project, env: userEnv(), timeoutMs: 240_000 });
    // npm ci fills the cache with tarballs, not always with the packuments npm needs to resolve the
    // optional peers (ENOTCACHED, or ERESOLVE "Found: zod@undefined"): then --prefer-offline.
    if (install.code !== 0 && /ENOTCACHED|ERESOLVE/.test(install.err)) {
      console.warn(`npm install --offline failed (${/ENOTCACHED|ERESOLVE/.exec(install.err)![0]}); retrying with --prefer-offline`);
      install = await run("npm", [args[0], "--prefer-offline", ...args.slice(1)], { cwd: project, env: userEnv(), timeoutMs: 240_000 });
    }
    unpacked = join(project, "node_modules", "gavel-router");
    // the quick starts as the package ships them, beside the user's package.json
    if (existsSync(join(unpacked, "examples", "quickstart"))) cpSync(join(unpacked, "examples", "quickstart"), project, { recursive: true });
  }, 600_000);
  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("ships dist's entry points, the prebuilt addon and the embedded pair", () => {
    const entries = new Set<string>([pkg.main, pkg.module, pkg.types, ...Object.values(pkg.bin)]);
    const collect = (v: unknown): void => {
      if (typeof v === "string") entries.add(v);
      else if (v && typeof v === "object") for (const x of Object.values(v)) collect(x);
    };
    collect(pkg.exports);
    expect(entries.size).toBeGreaterThan(8);
    for (const e of entries) expect(files.has(posix.normalize(e)), e).toBe(true);
    expect([...files].filter((p) => /^prebuilds\/linux-x64[^/]*\/[^/]+\.node$/.test(p)).length).toBeGreaterThan(0);
    for (const p of ["models/gavel-mini.gguf", "models/gavel-mini.projections.gguf", "README.md", "CHANGELOG.md", "package.json"]) expect(files.has(p), p).toBe(true);
    // the license, and the notices of what the addons compile in (llama.cpp and ggml, MIT)
    for (const p of ["LICENSE", "THIRD_PARTY_NOTICES.md"]) expect(files.has(p), p).toBe(true);
    expect(readFileSync(join(unpacked, "LICENSE"), "utf8")).toMatch(/^MIT License\n\nCopyright \(c\) 2026 the gavel-router authors\n/);
    expect(readFileSync(join(unpacked, "THIRD_PARTY_NOTICES.md"), "utf8")).toContain("Copyright (c) 2023-2026 The ggml authors");
    for (const p of ["examples/quickstart/route.mjs", "examples/quickstart/route.cjs", "examples/quickstart/route.ts"]) expect(files.has(p), p).toBe(true);
    expect([...files].some((p) => p.startsWith("examples/skills/") && p.endsWith("/SKILL.md"))).toBe(true);
  });

  it("ships nothing of tests, benchmark results, candidate models or the docs' history", () => {
    expect([...files].filter((p) => /^(test|bench|src)\/|^models\/candidates\/|^docs\/(history|api)\/|(^|\/)node_modules\//.test(p))).toEqual([]);
  });

  it("ships no build inputs of the addon: an installed copy cannot build it (a build needs a clone and its dev dependencies)", () => {
    expect([...files].filter((p) => /^native\/|^CMakeLists\.txt$|^scripts\/|\.(cpp|cu|h)$/.test(p))).toEqual([]);
  });

  it("carries linux-x64's addons only: the other platforms' come in their optional packages (npm/<platform>/)", () => {
    expect([...files].filter((p) => p.startsWith("npm/"))).toEqual([]);
    const folders = new Set([...files].filter((p) => p.startsWith("prebuilds/")).map((p) => p.split("/")[1]));
    expect([...folders].sort()).toEqual(["linux-x64", "linux-x64-avx512"]);
  });

  it("every in-repository link of README.md, CHANGELOG.md, THIRD_PARTY_NOTICES.md and docs/*.md resolves inside the tarball", () => {
    const pages = [...files].filter((p) => /^(README|CHANGELOG|THIRD_PARTY_NOTICES)\.md$/.test(p) || /^docs\/[^/]+\.md$/.test(p) || /^examples\/.*README\.md$/.test(p));
    expect(pages.length).toBeGreaterThan(1);
    const dirs = new Set([...files].flatMap((p) => p.split("/").slice(0, -1).map((_, i, a) => a.slice(0, i + 1).join("/"))));
    const broken: string[] = [];
    let checked = 0;
    for (const page of pages) {
      for (const target of linkTargets(readFileSync(join(repoRoot, page), "utf8"))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("#")) continue; // a URL (http, mailto) or an anchor
        const path = decodeURIComponent(target.split("#")[0].split("?")[0]);
        const resolved = posix.normalize(posix.join(posix.dirname(page), path)).replace(/\/$/, "");
        checked++;
        if (resolved.startsWith("..") || !(files.has(resolved) || dirs.has(resolved))) broken.push(`${page}: ${target}`);
      }
    }
    expect(checked).toBeGreaterThan(0);
    expect(broken).toEqual([]);
  });

  it("every docs/…md or examples/… path the runtime prints is in the tarball", () => {
    const printed = new Set<string>();
    for (const f of walk(join(repoRoot, "dist")).filter((p) => /\.(c?js)$/.test(p))) {
      const text = readFileSync(join(repoRoot, "dist", f), "utf8");
      for (const m of text.matchAll(/\b((?:docs|examples)\/[\w./-]*\w)/g)) if (/\.(md|json)$|^examples\/[\w-]+$/.test(m[1])) printed.add(m[1]);
    }
    const dirs = new Set([...files].flatMap((p) => p.split("/").slice(0, -1).map((_, i, a) => a.slice(0, i + 1).join("/"))));
    expect([...printed].filter((p) => !files.has(normalize(p)) && !dirs.has(p))).toEqual([]);
  });

  it("engines admits the Node that runs this test", () => {
    const floor = /^>=\s*(\d+)(?:\.(\d+))?/.exec(pkg.engines.node);
    expect(floor, pkg.engines.node).not.toBeNull();
    const [major, minor] = process.versions.node.split(".").map(Number);
    const [fMajor, fMinor] = [Number(floor![1]), Number(floor![2] ?? 0)];
    expect(major > fMajor || (major === fMajor && minor >= fMinor)).toBe(true);
  });

  it("installs into a default `npm init -y` project (CommonJS), offline", () => {
    expect(install.code, install.err + install.out).toBe(0);
    const user = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as { type?: string };
    expect(user.type ?? "commonjs").toBe("commonjs");
    expect(statSync(join(unpacked, "models", "gavel-mini.gguf")).size).toBeGreaterThan(1_000_000);
  });

  it.each(["route.mjs", "route.cjs"])("examples/quickstart/%s runs as shipped and routes the thumbnail task", async (file) => {
    const res = await run(process.execPath, [join(project, file)], { cwd: project, env: userEnv(), timeoutMs: 240_000 });
    expect(res.code, res.err + res.out).toBe(0);
    expect(res.out).toMatch(/^installed 24 skills from .*node_modules\/gavel-router\/examples\/skills$/m);
    expect(res.out).toMatch(/^chosen: image-resizing$/m);
  }, 300_000);

  it("examples/quickstart/route.ts type-checks in strict mode against the installed types; reading the optional abstention unchecked does not", async () => {
    const check = (file: string) =>
      run(process.execPath, [tsc, "--strict", "--noEmit", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--types", "node", "--typeRoots", join(repoRoot, "node_modules", "@types"), file], {
        cwd: project,
        timeoutMs: 240_000,
      });
    const ok = await check("route.ts");
    expect(ok.code, ok.out + ok.err).toBe(0);
    // the strict check bites: the mistake README's abstention example once made
    const unchecked = readFileSync(join(project, "route.ts"), "utf8").replace(/const why = [^;]+;/, "const why = result.abstention.reason;");
    expect(unchecked).toContain("const why = result.abstention.reason;");
    writeFileSync(join(project, "unchecked.ts"), unchecked);
    const bad = await check("unchecked.ts");
    expect(bad.code).not.toBe(0);
    expect(bad.out + bad.err).toMatch(/result\.abstention' is possibly 'undefined'/);
  }, 300_000);
});

