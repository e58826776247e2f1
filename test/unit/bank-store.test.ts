// The bank store: round trips, header binding with rebuild hints, crash recovery (simulated by
// copying a directory mid-install, and for real by SIGKILLing a child process), removal and
// compaction, and the lock that keeps a second process out. Keys are random from a fresh seed each
// run; the seed is in the test names so a failure can be replayed.
import { spawn } from "node:child_process";
import { cp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { BankStore, bankHeaderFor, type BankEntry, type BankEntryInput, type BankHeader } from "../../src/bank/index.js";
import { sealedManifestText } from "../../src/bank/manifest.js";
import { Projections } from "../../src/projections/projections.js";
import type { ModelFingerprint } from "../../src/model/fingerprint.js";
import { repoRoot, viteNodeCli } from "../helpers/paths.js";
import { freshSeed, rng } from "../helpers/random.js";
import { run } from "../helpers/run.js";
import { tempRoot } from "../helpers/temp-dirs.js";
import { expectCode } from "../helpers/gavel-error.js";

const seed = freshSeed();
const r = rng(seed);
const DIM = 12;

// A made-up model: the store only compares fingerprints, it never runs the model.
const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "ab".repeat(32) };
let header: BankHeader;
const tmp = tempRoot("gavel-bank-test-");
const freshDir = () => tmp.fresh();

beforeAll(async () => {
  header = bankHeaderFor(await Projections.random(fp, { seed: 3, dim: DIM }));
});

function randomKeys(nKeys: number): Float32Array {
  const k = new Float32Array(nKeys * DIM);
  for (let i = 0; i < k.length; i++) k[i] = r() * 2 - 1;
  return k;
}

function skill(id: string, nKeys: number, extra: Partial<BankEntryInput> = {}): [BankEntryInput, Float32Array] {
  const keyTokens = Array.from({ length: nKeys }, () => Math.floor(r() * fp.nVocab));
  return [
    {
      id,
      name: `skill ${id}`,
      description: `does ${id} things ✓`,
      contentHash: `hash-${id}`,
      source: `/skills/${id}/SKILL.md`,
      disableModelInvocation: r() < 0.2,
      keyTokens,
      keyPositions: keyTokens.map((_, i) => i * 2),
      renderTokens: nKeys * 3,
      ...(r() < 0.7 ? { renderCut: { descriptionChars: Math.floor(r() * 20), bodyChars: Math.floor(r() * 5000) } } : {}),
      ...extra,
    },
    randomKeys(nKeys),
  ];
}

/** Reads every entry one by one and all at once, and checks both against `expected`. */
async function checkContents(bank: BankStore, expected: Map<string, Float32Array>): Promise<void> {
  expect(bank.entries().map((e) => e.id).sort()).toEqual([...expected.keys()].sort());
  for (const [id, keys] of expected) {
    expect(await bank.readKeys(id), id).toEqual(keys);
    expect(bank.get(id)!.nKeys).toBe(keys.length / DIM);
  }
  const all = await bank.readAllKeys();
  expect(all.offsets.length).toBe(all.entries.length + 1);
  expect(all.offsets[0]).toBe(0);
  expect(all.keys.length).toBe(all.offsets[all.entries.length] * DIM);
  all.entries.forEach((e, i) => {
    expect(all.keys.subarray(all.offsets[i] * DIM, all.offsets[i + 1] * DIM), e.id).toEqual(expected.get(e.id));
  });
  // The same keys in batches of whole skills, each within the byte cap unless a skill alone exceeds it.
  const cap = DIM * 4 * (1 + Math.floor(r() * 40));
  const seen: string[] = [];
  await bank.forEachKeyBatch(cap, (b) => {
    expect(b.offsets.length).toBe(b.entries.length + 1);
    expect(b.keys.length).toBe(b.offsets[b.entries.length] * DIM);
    if (b.entries.length > 1) expect(b.keys.byteLength).toBeLessThanOrEqual(cap);
    b.entries.forEach((e, i) => {
      seen.push(e.id);
      expect(b.keys.subarray(b.offsets[i] * DIM, b.offsets[i + 1] * DIM), e.id).toEqual(expected.get(e.id));
    });
  });
  expect(seen).toEqual(all.entries.map((e) => e.id));
  await expectCode(bank.forEachKeyBatch(0, () => {}), "INVALID_ARGUMENT");
  const stats = bank.stats();
  expect(stats.skills).toBe(expected.size);
  expect(stats.keys).toBe([...expected.values()].reduce((a, k) => a + k.length / DIM, 0));
}

describe(`BankStore (seed ${seed})`, () => {
  it("put / commit / reopen returns the same entries and keys", async () => {
    const dir = freshDir();
    const expected = new Map<string, Float32Array>();
    const puts: BankEntry[] = [];
    {
      await using bank = await BankStore.open(dir, header, { create: true });
      expect(bank.header).toEqual(header);
      expect(bank.entries()).toEqual([]);
      for (let i = 0; i < 25; i++) {
        const [input, keys] = skill(`s${i}`, 1 + Math.floor(r() * 9));
        puts.push(await bank.put(input, keys));
        expected.set(input.id, keys);
        if (i % 10 === 9) await bank.commit(); // batched commits, as the router does
      }
      expect(bank.dirty).toBe(true);
      await bank.commit();
      expect(bank.dirty).toBe(false);
      await checkContents(bank, expected);
    }
    await using again = await BankStore.open(dir, header);
    expect(again.entries()).toEqual(puts);
    await checkContents(again, expected);
    expect(JSON.parse(await readFile(join(dir, "manifest.json"), "utf8")).header).toEqual(JSON.parse(JSON.stringify(header)));
    // Replacing a skill keeps one entry with the new keys.
    const [input, keys] = skill("s3", 4);
    await again.put({ ...input, name: "renamed" }, keys);
    expected.set("s3", keys);
    await again.commit();
    expect(again.get("s3")!.name).toBe("renamed");
    expect(again.stats().deadKeys).toBe(puts[3].nKeys);
    await checkContents(again, expected);
  });

  it("writes the manifest in pieces, byte for byte JSON.stringify's text, and rewrites only what changed", async () => {
    const dir = freshDir();
    const expected = new Map<string, Float32Array>();
    {
      await using bank = await BankStore.open(dir, header, { create: true });
      // ~9 MB of entry JSON: more than one 8M-character piece
      for (let i = 0; i < 650; i++) {
        const [input, keys] = skill(`big${i}`, 1600 + Math.floor(r() * 100));
        await bank.put(input, keys);
        expected.set(input.id, keys);
      }
      await bank.commit();
      const raw = await readFile(join(dir, "manifest.json"), "utf8");
      expect(raw.length).toBeGreaterThan(1 << 23);
      expect(raw).toBe(JSON.stringify(JSON.parse(raw)) + "\n");
      // (compared as text: a deep toEqual over 2M numbers takes vitest a minute)
      expect(JSON.stringify(JSON.parse(raw).entries)).toBe(JSON.stringify(bank.entries()));
      // a replaced skill and a removed one show in the next commit (cached JSON is per entry object)
      const [input, keys] = skill("big7", 3);
      await bank.put({ ...input, name: "replaced" }, keys);
      expected.set("big7", keys);
      await bank.remove("big8");
      expected.delete("big8");
      await bank.commit();
      const again = JSON.parse(await readFile(join(dir, "manifest.json"), "utf8"));
      expect(again.entries.find((e: { id: string }) => e.id === "big7")).toMatchObject({ name: "replaced", nKeys: 3 });
      expect(again.entries.some((e: { id: string }) => e.id === "big8")).toBe(false);
      await bank.compact();
      expect(JSON.stringify(JSON.parse(await readFile(join(dir, "manifest.json"), "utf8")).entries)).toBe(JSON.stringify(bank.entries()));
    }
    await using reopened = await BankStore.open(dir, header);
    expect(reopened.entries().length).toBe(expected.size);
    for (const id of ["big0", "big7", "big649"]) expect(await reopened.readKeys(id)).toEqual(expected.get(id));
  });

  it("refuses a bank built for another setup with BANK_MISMATCH and a rebuild hint", async () => {
    const dir = freshDir();
    const bank = await BankStore.open(dir, header, { create: true });
    await bank.put(...skill("a", 3));
    await bank.commit();
    await bank.close();

    const other = bankHeaderFor(await Projections.random(fp, { seed: 4, dim: DIM }));
    const e1 = await expectCode(BankStore.open(dir, other), "BANK_MISMATCH");
    expect(e1.message).toContain(`projections ${header.projectionsHash.slice(0, 12)}`);
    expect(e1.message).toContain(`delete ${dir} and run \`gavel install\` again`);
    await expectCode(BankStore.open(dir, { ...header, eps: 0.5 }), "BANK_MISMATCH", /ε = 0\.83.*ε = 0\.5/);
    await expectCode(BankStore.open(dir, { ...header, layer: 1 }), "BANK_MISMATCH", /layer 3.*layer 1/);
    await expectCode(BankStore.open(dir, { ...header, dim: 16 }), "BANK_MISMATCH", /12 dimensions.*16/);
    await expectCode(BankStore.open(dir, { ...header, model: { ...fp, architecture: "qwen3" } }), "BANK_MISMATCH", /another model \(architecture llama vs qwen3/);
    await expectCode(BankStore.open(dir, { ...header, model: { ...fp, vocabHash: "cd".repeat(32) } }), "BANK_MISMATCH", /different vocabulary/);
    // A refused open leaves no lock behind, and the bank is intact.
    await using ok = await BankStore.open(dir, header);
    expect(ok.entries().map((e) => e.id)).toEqual(["a"]);
  });

  it("refuses a folder path the file system cannot hold with a typed error, created or not", async () => {
    const file = tmp.fresh("plain");
    await writeFile(file, "not a folder");
    for (const create of [false, true]) {
      await expectCode(BankStore.open(join(file, "bank"), header, { create }), "FILE_NOT_FOUND", /ENOTDIR/); // under a file
      await expectCode(BankStore.open(join(tmp.root, "x".repeat(300)), header, { create }), "FILE_NOT_FOUND", /ENAMETOOLONG/);
      await expectCode(BankStore.open(join(tmp.root, "a\0b"), header, { create }), "INVALID_ARGUMENT", /NUL/);
    }
    await expectCode(BankStore.openSnapshot(join(file, "bank"), header), "FILE_NOT_FOUND", /ENOTDIR/);
  });

  it("reports a missing bank and a corrupt manifest with typed errors", async () => {
    const dir = freshDir();
    await expectCode(BankStore.open(dir, header), "FILE_NOT_FOUND", /gavel install/);
    await (await BankStore.open(dir, header, { create: true })).close();
    const bank = await BankStore.open(dir, header);
    await bank.close();
    const manifest = join(dir, "manifest.json");
    const good = await readFile(manifest, "utf8");
    await writeFile(manifest, good.slice(0, good.length / 2));
    await expectCode(BankStore.open(dir, header), "CORRUPT_FILE", /not valid JSON/);
    const m = JSON.parse(good);
    // (sealed, so the parse behind the seal is reached)
    await writeFile(manifest, sealedManifestText({ ...m, rows: 10, entries: [{ id: "x", nKeys: 20, offset: 0 }] }));
    await expectCode(BankStore.open(dir, header), "CORRUPT_FILE", /entry 0/);
    await writeFile(manifest, sealedManifestText({ ...m, rows: 10 })); // keys file holds 0 rows
    // a reader refuses a short keys file; a writer opens it, so the skills past its end can be
    // reinstalled or uninstalled (test/e2e/bank-repair.test.ts)
    await expectCode(BankStore.openSnapshot(dir, header), "CORRUPT_FILE", /references .*reinstall or uninstall/);
    await (await BankStore.open(dir, header)).close();
    // (sealed: a seal that does not match is damage, CORRUPT_FILE, whatever the version says)
    await writeFile(manifest, sealedManifestText({ ...m, formatVersion: 9 }));
    await expectCode(BankStore.open(dir, header), "BANK_MISMATCH", /format 9.*upgrade gavel-router/);
    await writeFile(manifest, good);
    await (await BankStore.open(dir, header)).close();
  });

  it("recovers the last commit after a crash mid-install (uncommitted rows, torn temp manifest)", async () => {
    const dir = freshDir();
    const crashed = freshDir();
    const bank = await BankStore.open(dir, header, { create: true });
    const expected = new Map<string, Float32Array>();
    for (const id of ["a", "b"]) {
      const [input, keys] = skill(id, 5);
      await bank.put(input, keys);
      expected.set(id, keys);
    }
    await bank.commit();
    const committedBytes = (await stat(join(dir, "keys.bin"))).size;
    await bank.put(...skill("c", 7)); // appended, never committed
    await bank.remove("a"); // staged, never committed
    expect((await stat(join(dir, "keys.bin"))).size).toBeGreaterThan(committedBytes);
    // "Crash": snapshot the directory as a dead process would leave it, plus a torn temp manifest
    // from a commit that died mid-write.
    await cp(dir, crashed, { recursive: true });
    await rm(join(crashed, "lock"));
    await writeFile(join(crashed, "manifest.json.0123abcd.tmp"), '{"format":"gavel-bank","formatVersion":1,"hea');
    await bank.close(); // closing without commit discards too

    for (const d of [crashed, dir]) {
      await using re = await BankStore.open(d, header);
      await checkContents(re, expected);
      expect((await stat(join(d, "keys.bin"))).size).toBe(committedBytes); // tail dropped
      expect((await readdir(d)).sort()).toEqual(["keys.bin", "lock", "manifest.json"]); // temp cleaned
      // New rows go where the garbage was.
      const [input, keys] = skill("d", 2);
      expect((await re.put(input, keys)).offset).toBe(10);
      await re.commit();
      expected.set("d", keys);
      await checkContents(re, expected);
      expected.delete("d");
    }
  });

  it("recovers after a real SIGKILL of the writing process, breaking its stale lock", async () => {
    const dir = freshDir();
    const script = join(tmp.root, "crash-child.ts");
    const src = (p: string) => JSON.stringify(join(repoRoot, "src", p));
    await writeFile(
      script,
      `import { BankStore } from ${src("bank/index.js")};
const header = JSON.parse(process.argv[2]);
const bank = await BankStore.open(${JSON.stringify(dir)}, header, { create: true });
const keys = (n, v) => new Float32Array(n * ${DIM}).fill(v);
const entry = (id, n) => ({ id, name: id, description: "", contentHash: "h", source: "s", disableModelInvocation: false, keyTokens: new Array(n).fill(1), renderTokens: n });
await bank.put(entry("kept", 2), keys(2, 0.5));
await bank.commit();
await bank.put(entry("lost", 3), keys(3, 0.25));
process.stdout.write("ready\\n");
process.kill(process.pid, "SIGKILL");
`,
    );
    const res = await run(process.execPath, [viteNodeCli, script, JSON.stringify(header)], {
      cwd: repoRoot,
      timeoutMs: 60_000,
    });
    expect(res.signal, res.err).toBe("SIGKILL");
    expect(res.out).toContain("ready");
    expect(JSON.parse(await readFile(join(dir, "lock"), "utf8")).pid).not.toBe(process.pid); // left behind
    await using bank = await BankStore.open(dir, header);
    await checkContents(bank, new Map([["kept", new Float32Array(2 * DIM).fill(0.5)]]));
  });

  it("remove + compact reclaims dead rows atomically", async () => {
    const dir = freshDir();
    const bank = await BankStore.open(dir, header, { create: true });
    const expected = new Map<string, Float32Array>();
    for (let i = 0; i < 12; i++) {
      const [input, keys] = skill(`k${i}`, 1 + Math.floor(r() * 6));
      await bank.put(input, keys);
      expected.set(input.id, keys);
    }
    await bank.commit();
    for (const id of ["k0", "k5", "k6", "k11"]) {
      expect(await bank.remove(id)).toBe(true);
      expected.delete(id);
    }
    expect(await bank.remove("k0")).toBe(false);
    const [input, keys] = skill("k2", 3); // a replacement leaves dead rows too
    await bank.put(input, keys);
    expected.set("k2", keys);
    await checkContents(bank, expected); // staged view
    const before = bank.stats();
    expect(before.deadKeys).toBeGreaterThan(0);
    await bank.compact();
    const after = bank.stats();
    expect(after.deadKeys).toBe(0);
    expect(after.keys).toBe(before.keys);
    expect(after.bytes).toBe(after.keys * DIM * 4);
    expect(bank.dirty).toBe(false);
    await checkContents(bank, expected);
    const files = (await readdir(dir)).sort();
    // One keys file, under a new name (the old one is gone), plus the manifest and the lock.
    expect(files).toHaveLength(3);
    expect(files).toEqual(expect.arrayContaining(["lock", "manifest.json"]));
    expect(files.filter((f) => /^keys\.\d+\.bin$/.test(f))).toHaveLength(1);
    expect((await stat(join(dir, files.find((f) => f.endsWith(".bin"))!))).size).toBe(after.bytes);
    await bank.close();
    await using re = await BankStore.open(dir, header);
    await checkContents(re, expected);
    await re.compact(); // nothing dead: a no-op
    await checkContents(re, expected);
  });

  it("a crash during compaction leaves the previous state readable", async () => {
    const dir = freshDir();
    const bank = await BankStore.open(dir, header, { create: true });
    const expected = new Map<string, Float32Array>();
    for (const id of ["x", "y", "z"]) {
      const [input, keys] = skill(id, 4);
      await bank.put(input, keys);
      expected.set(id, keys);
    }
    await bank.commit();
    await bank.close();
    // A compaction that died before its manifest landed leaves an unreferenced keys file.
    await writeFile(join(dir, "keys.2.bin"), new Uint8Array(100));
    await using re = await BankStore.open(dir, header);
    await checkContents(re, expected);
    expect(await readdir(dir)).not.toContain("keys.2.bin");
  });

  it("the lock keeps a second open out, and a stale lock is broken", async () => {
    const dir = freshDir();
    const bank = await BankStore.open(dir, header, { create: true });
    await expectCode(BankStore.open(dir, header), "BANK_LOCKED", /in use by this process/);
    await bank.close();
    await expectCode(bank.put(...skill("late", 1)), "DISPOSED");
    expect(() => bank.entries()).toThrow(/closed/);

    // A live process of this host holds it.
    const child = spawn("sleep", ["30"], { stdio: "ignore" });
    try {
      await writeFile(join(dir, "lock"), JSON.stringify({ pid: child.pid, host: hostname(), createdAt: "then" }));
      await expectCode(BankStore.open(dir, header), "BANK_LOCKED", new RegExp(`in use by process ${child.pid}`));
    } finally {
      child.kill("SIGKILL");
      await new Promise((res) => child.once("exit", res));
    }
    // A recycled pid: the pid is alive (ours) but its start time is not the one recorded.
    await writeFile(join(dir, "lock"), JSON.stringify({ pid: process.pid, host: hostname(), start: "1", createdAt: "then" }));
    await (await BankStore.open(dir, header)).close();
    // Its owner is gone now: the lock is stale and taken over.
    await writeFile(join(dir, "lock"), JSON.stringify({ pid: child.pid, host: hostname(), createdAt: "then" }));
    await using re = await BankStore.open(dir, header);
    expect(JSON.parse(await readFile(join(dir, "lock"), "utf8")).pid).toBe(process.pid);
    await re.close();
    expect(await readdir(dir)).not.toContain("lock");
  });

  it("validates put arguments", async () => {
    await using bank = await BankStore.open(freshDir(), header, { create: true });
    const [input, keys] = skill("v", 3);
    await expectCode(bank.put(input, keys.subarray(1)), "INVALID_ARGUMENT", /multiple of dim/);
    await expectCode(bank.put({ ...input, keyTokens: [1] }, keys), "INVALID_ARGUMENT", /keyTokens/);
    await expectCode(bank.put({ ...input, id: "" }, keys), "INVALID_ARGUMENT", /id/);
    await expectCode(bank.put({ ...input, renderCut: { descriptionChars: 1.5, bodyChars: 2 } }, keys), "INVALID_ARGUMENT", /renderCut/);
    await expectCode(bank.put({ ...input, renderCut: null as never }, keys), "INVALID_ARGUMENT", /renderCut/);
    const nan = keys.slice();
    nan[2] = NaN;
    await expectCode(bank.put(input, nan), "INVALID_ARGUMENT", /NaN/);
    await expectCode(bank.readKeys("nope"), "SKILL_NOT_FOUND");
    expect(bank.entries()).toEqual([]);
    expect(bank.stats()).toEqual({ skills: 0, keys: 0, deadKeys: 0, bytes: 0 });
  });
});

describe("reading keys in bounded chunks", () => {
  it("readAll asks for at most one chunk per read (node refuses 2 GiB reads) and still fills the buffer exactly", async () => {
    const { readAll, READ_CHUNK } = await import("../../src/bank/keys-file.js");
    expect(READ_CHUNK).toBeLessThan(2 ** 31);
    const file = tmp.fresh("chunk");
    const data = new Uint8Array(1000).map((_, i) => (i * 37 + 11) & 255);
    await writeFile(file, data);
    const { open } = await import("node:fs/promises");
    const fh = await open(file, "r");
    try {
      const asked: number[] = [];
      const spy = { read: (b: Uint8Array, o: number, n: number, p: number) => (asked.push(n), fh.read(b, o, n, p)) };
      for (const chunk of [1, 7, 333, 4096]) {
        asked.length = 0;
        const into = new Uint8Array(900);
        await readAll(spy as never, into, 100, "f", chunk);
        expect(Array.from(into)).toEqual(Array.from(data.subarray(100)));
        expect(Math.max(...asked)).toBeLessThanOrEqual(chunk);
      }
      // a file shorter than the rows it should hold is reported, not padded
      await expectCode(readAll(fh, new Uint8Array(10), 995, "f", 4), "CORRUPT_FILE");
    } finally {
      await fh.close();
    }
  });

  it("byteViews tiles a range of a buffer with views of at most one chunk (no single view over a 4 GiB bank)", async () => {
    const { byteViews } = await import("../../src/bank/keys-file.js");
    const buffer = new ArrayBuffer(64);
    for (const [at, length, chunk] of [[0, 64, 64], [3, 50, 7], [10, 0, 4], [8, 16, 16], [1, 63, 1]]) {
      const parts = [...byteViews(buffer, at, length, chunk)];
      expect(parts.every((p) => p.view.buffer === buffer && p.view.byteLength <= chunk && p.view.byteLength > 0)).toBe(true);
      // contiguous, in order, covering exactly [at, at + length)
      let next = 0;
      for (const p of parts) {
        expect(p.start).toBe(next);
        expect(p.view.byteOffset).toBe(at + p.start);
        next += p.view.byteLength;
      }
      expect(next).toBe(length);
      expect(parts).toHaveLength(Math.ceil(length / chunk));
    }
  });
});
