// The README's quick starts, run as a user runs them (issue 16): the package is packed (`npm pack`),
// the tarball is installed into an empty project with no network (`npm install --offline`, from the
// cache `npm ci` filled), and the quick-start blocks, cut verbatim out of README.md, run in that
// project against what the package ships: the embedded gavel-mini pair and examples/skills. The TS
// check compiles the JS quick starts, unchanged, as strict TypeScript against the installed types.
// test/e2e/readme.test.ts runs every ```js block of the README from the repository; this one proves
// that the published package alone is enough.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "../helpers/paths.js";
import { run as runAsync, runNode, type Ran } from "../helpers/run.js";

/** Runs a command asynchronously (a long spawnSync would block the worker's RPC to vitest). */
function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 240_000): Promise<Ran> {
  return runAsync(cmd, args, { cwd, env, timeoutMs, killSignal: "SIGKILL" });
}

/** The first ```lang block after the heading `## title` (and before the next `## ` heading). */
function blockUnder(markdown: string, title: string, lang: string): string {
  const at = markdown.indexOf(`\n## ${title}\n`);
  if (at < 0) throw new Error(`README.md has no "## ${title}" section`);
  const next = markdown.indexOf("\n## ", at + 1);
  const section = markdown.slice(at, next < 0 ? undefined : next);
  const m = new RegExp("```" + lang + "\\n([\\s\\S]*?)```").exec(section);
  if (!m) throw new Error(`"## ${title}" has no \`\`\`${lang} block`);
  return m[1];
}

/** The environment of a user's shell: no GAVEL_* overrides from the developer's or CI's. */
function userEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("GAVEL_")) env[k] = v;
  return { ...env, ...extra };
}

describe("the README quick starts, from the packed package in a fresh project", () => {
  const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
  const modelJs = blockUnder(readme, "Quick start: the model", "js");
  const routerJs = blockUnder(readme, "Quick start: the router", "js");
  const installSh = blockUnder(readme, "Quick start: the model", "sh");
  const cliSh = blockUnder(readme, "Quick start: the CLI", "sh");
  let root: string;
  let project: string;
  let tmp: string;
  let packed: { filename: string; files: { path: string }[] };
  let install: Ran & { mode: string };

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "gavel-packed-"));
    project = join(root, "user-app");
    tmp = join(root, "tmp");
    mkdirSync(project);
    mkdirSync(tmp);
    // `prepack` runs tsup, which cleans dist/ while other test files import it: pack the dist/ that
    // `npm test` built just before vitest (or `npm run build`) with --ignore-scripts instead; the
    // first case proves what the tarball holds.
    if (!existsSync(join(repoRoot, "dist", "index.js"))) throw new Error("dist/ is not built: run `npm run build` (npm test does) before this test");
    const pack = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", root], repoRoot, process.env);
    if (pack.code !== 0) throw new Error(`npm pack failed: ${pack.err}`);
    packed = (JSON.parse(pack.out) as (typeof packed)[])[0];
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "user-app", version: "1.0.0", private: true, type: "module" }, null, 2));
    // No network: the runtime dependencies come from npm's cache, which `npm ci` filled. A cache
    // without one of them (a machine that never ran `npm ci`) falls back to --prefer-offline.
    const tarball = join(root, packed.filename);
    const args = ["install", "--no-audit", "--no-fund", "--no-update-notifier", tarball];
    const offline = await run("npm", [...args.slice(0, 1), "--offline", ...args.slice(1)], project, userEnv());
    install = { ...offline, mode: "--offline" };
    // (or ERESOLVE "Found: zod@undefined": npm could not resolve an optional peer from the cache)
    if (offline.code !== 0 && /ENOTCACHED|ERESOLVE/.test(offline.err)) {
      console.warn(`npm install --offline: a dependency is not in npm's cache; retrying with --prefer-offline\n${offline.err}`);
      install = { ...(await run("npm", [...args.slice(0, 1), "--prefer-offline", ...args.slice(1)], project, userEnv())), mode: "--prefer-offline" };
    }
  }, 300_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("the tarball ships dist/, the prebuilt addon, the embedded pair and the example skills", () => {
    const paths = new Set(packed.files.map((f) => f.path));
    for (const p of [
      "dist/index.js",
      "dist/index.cjs",
      "dist/index.d.ts",
      "dist/cli/gavel.js",
      "prebuilds/linux-x64/gavel-router.node",
      "prebuilds/linux-x64-avx512/gavel-router.node",
      "models/gavel-mini.gguf",
      "models/gavel-mini.projections.gguf",
      "examples/skills/image-resizing/SKILL.md",
      "README.md",
      "package.json",
    ]) expect(paths.has(p), p).toBe(true);
    expect([...paths].filter((p) => p.startsWith("examples/skills/") && p.endsWith("/SKILL.md"))).toHaveLength(24);
    // nothing of the repository's own: no tests, sources, benchmarks or history (docs/ ships its
    // reference pages, which README links to)
    expect([...paths].filter((p) => /^(test|src|bench|docs\/history)\//.test(p))).toEqual([]);
  });

  it("installs into an empty project, offline, with the runtime dependencies only", () => {
    expect(install.code, install.err + install.out).toBe(0);
    expect(installSh.trim()).toBe("npm install gavel-router"); // what the README tells a user; the tarball stands in for the registry
    const modules = readdirSync(join(project, "node_modules")).filter((d) => !d.startsWith("."));
    // llama.cpp is inside the addon: no @node-llama-cpp binaries are downloaded
    expect(modules.sort()).toEqual(["@huggingface", "gavel-router", "yaml"]);
    const installed = join(project, "node_modules", "gavel-router");
    for (const v of ["linux-x64", "linux-x64-avx512"]) expect(statSync(join(installed, "prebuilds", v, "gavel-router.node")).size).toBeGreaterThan(1_000_000);
    expect(existsSync(join(project, "node_modules", ".bin", "gavel"))).toBe(true);
  });

  it("the model quick start runs as written", async () => {
    const file = join(project, "quickstart-model.mjs");
    writeFileSync(file, modelJs);
    const res = await runNode([file], { cwd: project, env: userEnv({ TMPDIR: tmp }), timeoutMs: 120_000 });
    expect(res.code, res.err + res.out).toBe(0);
    expect(res.out).toMatch(/^llama 10 layers$/m); // gavel-mini, from node_modules/gavel-router/models
    expect(res.out).toMatch(/^states \d+ × 384$/m);
    const logprob = Number(/^mean log-prob (\S+)$/m.exec(res.out)?.[1]);
    expect(logprob).toBeLessThan(0);
    expect(Number.isFinite(logprob)).toBe(true);
  }, 150_000);

  it("the router quick start runs as written and routes the PDF task to pdf", async () => {
    const file = join(project, "quickstart-router.mjs");
    writeFileSync(file, routerJs);
    const res = await runNode([file], { cwd: project, env: userEnv({ TMPDIR: tmp }), timeoutMs: 120_000 });
    expect(res.code, res.err + res.out).toBe(0);
    expect(res.out).toMatch(/^installed 3\/3$/m);
    expect(res.out).toMatch(/^3 skills, \d+ keys$/m);
    expect(res.out).toMatch(/^chosen: pdf \(verdict (ran|skipped)\)$/m);
  }, 150_000);

  it("a GavelError of the CommonJS build is an instance of the ES module build's class, and the reverse", async () => {
    const file = join(project, "error-builds.mjs");
    writeFileSync(file, [
      'import { createRequire } from "node:module";',
      'import { GavelError } from "gavel-router";',
      "const cjs = createRequire(import.meta.url)(\"gavel-router\");",
      'console.log(cjs.GavelError === GavelError ? "one class" : "two classes");',
      'console.log(new cjs.GavelError("a", "INVALID_ARGUMENT") instanceof GavelError, new GavelError("b", "INVALID_ARGUMENT") instanceof cjs.GavelError);',
      'console.log(new Error("c") instanceof GavelError, Object.create(GavelError.prototype) instanceof cjs.GavelError, new GavelError("d", "INVALID_ARGUMENT") instanceof Error);',
      'try { await cjs.Model.load(""); } catch (e) { console.log(e instanceof GavelError, e.code); }',
    ].join("\n"));
    const res = await runNode([file], { cwd: project, env: userEnv({ TMPDIR: tmp }), timeoutMs: 60_000 });
    expect(res.code, res.err + res.out).toBe(0);
    expect(res.out.trim().split("\n")).toEqual(["two classes", "true true", "false false true", expect.stringMatching(/^true [A-Z_]+$/)]);
  }, 90_000);

  it("the JS quick starts type-check unchanged as strict TypeScript against the installed types", async () => {
    writeFileSync(join(project, "quickstart-model.ts"), modelJs);
    writeFileSync(join(project, "quickstart-router.ts"), routerJs);
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          types: ["node"],
          typeRoots: [join(repoRoot, "node_modules", "@types")],
        },
        files: ["quickstart-model.ts", "quickstart-router.ts"],
      }),
    );
    const tsc = join(repoRoot, "node_modules", "typescript", "bin", "tsc");
    const res = await runNode([tsc, "-p", join(project, "tsconfig.json")], { cwd: project, timeoutMs: 120_000 });
    expect(res.code, res.out + res.err).toBe(0);
    // and a type error is caught, so the check is real
    writeFileSync(join(project, "quickstart-router.ts"), routerJs.replace('console.log("chosen:", result.skill', 'console.log("chosen:", result.skill.toUpperCase()'));
    const bad = await runNode([tsc, "-p", join(project, "tsconfig.json")], { cwd: project, timeoutMs: 120_000 });
    expect(bad.code).not.toBe(0);
    expect(bad.out).toMatch(/quickstart-router\.ts.*'result\.skill' is possibly 'null'/);
  }, 150_000);

  it("the CLI quick start runs as written", async () => {
    // bash -e: the block stops at the first failing line, as a user would notice
    const res = await run("bash", ["-e", "-c", cliSh], project, userEnv({ TMPDIR: tmp }), 280_000);
    expect(res.code, res.err + res.out).toBe(0);
    // gavel demo: both off-domain prompts declined, nine in-domain tasks of ten at least right (the
    // AWS-key task may go to git-history: bench/results/2026-12-01-cpu-small-library/)
    const demo = /^(\d+)\/12 right \((\d+) routed to the skill written for them, 2 declined(, 1 wrong)?\)$/m.exec(res.out);
    expect(demo, res.out).not.toBeNull();
    expect(Number(demo![2])).toBeGreaterThanOrEqual(9);
    expect(Number(demo![1])).toBe(Number(demo![2]) + 2);
    expect(res.out).toMatch(/^installed 24, unchanged 0, failed 0 /m);
    expect(res.out).toMatch(/^chosen: image-resizing$/m);
    expect(existsSync(join(project, ".gavel", "bank"))).toBe(true); // the bank is the project's
    const listed = res.out.slice(res.out.lastIndexOf("skill ")).split("\n").slice(1).filter((l) => l.trim() !== "");
    expect(listed).toHaveLength(24);
  }, 300_000);
});
