// Issue 17, bounded reads and error hygiene for projections (GGUF) files: Projections.load on a FIFO
// hung and on a directory threw a raw EISDIR; a corrupt key length put ~100 KB of the file's bytes
// into the message. Now each is a typed error at once, and quoted strings are capped and escaped.
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Projections } from "../../src/projections/projections.js";
import { quoteForMessage, readGgufHeader, readRegularFile } from "../../src/gguf/index.js";
import type { ModelFingerprint } from "../../src/model/fingerprint.js";

const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "ab".repeat(32) };
let root: string;
let good: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "gavel-rel-files-"));
  good = join(root, "good.gguf");
  await (await Projections.random(fp, { dim: 16 })).save(good);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("projections files are read only when they are regular files", () => {
  it.each([
    ["a FIFO", (p: string) => execFileSync("mkfifo", [p]), /is a FIFO \(named pipe\), not a regular file/],
    ["a directory", (p: string) => mkdir(p), /is a directory, not a regular file/],
    ["a link to /dev/zero", (p: string) => symlink("/dev/zero", p), /is a device, not a regular file/],
    ["a link to /dev/urandom", (p: string) => symlink("/dev/urandom", p), /is a device/],
  ])("%s: FILE_NOT_FOUND at once, never a hang or a raw EISDIR", async (what, make, why) => {
    const p = join(root, `proj-${what.replace(/\W+/g, "-")}.gguf`);
    await make(p);
    // no clock: a hang (reading the FIFO or the device) ends in the test's timeout
    const err = await Projections.load(p).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "FILE_NOT_FOUND" });
    expect((err as Error).message).toMatch(why);
  });

  it("a symlink to a regular projections file loads", async () => {
    const p = join(root, "linked.gguf");
    await symlink(good, p);
    expect((await Projections.load(p)).dim).toBe(16);
  });

  it("readRegularFile refuses above its cap and reads within it", async () => {
    expect((await readRegularFile(good, 1 << 20)).byteLength).toBeGreaterThan(0);
    await expect(readRegularFile(good, 10)).rejects.toMatchObject({ reason: "too-large" });
  });
});

describe("error hygiene", () => {
  it("a corrupt key length: a typed error whose message is short and holds no raw bytes", async () => {
    const bytes = Buffer.from(await readFile(good));
    const k = Buffer.from("gavel.version");
    const at = bytes.indexOf(k) - 8;
    bytes.writeBigUInt64LE(BigInt(Math.min(100_000, bytes.length - at - 200)), at);
    const p = join(root, "key-length.gguf");
    await writeFile(p, bytes);
    const err = await Projections.load(p).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: expect.stringMatching(/NOT_GGUF|CORRUPT_FILE/) });
    const msg = (err as Error).message;
    expect(msg.length).toBeLessThan(500);
    // eslint-disable-next-line no-control-regex
    expect(msg).not.toMatch(/[\u0000-\u0008\u000e-\u001f\u007f-\u009f]/);
    await expect(readGgufHeader(p)).rejects.toThrow(/characters\)/);
  });

  it("quoteForMessage caps and escapes", () => {
    expect(quoteForMessage("abc")).toBe('"abc"');
    const q = quoteForMessage("x".repeat(1000) + "\u0007");
    expect(q.length).toBeLessThan(120);
    expect(q).toMatch(/…" \(1001 characters\)$/);
    expect(quoteForMessage("a\u001b[2Jb\u009b\u202e")).toBe('"a\\u001b[2Jb\\u009b\\u202e"');
  });
});
