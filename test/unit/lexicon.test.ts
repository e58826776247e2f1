// The lexicon the bank keeps (issue 13): the live BM25 index against a plain Bm25Index bit for bit,
// the bank's lexicon against a fresh rebuild through random installs, uninstalls, reinstalls,
// reopens and compactions, its rebuild when missing, damaged or out of step, and its survival of
// SIGKILLs of the writing process. Skills and queries are random from a fresh seed, in the names.
import { spawn } from "node:child_process";
import { cp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { bankHeaderFor, type BankHeader } from "../../src/bank/index.js";
import { LiveBm25Index } from "../../src/lexical/live-index.js";
import { Vocabulary } from "../../src/lexical/postings.js";
import { readRecords } from "../../src/bank/lexicon-log.js";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { Projections } from "../../src/projections/projections.js";
import { crc32, crc32Js } from "../../src/util/crc32.js";
import { canonical, expectSameAsBm25, LexiconBank, randomQueries, randomSkill, words, type TestSkill } from "../helpers/lexicon.js";
import { repoRoot, viteNodeCli } from "../helpers/paths.js";
import { freshSeed, rng } from "../helpers/random.js";
import { tempRoot } from "../helpers/temp-dirs.js";

const seed = freshSeed();
const r = rng(seed);
const fp = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "ab".repeat(32) };
let header: BankHeader;
const tmp = tempRoot("gavel-lexicon-test-");
const freshDir = () => tmp.fresh();

beforeAll(async () => {
  header = bankHeaderFor(await Projections.random(fp, { seed: 3, dim: 4 }));
});

/** A copy of a bank directory as a dead process would leave it (no lock). */
async function copyBank(dir: string): Promise<string> {
  const to = freshDir();
  await cp(dir, to, { recursive: true });
  await rm(join(to, "lock"), { force: true });
  return to;
}

/** The bank's lexicon is a plain Bm25Index over its routable texts, and what a rebuild makes. */
async function expectConsistent(bank: LexiconBank, what: string): Promise<void> {
  expectSameAsBm25(bank.lexicon.index, await bank.routableDocs(), randomQueries(r, 6), what);
  const copy = await copyBank(bank.store.dir);
  await rm(join(copy, "lexicon.bin"));
  const fresh = await LexiconBank.open(copy, header);
  // (a bank with no routable skill gets its empty lexicon without a word)
  if (bank.store.entries().some((e) => !e.disableModelInvocation)) expect(fresh.lexicon.rebuilt?.reason, what).toMatch(/missing/);
  else expect(fresh.lexicon.rebuilt, what).toBeUndefined();
  expect(canonical(bank.lexicon.index), what).toEqual(canonical(fresh.lexicon.index));
  await fresh.close();
}

describe(`the live BM25 index (seed ${seed})`, () => {
  it("equals a Bm25Index over the same documents, bit for bit, through random additions, removals, replacements and compactions", () => {
    const live = new LiveBm25Index();
    const docs = new Map<string, TestSkill>();
    let next = 0;
    for (let step = 0; step < 600; step++) {
      const ids = [...docs.keys()];
      const x = r();
      if (x < 0.45 || ids.length < 3) {
        const s = randomSkill(r, `d${next++}`);
        live.add(s);
        docs.set(s.id, s);
      } else if (x < 0.6) {
        const s = randomSkill(r, ids[Math.floor(r() * ids.length)]);
        live.add(s); // a replacement moves to the end
        docs.delete(s.id);
        docs.set(s.id, s);
      } else if (x < 0.95) {
        const id = ids[Math.floor(r() * ids.length)];
        expect(live.remove(id)).toBe(true);
        docs.delete(id);
      } else live.compact();
      // queries now and then, so the postings are laid out at every stage (fresh, recent, stale base)
      if (r() < 0.2) expectSameAsBm25(live, [...docs.values()], randomQueries(r, 3), `seed ${seed}, step ${step}`);
    }
    expect(live.remove("nope")).toBe(false);
    expectSameAsBm25(live, [...docs.values()], randomQueries(r, 10), `seed ${seed}, end`);
    // compacted, its vocabulary is a fresh index's: terms numbered by first appearance
    live.compact();
    const fresh = new LiveBm25Index();
    for (const d of docs.values()) fresh.add(d);
    expect(live.vocabulary.size).toBe(fresh.vocabulary.size);
    for (let t = 0; t < fresh.vocabulary.size; t++) expect(live.vocabulary.term(t)).toBe(fresh.vocabulary.term(t));
    expect(canonical(live)).toEqual(canonical(fresh));
    // scores line up with ids(): the routable library in order
    const q = "report pdf table";
    const ref = new Bm25Index([...docs.values()]);
    expect(Array.from(live.scores(q))).toEqual(Array.from(ref.scores(q)));
  });

  it("checks its parameters, and scores an empty index", () => {
    expect(() => new LiveBm25Index({ b: 2 })).toThrow(/b must be in \[0, 1\]/);
    const live = new LiveBm25Index({ k1: 0.9, b: 0.4 });
    expect(live.scores("anything").length).toBe(0);
    live.add({ id: "x", name: "x", description: "" });
    expectSameAsBm25(live, [{ id: "x", name: "x", description: "" }], ["x", "y"], "one document");
  });

  it("has a vocabulary that finds every term it was given, however given (one at a time or appended)", () => {
    const vocab = new Vocabulary();
    const ref = new Map<string, number>();
    for (let round = 0; round < 40; round++) {
      const terms = Array.from({ length: Math.floor(r() * 400) }, () => words(r, 1).toLowerCase());
      if (r() < 0.3) {
        const fresh = [...new Set(terms)].filter((t) => !ref.has(t));
        for (const t of fresh) ref.set(t, ref.size);
        vocab.append(fresh);
      } else {
        for (const t of terms) {
          if (!ref.has(t)) ref.set(t, ref.size);
          expect(vocab.intern(t)).toBe(ref.get(t));
        }
      }
      expect(vocab.size).toBe(ref.size);
      for (const t of terms) expect(vocab.id(t), `seed ${seed}`).toBe(ref.get(t));
      expect(vocab.id(`never-${round}`)).toBeUndefined();
    }
    for (const [t, id] of ref) expect(vocab.term(id)).toBe(t);
  });

  it("computes CRC-32 natively as the table does", () => {
    for (let len = 0; len < 300; len += 37) {
      const b = new Uint8Array(len).map(() => Math.floor(r() * 256));
      expect(crc32(b)).toBe(crc32Js(b));
    }
    expect(crc32Js(Buffer.from("123456789"))).toBe(0xcbf43926);
  });
});

/** One random change: new skills, a reinstall with new content (or routable no more), or uninstalls. */
async function randomChange(bank: LexiconBank, next: () => string): Promise<void> {
  const ids = bank.store.entries().map((e) => e.id);
  const x = r();
  if (x < 0.45 || ids.length < 4) {
    for (let k = 0, m = 1 + Math.floor(r() * 8); k < m; k++) await bank.save(randomSkill(r, next()));
  } else if (x < 0.7) {
    for (let k = 0, m = 1 + Math.floor(r() * 3); k < m; k++) await bank.save(randomSkill(r, ids[Math.floor(r() * ids.length)]));
  } else {
    for (let k = 0, m = 1 + Math.floor(r() * 4); k < m; k++) await bank.remove(ids[Math.floor(r() * ids.length)]);
  }
}

describe(`the bank's lexicon (seed ${seed})`, () => {
  it("matches a fresh rebuild and a plain Bm25Index after random installs, uninstalls and reinstalls, across reopens and compactions", async () => {
    for (const compactBytes of [undefined, 0]) {
      const dir = freshDir();
      let bank = await LexiconBank.open(dir, header, { compactBytes });
      expect(bank.lexicon.rebuilt).toBeUndefined(); // a new bank's empty lexicon is no rebuild
      let next = 0;
      for (let round = 0; round < 14; round++) {
        const what = `seed ${seed}, compactBytes ${compactBytes}, round ${round}`;
        await randomChange(bank, () => `s${next++}`);
        // staged changes are in the index at once, as they are in the bank's entries
        expectSameAsBm25(bank.lexicon.index, await bank.routableDocs(), randomQueries(r, 3), `${what}, staged`);
        if (r() < 0.2) await randomChange(bank, () => `s${next++}`); // two changes in one commit
        await bank.commit();
        await expectConsistent(bank, what);
        if (round % 4 === 3) {
          await bank.close();
          bank = await LexiconBank.open(dir, header, { compactBytes });
          expect(bank.lexicon.rebuilt, what).toBeUndefined();
          await expectConsistent(bank, `${what}, reopened`);
        }
      }
      // uninstalling skills leaves the file mostly dead records: once they outweigh the live ones a
      // commit rewrites it whole, byte for byte what a rebuild writes (at the latest when no skill is
      // left, whatever the sizes the seed drew; before, the file holds at most twice its live bytes)
      const rebuilt = async () => {
        const copy = await copyBank(dir);
        await rm(join(copy, "lexicon.bin"));
        await (await LexiconBank.open(copy, header)).close();
        return Promise.all([readFile(join(dir, "lexicon.bin")), readFile(join(copy, "lexicon.bin"))]);
      };
      if (compactBytes === 0) {
        let rewritten = false;
        for (const e of bank.store.entries()) {
          await bank.remove(e.id);
          await bank.commit();
          await expectConsistent(bank, `seed ${seed}, compactBytes 0, after uninstalling ${e.id}`);
          const [a, b] = await rebuilt();
          if (a.equals(b)) {
            rewritten = true;
            break;
          }
          expect(a.length, `seed ${seed}: not rewritten at ${a.length} bytes, ${b.length} live`).toBeLessThanOrEqual(2 * b.length);
        }
        expect(rewritten, `seed ${seed}`).toBe(true);
      } else {
        for (const e of bank.store.entries().slice(0, -3)) await bank.remove(e.id);
        await bank.commit();
        await expectConsistent(bank, `seed ${seed}, compactBytes ${compactBytes}, after uninstalls`);
        const [a, b] = await rebuilt();
        expect(a.length).toBeGreaterThan(b.length); // under the 1 MiB floor nothing is rewritten
      }
      await bank.close();
    }
  });

  it("is rebuilt when missing, damaged or out of step, and then matches", async () => {
    const dir = freshDir();
    const bank = await LexiconBank.open(dir, header);
    let next = 0;
    for (let i = 0; i < 4; i++) {
      await randomChange(bank, () => `s${next++}`);
      await bank.commit();
    }
    const older = await readFile(join(dir, "lexicon.bin"));
    for (let i = 0; i < 2; i++) {
      await randomChange(bank, () => `s${next++}`);
      await bank.commit();
    }
    // Each case below must leave something to rebuild: random removals can empty the bank (seed
    // 1603148478 did), and an empty bank's missing lexicon is no rebuild (the first test).
    for (let k = 0; k < 50 && canonical(bank.lexicon.index).length < 2; k++) {
      await bank.save(randomSkill(r, `s${next++}`));
      await bank.commit();
    }
    const good = await readFile(join(dir, "lexicon.bin"));
    const want = canonical(bank.lexicon.index);
    expect(want.length, `seed ${seed}`).toBeGreaterThanOrEqual(2);
    // records read as views of 4-aligned bytes, or copied from a buffer that is not aligned: the same
    const misaligned = Buffer.concat([Buffer.alloc(1), good]).subarray(1);
    const records = (b: Buffer) => [...readRecords(b)].map(({ record, end }) => ({ end, record: JSON.stringify(record, (_k, v) => (ArrayBuffer.isView(v) ? Array.from(v as Int32Array) : v)) }));
    expect(records(misaligned)).toEqual(records(good));
    const flip = (at: number) => {
      const b = Buffer.from(good);
      b[at] ^= 0x40;
      return b;
    };
    const header12 = Buffer.from(good);
    header12.writeUInt32LE(99, 12);
    const cases: [string, Buffer | null, RegExp][] = [
      ["missing", null, /missing/],
      ["a flipped byte", flip(16 + Math.floor(r() * (good.length - 40))), /CRC|malformed|torn/],
      ["cut in half", good.subarray(0, good.length >> 1), /torn|no commit|last commit/],
      ["not a lexicon", Buffer.from("hello"), /not a lexicon file/],
      ["another tokenizer", header12, /tokenizer version 99/],
      ["an older generation's", older, /last commit is generation \d+, the bank's is \d+/],
    ];
    for (const [what, bytes, reason] of cases) {
      const copy = await copyBank(dir);
      if (bytes) await writeFile(join(copy, "lexicon.bin"), bytes);
      else await rm(join(copy, "lexicon.bin"));
      const re = await LexiconBank.open(copy, header);
      expect(re.lexicon.rebuilt?.reason, `${what}, seed ${seed}`).toMatch(reason);
      expect(re.lexicon.rebuilt?.skills).toBe(want.length);
      expect(canonical(re.lexicon.index), what).toEqual(want);
      expectSameAsBm25(re.lexicon.index, await re.routableDocs(), randomQueries(r, 4), what);
      await re.close();
      const again = await LexiconBank.open(copy, header); // rebuilt once, read since
      expect(again.lexicon.rebuilt, what).toBeUndefined();
      expect(canonical(again.lexicon.index), what).toEqual(want);
      await again.close();
    }
    // another bank's lexicon at the same generation: its skills are not this bank's
    const other = freshDir();
    const ob = await LexiconBank.open(other, header);
    while (ob.store.generation < bank.store.generation) {
      await ob.save(randomSkill(r, `o${ob.store.generation}`, true));
      await ob.commit();
    }
    await ob.close();
    const copy = await copyBank(dir);
    await cp(join(other, "lexicon.bin"), join(copy, "lexicon.bin"));
    const re = await LexiconBank.open(copy, header);
    expect(re.lexicon.rebuilt?.reason).toMatch(/skills|lacks skill/);
    expect(canonical(re.lexicon.index)).toEqual(want);
    await re.close();
    await bank.close();
  });

  it("drops a torn tail and a commit whose manifest never landed, without a rebuild", async () => {
    const dir = freshDir();
    const bank = await LexiconBank.open(dir, header);
    let next = 0;
    await randomChange(bank, () => `s${next++}`);
    await bank.commit();
    const committed = canonical(bank.lexicon.index);
    const size = (await stat(join(dir, "lexicon.bin"))).size;
    // the next commit's lexicon half, written and synced, then a crash before its manifest
    for (let k = 0; k < 3; k++) await bank.save(randomSkill(r, `late${k}`, true));
    await bank.lexicon.prepare(bank.store.generation + 1);
    expect((await stat(join(dir, "lexicon.bin"))).size).toBeGreaterThan(size);
    const crashed = await copyBank(dir);
    // and a torn record after it
    await writeFile(join(crashed, "lexicon.bin"), Buffer.concat([await readFile(join(crashed, "lexicon.bin")), Buffer.from([200, 1, 0, 0, 9])]));
    const re = await LexiconBank.open(crashed, header);
    expect(re.lexicon.rebuilt).toBeUndefined();
    expect(canonical(re.lexicon.index)).toEqual(committed);
    expect((await stat(join(crashed, "lexicon.bin"))).size).toBe(size); // the tail is cut
    await expectConsistent(re, `seed ${seed}, after the crash`);
    // and it goes on: the next commit lands where the dropped records were
    await re.save(randomSkill(r, "after", true));
    await re.commit();
    await expectConsistent(re, `seed ${seed}, committed after the crash`);
    await re.close();
    await bank.close();
  });

  it("keeps a skill whose text was lost out of the index, and does not rebuild again for it", async () => {
    const dir = freshDir();
    const bank = await LexiconBank.open(dir, header);
    const skills = Array.from({ length: 6 }, (_, i) => randomSkill(r, `t${i}`, true));
    for (const s of skills) await bank.save(s);
    await bank.commit();
    await bank.close();
    await rm(join(dir, "texts", `${skills[2].contentHash}.json`));
    await rm(join(dir, "lexicon.bin"));
    let re = await LexiconBank.open(dir, header);
    expect(re.lexicon.rebuilt).toMatchObject({ reason: "it is missing", skills: 5, lost: ["t2"] });
    expectSameAsBm25(re.lexicon.index, await re.routableDocs(), randomQueries(r, 4), `seed ${seed}, lost text`);
    await re.close();
    re = await LexiconBank.open(dir, header);
    expect(re.lexicon.rebuilt).toBeUndefined();
    expect(re.lexicon.lost).toEqual(["t2"]);
    // reinstalling it indexes it again, in the bank's order
    await re.save(skills[2]);
    await re.commit();
    await expectConsistent(re, `seed ${seed}, reinstalled`);
    await re.close();
  });

  it("survives SIGKILLs of the writing process at random points, and between its lexicon and its manifest", async () => {
    const dir = freshDir();
    const child = join(repoRoot, "test", "helpers", "lexicon-child.ts");
    const run = (mode: string, childSeed: number, killAfterMs?: number) =>
      new Promise<{ signal: NodeJS.Signals | null; out: string; err: string }>((resolve, reject) => {
        const p = spawn(process.execPath, [viteNodeCli, child, dir, JSON.stringify(header), String(childSeed), mode], { cwd: repoRoot });
        let out = "";
        let err = "";
        p.stdout.setEncoding("utf8").on("data", (d: string) => {
          out += d;
          if (killAfterMs !== undefined && out.includes("ready")) setTimeout(() => p.kill("SIGKILL"), killAfterMs);
        });
        p.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
        const timer = setTimeout(() => p.kill("SIGKILL"), 60_000);
        p.on("error", reject);
        p.on("close", (_code, signal) => {
          clearTimeout(timer);
          resolve({ signal, out, err });
        });
      });
    for (let round = 0; round < 6; round++) {
      const mode = round % 3 === 1 ? "before-manifest" : "random";
      const delay = Math.floor(r() * 400);
      const res = await run(mode, (seed + round) >>> 0, mode === "random" ? delay : undefined);
      const what = `seed ${seed}, round ${round} (${mode}${mode === "random" ? `, killed ${delay} ms after its first commit` : ""})`;
      expect(res.signal, `${what}: ${res.err}`).toBe("SIGKILL");
      const bank = await LexiconBank.open(dir, header);
      // the old state or the new one, each readable as it is: no rebuild
      expect(bank.lexicon.rebuilt, what).toBeUndefined();
      await expectConsistent(bank, what);
      await bank.close();
    }
  });
});
