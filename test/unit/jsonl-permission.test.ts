// A JSONL file this user may not read (a .jsonl or .jsonl.gz skill library, a lab file read whole) is
// PERMISSION_DENIED naming the path and the errno, never "not found"; a file that is not there is
// still FILE_NOT_FOUND. The refusals are injected on node:fs/promises (the tests may run as root, whom
// chmod does not stop).
import { describe, expect, it, vi } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { loadSkills } from "../../src/index.js";
import { jsonlLines, readJsonl } from "../../src/util/jsonl.js";
import { expectCode } from "../helpers/gavel-error.js";
import { tempDirs } from "../helpers/temp-dirs.js";

/** open or readFile of a path in `refused` fails with its error code. */
const refused = vi.hoisted(() => new Map<string, string>());

vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>();
  const fail = (code: string, syscall: string, path: string) => Promise.reject(Object.assign(new Error(`${code}: permission denied, ${syscall} '${path}'`), { code, syscall, path }));
  const open = ((...a: Parameters<typeof real.open>) => {
    const code = refused.get(String(a[0]));
    return code !== undefined ? fail(code, "open", String(a[0])) : real.open(...a);
  }) as typeof real.open;
  const readFile = ((...a: Parameters<typeof real.readFile>) => {
    const code = refused.get(String(a[0]));
    return code !== undefined ? fail(code, "open", String(a[0])) : real.readFile(...a);
  }) as typeof real.readFile;
  return { ...real, open, readFile, default: { ...real, open, readFile } };
});

const freshDir = tempDirs("gavel-jsonl-perm-");
const ROW = `${JSON.stringify({ id: "alpha", name: "alpha", description: "Use for alpha tasks.", body: "The alpha steps." })}\n`;

async function collect(path: string): Promise<string[]> {
  const out: string[] = [];
  for await (const { text } of jsonlLines(path)) out.push(text);
  return out;
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

describe("a JSONL file this user may not read", () => {
  it.each([
    ["lib.jsonl", "EACCES"],
    ["lib.jsonl.gz", "EPERM"],
  ])("loadSkills on %s refused (%s) is PERMISSION_DENIED naming it; readable again, it loads", async (name, code) => {
    const path = join(freshDir(), name);
    writeFileSync(path, name.endsWith(".gz") ? gzipSync(ROW) : ROW);
    refused.set(path, code);
    try {
      const err = await expectCode(loadSkills(path), "PERMISSION_DENIED", new RegExp(`^cannot read ${escape(path)}: permission denied \\(${code}\\)$`));
      expect(err.cause).toMatchObject({ cause: { code } });
      await expectCode(collect(path), "PERMISSION_DENIED");
    } finally {
      refused.clear();
    }
    expect((await loadSkills(path)).skills.map((s) => s.id)).toEqual(["alpha"]);
  });

  it("readJsonl refused is PERMISSION_DENIED naming what the file holds; a missing file is still FILE_NOT_FOUND", async () => {
    const path = join(freshDir(), "tasks.jsonl");
    writeFileSync(path, '{"id":"t1"}\n');
    refused.set(path, "EACCES");
    try {
      await expectCode(readJsonl(path, { what: "tasks" }), "PERMISSION_DENIED", new RegExp(`^cannot read tasks ${escape(path)}: permission denied \\(EACCES\\)$`));
    } finally {
      refused.clear();
    }
    expect((await readJsonl(path)).map((r) => r.value)).toEqual([{ id: "t1" }]);
    await expectCode(readJsonl(join(freshDir(), "none.jsonl"), { what: "tasks" }), "FILE_NOT_FOUND", /^cannot read tasks .*none\.jsonl: /);
    await expectCode(collect(join(freshDir(), "none.jsonl")), "FILE_NOT_FOUND", /none\.jsonl: file not found$/);
  });
});
