// Every failure the fuzz harness found (scripts/fuzz/, docs/RELIABILITY.md), kept as a regression
// test: the seeds replayed through the harness (in a worker process, as found), and each cause tested
// directly as well.
import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bankHeaderFor, BankStore } from "../../src/bank/index.js";
import { BankLexicon } from "../../src/bank/lexicon.js";
import { Library } from "../../src/bank/library.js";
import { TextStore } from "../../src/bank/texts.js";
import type { ModelFingerprint } from "../../src/model/fingerprint.js";
import { Projections } from "../../src/projections/projections.js";
import { runFuzz } from "../../scripts/fuzz/harness.js";
import { SHARED, needsShared, repoRoot } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { run } from "../helpers/run.js";
import { expectCode } from "../helpers/gavel-error.js";

const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "ab".repeat(32) };
let root: string;
let projections: Projections;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "gavel-fuzz-reg-"));
  projections = await Projections.random(fp, { seed: 3, dim: 8 });
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("fuzz regressions", () => {
  it("replays the bank seeds that failed (texts and lexicon.bin replaced by special files) as typed refusals", async () => {
    const report = await runFuzz({
      inputs: 4,
      seed: 0,
      weights: {},
      trials: [
        { target: "bank", seed: 243770168 }, // texts -> /proc/self/status: raw EINVAL from fsync at close
        { target: "bank", seed: 2032360659 }, // texts -> /proc/self/mem: the same
        { target: "bank", seed: 994378087 }, // lexicon.bin a directory: raw EISDIR from the rebuild's rename
        { target: "bank", seed: 1646772580 }, // the same
      ],
    });
    expect(report.failures).toEqual([]);
    expect(report.counts.bank.typed).toBe(4);
  });

  it("a texts folder that is a file, a FIFO or a device is CORRUPT_FILE at sync (never a raw error or a blocked open), and Library.close still releases the lock", async () => {
    for (const kind of ["file", "fifo", "device"] as const) {
      const dir = join(root, `texts-${kind}`);
      await mkdir(dir);
      const texts = join(dir, "texts");
      if (kind === "file") await writeFile(texts, "x");
      else if (kind === "fifo") spawnSync("mkfifo", [texts]);
      else await symlink("/dev/null", texts);
      await expect(new TextStore(dir).syncDir(), kind).rejects.toMatchObject({ code: "CORRUPT_FILE" });
      await expect(new TextStore(dir).put("ab".repeat(32), { name: "a", description: "b", body: "c" }), kind).rejects.toMatchObject({ code: "CORRUPT_FILE" });
    }
    const dir = join(root, "library");
    const lib = await Library.open(dir, projections, { create: true });
    await rm(join(dir, "texts"), { recursive: true, force: true });
    await writeFile(join(dir, "texts"), "not a folder");
    await expectCode(lib.close(), "CORRUPT_FILE");
    const again = await BankStore.open(dir, bankHeaderFor(projections)); // the lock was released
    await again.close();
  });

  it("a lexicon.bin that is a directory is CORRUPT_FILE at open, naming it (was a raw EISDIR)", async () => {
    const dir = join(root, "lexdir");
    const store = await BankStore.open(dir, bankHeaderFor(projections), { create: true });
    await mkdir(join(dir, "lexicon.bin"));
    await writeFile(join(dir, "lexicon.bin", "x"), "y");
    await expect(BankLexicon.open(store, new TextStore(dir))).rejects.toMatchObject({ code: "CORRUPT_FILE", message: expect.stringContaining("lexicon.bin") });
    await store.close();
  });

  it("a manifest.json linked to /proc/self/mem (regular by stat, EIO on read) is CORRUPT_FILE (was a raw EIO; fuzz seed bank:3711115741)", async () => {
    const dir = join(root, "procmem");
    await mkdir(dir);
    await symlink("/proc/self/mem", join(dir, "manifest.json"));
    await expectCode(BankStore.open(dir, bankHeaderFor(projections)), "CORRUPT_FILE");
  });

  // KNOWN, not fixed here (src/model/Model.ts is outside this change): checkGgufFile's readSync lets a
  // raw EIO escape for a path that stat calls a regular file but that cannot be read.
  it("Model.load of /proc/self/mem is a typed error", async () => {
    const { Model } = await import("../../src/model/Model.js");
    const { GavelError } = await import("../../src/errors.js");
    const err = await Model.load("/proc/self/mem").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GavelError);
  });

  // KNOWN CRASH, not fixed here (src/gguf/model-check.ts is outside this change): a NUL byte written
  // into a vocabulary string makes two tokens equal for llama.cpp, which reads each token through a C
  // string (cut at the NUL), while the TypeScript check compares whole strings; llama.cpp then aborts
  // with GGML_ASSERT(id_to_token.size() == token_to_id.size()) (exit 134). Fuzz seeds model:272942671
  // (header byte@4411=0), model:2191999398 (u16@1248=0), model:3116464044, model:3002482504. The fix:
  // compare `s.split("\0", 1)[0]` in checkVocabulary. Turn `it.fails` into `it` when it lands.
  it("a vocabulary string with a NUL that makes it equal to another for llama.cpp is refused, not an abort", async () => {
    const dir = join(root, "nul");
    await mkdir(dir);
    const buf = await readFile(TINY_LLAMA_PATH);
    // "▁the" cut by a NUL after "▁th" reads as the token "▁th" in llama.cpp (both in the vocabulary)
    const the = Buffer.from("▁the", "utf8");
    const key = Buffer.alloc(8 + the.length);
    key.writeBigUInt64LE(BigInt(the.length));
    the.copy(key, 8);
    const at = buf.indexOf(key);
    expect(at).toBeGreaterThan(0);
    expect(buf.indexOf(Buffer.concat([Buffer.from([Buffer.byteLength("▁th"), 0, 0, 0, 0, 0, 0, 0]), Buffer.from("▁th", "utf8")]))).toBeGreaterThan(0);
    buf[at + 8 + Buffer.byteLength("▁th", "utf8")] = 0;
    const file = join(dir, "m.gguf");
    await writeFile(file, buf);
    const script = join(dir, "load.mjs");
    await writeFile(
      script,
      `import { Model, GavelError } from ${JSON.stringify(join(repoRoot, "dist", "index.js"))};
try { const m = await Model.load(${JSON.stringify(file)}, { contextSize: 64, threads: 1 }); await m.dispose(); console.log("loaded"); }
catch (e) { console.log(e instanceof GavelError ? e.code : "untyped " + e); }`,
    );
    const res = await run(process.execPath, [script], { timeoutMs: 60_000 });
    expect(res.signal, res.err.slice(-500)).toBeNull();
    expect(res.out.trim()).toBe("MODEL_LOAD_FAILED");
  });

  // The seed mutates stories260K's bytes: it replays only on that file.
  it.skipIf(needsShared("stories260K, the file fuzz seed model:401352956 mutated", SHARED.stories))(
    "a norm weight whose type byte was flipped to Q4_0 is refused before llama.cpp (was SIGABRT in ggml's binary_op; fuzz seed model:401352956)",
    async () => {
      const report = await runFuzz({ inputs: 1, seed: 0, weights: {}, trials: [{ target: "model", seed: 401352956 }] });
      expect(report.failures).toEqual([]);
      expect(report.counts.model.typed).toBe(1);
    },
  );

  it("a norm weight that is not F32 is refused by the header check (the cause of fuzz seed model:401352956)", async () => {
    // any 1-D tensor, norm weight or bias that is not F32
    const { checkModelHeader, readGgufHeader } = await import("../../src/gguf/index.js");
    const header = await readGgufHeader(TINY_LLAMA_PATH);
    checkModelHeader(header, TINY_LLAMA_PATH); // the real model passes
    const norm = header.tensors.findIndex((t) => t.name.endsWith("norm.weight"));
    expect(norm).toBeGreaterThanOrEqual(0);
    const broken = { ...header, tensors: header.tensors.map((t, i) => (i === norm ? { ...t, type: 2 } : t)) };
    expect(() => checkModelHeader(broken, TINY_LLAMA_PATH)).toThrow(/must be F32/);
  });
});
