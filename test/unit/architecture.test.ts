// The direction and size rules of docs/ARCHITECTURE.md are enforced by two checkers that `npm test`
// runs over src/ and lab/. These tests plant a breach in a scratch tree laid out like them and check that each
// checker refuses it (and accepts the same tree without the breach), so a rule that stopped biting
// would fail here.
import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, writeFileSync, copyFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
// @ts-expect-error plain .mjs script without types
import { checkStructure, CHECKED_DIRS, MAX_FILE_LINES, MAX_FUNCTION_LINES } from "../../scripts/lint/structure.mjs";
import { repoRoot } from "../helpers/paths.js";
import { run } from "../helpers/run.js";

function scratch(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "gavel-arch-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

/** Runs dependency-cruiser with the repository's rules over `dir`/src and `dir`/lab; its exit status and output (stdout, and stderr on a failure). */
async function cruise(dir: string): Promise<{ ok: boolean; out: string }> {
  copyFileSync(join(repoRoot, ".dependency-cruiser.cjs"), join(dir, ".dependency-cruiser.cjs"));
  // the package's own names as the repository's tsconfig.json maps them
  const paths = { "gavel-router": ["./src/index.ts"], "gavel-router/internal": ["./src/internal.ts"], "gavel-router/lab": ["./lab/index.ts"] };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", strict: true, paths }, include: ["src", "lab"] }));
  const bin = join(repoRoot, "node_modules", ".bin", "depcruise");
  const r = await run(bin, ["src", "lab", "--config", ".dependency-cruiser.cjs"], { cwd: dir });
  return r.code === 0 ? { ok: true, out: r.out } : { ok: false, out: `${r.out}${r.err}` };
}

describe("direction rules (dependency-cruiser)", () => {
  const base = {
    "src/errors.ts": "export const E = 1;\n",
    "src/bank/store.ts": 'import { E } from "../errors.js";\nexport const S = E;\n',
    "src/route/Router.ts": 'import { S } from "../bank/store.js";\nexport const R = S;\n',
    "src/route/index.ts": 'export { R } from "./Router.js";\n',
    "src/index.ts": 'export { R } from "./route/index.js";\n',
    "src/internal.ts": 'export { S } from "./bank/store.js";\n',
    "src/cli/lab.ts": 'export async function lab(): Promise<number> {\n  return (await import("gavel-router/lab")).V;\n}\n',
    "lab/eval/evaluate.ts": 'import { R } from "gavel-router";\nimport { S } from "gavel-router/internal";\nexport const V = R + S;\n',
    "lab/index.ts": 'export { V } from "./eval/evaluate.js";\n',
  };

  it("accept a tree whose imports only go down", async () => {
    const r = await cruise(scratch(base));
    expect(r.out).toMatch(/no dependency violations/);
    expect(r.ok).toBe(true);
  }, 60_000);

  it("refuse a planted back-import (bank → route)", async () => {
    const r = await cruise(scratch({ ...base, "src/bank/store.ts": 'import { R } from "../route/Router.js";\nexport const S = R;\n' }));
    expect(r.ok).toBe(false);
    expect(r.out).toMatch(/layer-\d+-imports-above: src\/bank\/store\.ts → src\/route\/Router\.ts/);
  }, 60_000);

  it("refuse the lab reaching into the runtime past its entries", async () => {
    const r = await cruise(scratch({ ...base, "lab/eval/evaluate.ts": 'import { R } from "../../src/route/Router.js";\nexport const V = R;\n' }));
    expect(r.ok).toBe(false);
    expect(r.out).toMatch(/lab-reaches-runtime-through-entries: lab\/eval\/evaluate\.ts → src\/route\/Router\.ts/);
  }, 60_000);

  it("refuse a planted runtime → lab import (static, even of the lab's entry)", async () => {
    const r = await cruise(scratch({ ...base, "src/route/Router.ts": 'import { S } from "../bank/store.js";\nimport { V } from "../../lab/eval/evaluate.js";\nexport const R = S + V;\n' }));
    expect(r.ok).toBe(false);
    expect(r.out).toMatch(/runtime-never-imports-lab: src\/route\/Router\.ts → lab\/eval\/evaluate\.ts/);
    const s = await cruise(scratch({ ...base, "src/cli/lab.ts": 'import { V } from "gavel-router/lab";\nexport const L = V;\n' }));
    expect(s.ok).toBe(false);
    expect(s.out).toMatch(/runtime-never-imports-lab: src\/cli\/lab\.ts → lab\/index\.ts/);
  }, 120_000);

  it("refuse a dynamic import of the lab from elsewhere than the CLI's loader, or past the lab's entry", async () => {
    const elsewhere = await cruise(scratch({ ...base, "src/route/index.ts": 'export { R } from "./Router.js";\nexport const lab = () => import("gavel-router/lab");\n' }));
    expect(elsewhere.ok).toBe(false);
    expect(elsewhere.out).toMatch(/runtime-loads-lab-only-in-the-cli: src\/route\/index\.ts → lab\/index\.ts/);
    const past = await cruise(scratch({ ...base, "src/cli/lab.ts": 'export const lab = () => import("../../lab/eval/evaluate.js");\n' }));
    expect(past.ok).toBe(false);
    expect(past.out).toMatch(/runtime-loads-lab-through-its-entry: src\/cli\/lab\.ts → lab\/eval\/evaluate\.ts/);
  }, 120_000);
});

describe("size rules (scripts/lint/structure.mjs)", () => {
  const fn = (name: string, body: number) => `export function ${name}(): number {\n${"  let x = 1;\n".repeat(body)}  return 1;\n}\n`;

  it("pass small files and functions", () => {
    expect(checkStructure(scratch({ "a.ts": fn("small", 10) }))).toEqual([]);
  });

  it(`flag a function over ${MAX_FUNCTION_LINES} lines, unless a "long function:" comment says why`, () => {
    const long = fn("long", MAX_FUNCTION_LINES);
    expect(checkStructure(scratch({ "a.ts": long })).join("\n")).toMatch(/a\.ts:1: function long has 83 lines/);
    expect(checkStructure(scratch({ "a.ts": `// long function: a parser reads better as one switch\n${long}` }))).toEqual([]);
    expect(checkStructure(scratch({ "a.ts": `// long function:\n${long}` })).length).toBe(1); // no reason given
  });

  it("check the runtime and the lab", () => {
    expect(CHECKED_DIRS).toEqual(["src", "lab"]);
  });

  it(`flag a file over ${MAX_FILE_LINES} lines`, () => {
    const many = Array.from({ length: 30 }, (_, i) => fn(`f${i}`, 14)).join("");
    expect(checkStructure(scratch({ "big.ts": many })).join("\n")).toMatch(/big\.ts: \d+ lines \(at most 450\)/);
  });
});
