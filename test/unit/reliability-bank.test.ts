// Issue 17, "never destroy data implicitly" and bounded reads of the bank: a bank whose manifest is
// gone is CORRUPT_FILE and nothing is truncated (the repro: `gavel list -b BANK` with manifest.json
// removed truncated keys.bin to 0 bytes), even when the caller asked to create a bank; a missing
// bank without `create` is FILE_NOT_FOUND and nothing is created; a manifest or keys file that is a
// FIFO, a device or a directory is CORRUPT_FILE at once, never a hang.
import { execFileSync } from "node:child_process";
import { mkdir, readdir, readFile, stat, symlink, unlink, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { BankStore, bankHeaderFor, type BankHeader } from "../../src/bank/index.js";
import { Projections } from "../../src/projections/projections.js";
import type { ModelFingerprint } from "../../src/model/fingerprint.js";
import { expectCode } from "../helpers/gavel-error.js";
import { tempRoot } from "../helpers/temp-dirs.js";

const DIM = 8;
const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "cd".repeat(32) };
let header: BankHeader;
const tmp = tempRoot("gavel-rel-bank-");
const freshDir = () => tmp.fresh();

beforeAll(async () => {
  header = bankHeaderFor(await Projections.random(fp, { seed: 1, dim: DIM }));
});

/** A committed bank of two skills; returns its directory. */
async function committedBank(): Promise<string> {
  const dir = freshDir();
  const bank = await BankStore.open(dir, header, { create: true });
  for (const id of ["a", "b"]) {
    const keys = new Float32Array(3 * DIM).fill(0.25);
    await bank.put({ id, name: id, description: `skill ${id}`, contentHash: `h-${id}`, source: "t", disableModelInvocation: false, keyTokens: [1, 2, 3], renderTokens: 3 }, keys);
  }
  await bank.commit();
  await bank.close();
  return dir;
}

describe("a bank is never created or re-initialised implicitly", () => {
  it("a missing manifest with keys on disk is CORRUPT_FILE with a recovery hint, and keys.bin keeps every byte (with or without create)", async () => {
    const dir = await committedBank();
    const keysPath = join(dir, "keys.bin");
    const before = await readFile(keysPath);
    expect(before.byteLength).toBe(6 * DIM * 4);
    await unlink(join(dir, "manifest.json"));
    for (const create of [false, true]) {
      const err = await expectCode(BankStore.open(dir, header, { create }), "CORRUPT_FILE");
      expect(err.message).toMatch(/keys\.bin \(192 bytes\) but no manifest\.json/);
      expect(err.message).toMatch(/nothing was changed.*Restore manifest\.json from a backup, or move .* aside and run `gavel install`/);
      expect(Buffer.compare(await readFile(keysPath), before)).toBe(0);
      expect((await readdir(dir)).sort()).toEqual(["keys.bin"]); // no manifest written, lock released
    }
  });

  it("a missing bank is FILE_NOT_FOUND without create, and nothing is created (mistyped --bank)", async () => {
    const dir = freshDir();
    await expectCode(BankStore.open(dir, header), "FILE_NOT_FOUND");
    expect(existsSync(dir)).toBe(false);
    // an existing folder without a bank: FILE_NOT_FOUND, and the folder is left as it was
    await mkdir(dir);
    await writeFile(join(dir, "notes.txt"), "mine");
    await expectCode(BankStore.open(dir, header), "FILE_NOT_FOUND");
    expect(await readdir(dir)).toEqual(["notes.txt"]);
  });

  it("create still makes a new bank where no bank files exist (an empty keys.bin of a first open that crashed counts as none)", async () => {
    const dir = freshDir();
    await mkdir(dir);
    await writeFile(join(dir, "keys.bin"), "");
    const bank = await BankStore.open(dir, header, { create: true });
    expect(bank.entries()).toEqual([]);
    await bank.close();
    expect(existsSync(join(dir, "manifest.json"))).toBe(true);
  });

  it("stored texts or a lexicon without a manifest are kept too", async () => {
    const dir = freshDir();
    await mkdir(join(dir, "texts"), { recursive: true });
    await writeFile(join(dir, "texts", "abc.json"), "{}");
    const err = await expectCode(BankStore.open(dir, header, { create: true }), "CORRUPT_FILE");
    expect(err.message).toMatch(/texts\/ \(1 files\)/);
  });
});

describe("bank files are read only when they are regular files", () => {
  it("manifest.json as a FIFO, a directory or a link to /dev/zero: CORRUPT_FILE at once", async () => {
    for (const make of [
      (p: string) => execFileSync("mkfifo", [p]),
      (p: string) => mkdir(p),
      (p: string) => symlink("/dev/zero", p),
    ]) {
      const dir = await committedBank();
      const m = join(dir, "manifest.json");
      await unlink(m);
      await make(m);
      // a hang (reading the FIFO or /dev/zero) would end in the test's timeout, not here
      const err = await expectCode(BankStore.open(dir, header), "CORRUPT_FILE");
      expect(err.message).toMatch(/not a regular file/);
      expect((await stat(join(dir, "keys.bin"))).size).toBe(6 * DIM * 4);
    }
  });

  it("keys.bin as a FIFO or a link to /dev/zero: CORRUPT_FILE, never a hang", async () => {
    for (const make of [(p: string) => execFileSync("mkfifo", [p]), (p: string) => symlink("/dev/zero", p)]) {
      const dir = await committedBank();
      const k = join(dir, "keys.bin");
      await unlink(k);
      await make(k);
      const err = await expectCode(BankStore.open(dir, header), "CORRUPT_FILE");
      expect(err.message).toMatch(/keys\.bin is (a FIFO|a device)/);
    }
  });

  it("the lock as a FIFO, a link to /dev/zero, a dangling link or a link loop is broken as a stale lock; a directory is CORRUPT_FILE", async () => {
    // before, a FIFO hung every writable open, /dev/zero read until a RangeError, a dangling link
    // was BANK_LOCKED for ever, a loop a raw ELOOP
    for (const [what, make] of [
      ["a FIFO", (p: string) => execFileSync("mkfifo", [p])],
      ["a device", (p: string) => symlink("/dev/zero", p)],
      ["a dangling link", (p: string) => symlink(`${p}-nowhere`, p)],
      ["a link loop", (p: string) => symlink(p, p)],
    ] as const) {
      const dir = await committedBank();
      await make(join(dir, "lock"));
      const store = await BankStore.open(dir, header);
      expect(store.entries().map((e) => e.id), what).toEqual(["a", "b"]);
      await store.close();
      expect(existsSync(join(dir, "lock")), what).toBe(false);
      expect((await readdir(dir)).filter((f) => f.startsWith("lock")), what).toEqual([]);
    }
    const dir = await committedBank();
    await mkdir(join(dir, "lock"));
    const err = await expectCode(BankStore.open(dir, header), "CORRUPT_FILE");
    expect(err.message).toMatch(/lock .* is a directory/);
  });

  it("a lock naming pid 0 or a negative pid (a process group, no owner) is broken as a stale lock; a live pid keeps it", async () => {
    // before, kill(0, 0) and kill(-1, 0) signal process groups and succeed: BANK_LOCKED for ever
    const lock = (pid: number) => JSON.stringify({ pid, host: hostname(), createdAt: "2020-01-01T00:00:00.000Z" }) + "\n";
    for (const pid of [0, -1]) {
      const dir = await committedBank();
      await writeFile(join(dir, "lock"), lock(pid));
      const store = await BankStore.open(dir, header);
      expect(store.entries().map((e) => e.id), `pid ${pid}`).toEqual(["a", "b"]);
      await store.close();
      expect((await readdir(dir)).filter((f) => f.startsWith("lock")), `pid ${pid}`).toEqual([]);
    }
    const dir = await committedBank();
    await writeFile(join(dir, "lock"), lock(process.ppid));
    const err = await expectCode(BankStore.open(dir, header), "BANK_LOCKED");
    expect(err.message).toContain(`process ${process.ppid} on ${hostname()}`);
    expect(await readFile(join(dir, "lock"), "utf8")).toBe(lock(process.ppid));
  });
});
