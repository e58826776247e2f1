// util/jsonl: plain and gzipped files read alike, blank lines skipped, a bad line named by its
// 1-based line number; the streaming reader likewise, and it stops cleanly on a break.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonlLines, readJsonl } from "../../src/util/jsonl.js";
import { expectCode } from "../helpers/gavel-error.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gavel-jsonl-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const text = '{"a":1}\n\n  \n{"a":2}\r\n[3]\n';

async function collect(path: string): Promise<{ text: string; line: number }[]> {
  const out: { text: string; line: number }[] = [];
  for await (const l of jsonlLines(path)) out.push(l);
  return out;
}

describe("readJsonl", () => {
  it("reads plain and gzipped files (by name or by magic bytes) the same way", async () => {
    await writeFile(join(dir, "p.jsonl"), text);
    await writeFile(join(dir, "g.jsonl.gz"), gzipSync(text));
    await writeFile(join(dir, "g-no-ext.jsonl"), gzipSync(text));
    const want = [{ value: { a: 1 }, line: 1 }, { value: { a: 2 }, line: 4 }, { value: [3], line: 5 }];
    for (const name of ["p.jsonl", "g.jsonl.gz", "g-no-ext.jsonl"]) expect(await readJsonl(join(dir, name))).toEqual(want);
  });

  it("names a bad line by its number, in plain and gzipped files", async () => {
    const bad = '{"a":1}\n\n{"a":\n{"a":3}\n';
    await writeFile(join(dir, "bad.jsonl"), bad);
    await writeFile(join(dir, "bad.jsonl.gz"), gzipSync(bad));
    await expectCode(readJsonl(join(dir, "bad.jsonl")), "INVALID_ARGUMENT", /bad\.jsonl:3: not JSON/);
    await expectCode(readJsonl(join(dir, "bad.jsonl.gz")), "INVALID_ARGUMENT", /bad\.jsonl\.gz:3: not JSON/);
  });

  it("drops only an unfinished last line with tornTail", async () => {
    const path = join(dir, "torn.jsonl");
    await writeFile(path, '{"a":1}\n{"a":2}\n{"a":');
    await expect(readJsonl(path)).rejects.toThrow(/torn\.jsonl:3: not JSON/);
    expect(await readJsonl(path, { tornTail: true })).toEqual([{ value: { a: 1 }, line: 1 }, { value: { a: 2 }, line: 2 }]);
    await writeFile(path, '{"a":\n{"a":2}\n');
    await expect(readJsonl(path, { tornTail: true })).rejects.toThrow(/torn\.jsonl:1: not JSON/);
  });

  it("reports a missing file as FILE_NOT_FOUND naming what it holds, and a .gz that is not gzip", async () => {
    await expectCode(readJsonl(join(dir, "none.jsonl"), { what: "tasks" }), "FILE_NOT_FOUND", /^cannot read tasks .*none\.jsonl/);
    await writeFile(join(dir, "plain.jsonl.gz"), text);
    await expectCode(readJsonl(join(dir, "plain.jsonl.gz")), "INVALID_ARGUMENT", /not gzip data/);
  });
});

describe("jsonlLines", () => {
  it("streams the non-blank lines of plain and gzipped files with their line numbers", async () => {
    await writeFile(join(dir, "s.jsonl"), text);
    await writeFile(join(dir, "s.jsonl.gz"), gzipSync(text));
    const want = [{ text: '{"a":1}', line: 1 }, { text: '{"a":2}', line: 4 }, { text: "[3]", line: 5 }];
    expect(await collect(join(dir, "s.jsonl"))).toEqual(want);
    expect(await collect(join(dir, "s.jsonl.gz"))).toEqual(want);
  });

  it("stops on a break, and reports a corrupt gzip stream as CORRUPT_FILE", async () => {
    const rows = Array.from({ length: 5000 }, (_, i) => JSON.stringify({ i, pad: "x".repeat(50) })).join("\n");
    const gz = gzipSync(rows);
    await writeFile(join(dir, "big.jsonl.gz"), gz);
    let n = 0;
    for await (const l of jsonlLines(join(dir, "big.jsonl.gz"))) {
      expect(l.line).toBe(++n);
      if (n === 3) break;
    }
    expect(n).toBe(3);
    const broken = Buffer.from(gz);
    broken.fill(0x55, 200, 400);
    await writeFile(join(dir, "broken.jsonl.gz"), broken);
    await expectCode(collect(join(dir, "broken.jsonl.gz")), "CORRUPT_FILE", /broken\.jsonl\.gz after line \d+/);
    await expectCode(collect(join(dir, "absent.jsonl")), "FILE_NOT_FOUND");
  });
});
