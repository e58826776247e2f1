// util/durable-file: a replaced file is whole (old or new, never torn), and no temporary file is
// left behind, whether the write succeeds or fails.
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempPathFor, writeFileDurable } from "../../src/util/durable-file.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gavel-durable-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("writeFileDurable", () => {
  it("writes text, bytes, chunks and a writer function whole, and leaves no temp file", async () => {
    const path = join(dir, "a.txt");
    await writeFileDurable(path, "first");
    expect(await readFile(path, "utf8")).toBe("first");
    await writeFileDurable(path, new Uint8Array([104, 105]));
    expect(await readFile(path, "utf8")).toBe("hi");
    await writeFileDurable(path, [Buffer.from("ab"), Buffer.from(""), Buffer.from("cde")]);
    expect(await readFile(path, "utf8")).toBe("abcde");
    await writeFileDurable(path, async (fh) => {
      await fh.write("x".repeat(100_000));
    });
    expect((await readFile(path, "utf8")).length).toBe(100_000);
    await writeFileDurable(path, "cache", { sync: false });
    expect(await readFile(path, "utf8")).toBe("cache");
    expect(await readdir(dir)).toEqual(["a.txt"]);
  });

  it("keeps the old file and removes the temp file when the write fails", async () => {
    const path = join(dir, "b.txt");
    await writeFile(path, "old");
    const boom = new Error("disk full");
    await expect(
      writeFileDurable(path, async (fh) => {
        await fh.write("half of the new");
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await readFile(path, "utf8")).toBe("old");
    expect((await readdir(dir)).filter((n) => n.startsWith("b.txt"))).toEqual(["b.txt"]);
  });

  it("fails without a trace when the target's directory does not exist", async () => {
    await expect(writeFileDurable(join(dir, "missing", "c.txt"), "x")).rejects.toMatchObject({ code: "ENOENT" });
  });
});

describe("tempPathFor", () => {
  it("names temp files <path>.<12 hex>.tmp, distinct per call", () => {
    const a = tempPathFor("/x/manifest.json");
    expect(a).toMatch(/^\/x\/manifest\.json\.[0-9a-f]{12}\.tmp$/);
    expect(tempPathFor("/x/manifest.json")).not.toBe(a);
  });
});
