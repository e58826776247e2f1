// The direction and size rules of docs/ARCHITECTURE.md are enforced by two checkers that `npm test`
// runs over src/. These tests plant a breach in a scratch tree laid out like src/ and check that each
// checker refuses it (and accepts the same tree without the breach), so a rule that stopped biting
// would fail here.
import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, writeFileSync, copyFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
// @ts-expect-error plain .mjs script without types
import { checkStructure, MAX_FILE_LINES, MAX_FUNCTION_LINES } from "../../scripts/lint/structure.mjs";
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

/** Runs dependency-cruiser with the repository's rules over `dir`/src; its exit status and output (stdout, and stderr on a failure). */
async function cruise(dir: string): Promise<{ ok: boolean; out: string }> {
  copyFileSync(join(repoRoot, ".dependency-cruiser.cjs"), join(dir, ".dependency-cruiser.cjs"));
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", strict: true }, include: ["src"] }));
  const bin = join(repoRoot, "node_modules", ".bin", "depcruise");
  const r = await run(bin, ["src", "--config", ".dependency-cruiser.cjs"], { cwd: dir });
  return r.code === 0 ? { ok: true, out: r.out } : { ok: false, out: `${r.out}${r.err}` };
}

describe("direction rules (dependency-cruiser)", () => {
  const base = {
    "src/errors.ts": "export const E = 1;\n",
    "src/bank/store.ts": 'import { E } from "../errors.js";\nexport const S = E;\n',
    "src/route/Router.ts": 'import { S } from "../bank/store.js";\nexport const R = S;\n',
    "src/route/index.ts": 'export { R } from "./Router.js";\n',
    "src/eval/evaluate.ts": 'import { R } from "../route/index.js";\nexport const V = R;\n',
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

  it("refuse eval reaching into a route module past its index", async () => {
    const r = await cruise(scratch({ ...base, "src/eval/evaluate.ts": 'import { R } from "../route/Router.js";\nexport const V = R;\n' }));
    expect(r.ok).toBe(false);
    expect(r.out).toMatch(/stages-reach-route-through-its-index: src\/eval\/evaluate\.ts → src\/route\/Router\.ts/);
  }, 60_000);
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

  it(`flag a file over ${MAX_FILE_LINES} lines`, () => {
    const many = Array.from({ length: 30 }, (_, i) => fn(`f${i}`, 14)).join("");
    expect(checkStructure(scratch({ "big.ts": many })).join("\n")).toMatch(/big\.ts: \d+ lines \(at most 450\)/);
  });
});
