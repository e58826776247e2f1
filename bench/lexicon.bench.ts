/**
 * What the bank's lexicon (src/bank/lexicon.ts) costs at library scale, over the benchmark library
 * (SWE-Skills-Bench + skills-mit, ~30.6K routable skills): staging every skill at install, the
 * commits, the file's size, reopening it (replay), rebuilding it from texts/, and a query (BM25 of
 * the whole library for one task of batches 6–10) against a Bm25Index over the same texts, fresh and
 * after installs and an uninstall on top.
 *
 *   npm run bench -- lexicon [skills=all]
 *
 * Keys are 4-wide placeholders (the lexicon, not the keys file, is measured); texts are written
 * without fsync (setup only); the bank lives under the OS temp dir.
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BankStore, bankHeaderFor } from "../src/bank/index.js";
import { BankLexicon } from "../src/bank/lexicon.js";
import { TextStore } from "../src/bank/texts.js";
import { loadLibrary } from "../lab/eval/io.js";
import { loadTasks, selectTasks } from "../lab/eval/tasks.js";
import { Bm25Index } from "../src/lexical/bm25.js";
import type { LiveBm25Index } from "../src/lexical/live-index.js";
import type { ModelFingerprint } from "../src/model/fingerprint.js";
import { Projections } from "../src/projections/projections.js";
import type { Skill } from "../src/skills/index.js";

const shared = join(process.cwd(), "..", "shared", "data");
const { skills: all } = await loadLibrary([join(shared, "swe-skills-bench", "skills.jsonl"), join(shared, "skills-mit.jsonl.gz")]);
const limit = Number(process.argv[2] ?? all.length);
const skills = all.filter((s) => !s.disableModelInvocation).slice(0, limit);
const tasks = selectTasks(await loadTasks(join(shared, "swe-skills-bench", "tasks.jsonl")), { batches: "6-10" }).map((t) => t.text);
const fp: ModelFingerprint = { architecture: "llama", nLayer: 10, nEmbd: 384, nVocab: 32000, vocabHash: "ab".repeat(32) };
const header = bankHeaderFor(await Projections.random(fp, { seed: 1, dim: 4 }));
const dir = mkdtempSync(join(tmpdir(), "gavel-lexicon-bench-"));
const keys = new Float32Array(4).fill(0.5);
const ms = (t0: number) => performance.now() - t0;

function queryTimes(score: (q: string) => unknown): string {
  const t: number[] = [];
  for (const rep of [0, 1]) {
    for (const q of tasks) {
      const t0 = performance.now();
      score(q);
      if (rep) t.push(ms(t0));
    }
  }
  t.sort((a, b) => a - b);
  return `median ${t[t.length >> 1].toFixed(2)} ms, p90 ${t[Math.floor(t.length * 0.9)].toFixed(2)} ms`;
}

async function stage(store: BankStore, lexicon: BankLexicon, list: readonly Skill[]): Promise<number> {
  let put = 0;
  for (const s of list) {
    writeFileSync(join(dir, "texts", `${s.contentHash}.json`), JSON.stringify({ name: s.name, description: s.description, body: s.body }));
    await store.put({ ...s, keyTokens: [1], renderTokens: 1 }, keys);
    const t0 = performance.now();
    lexicon.put(s, s);
    put += ms(t0);
  }
  return put;
}

function firstQuery(index: LiveBm25Index): string {
  const t0 = performance.now();
  index.scores(tasks[0]);
  return `${ms(t0).toFixed(0)} ms`;
}

try {
  mkdirSync(join(dir, "texts"));
  let store = await BankStore.open(dir, header, { create: true });
  const texts = new TextStore(dir);
  let lexicon = await BankLexicon.open(store, texts);
  const base = skills.slice(0, skills.length - 1000);
  let put = 0;
  const commits: number[] = [];
  for (let i = 0; i < base.length; i += 2000) {
    put += await stage(store, lexicon, base.slice(i, i + 2000));
    const t0 = performance.now();
    await store.commit();
    commits.push(ms(t0));
  }
  const mb = statSync(lexicon.path).size / 1e6;
  console.log(`install ${base.length} skills: lexicon.put ${(put / 1000).toFixed(2)} s in all (${((1000 * put) / base.length).toFixed(0)} µs a skill); commits of 2,000 skills ${commits.map((c) => c.toFixed(0)).join(", ")} ms; lexicon.bin ${mb.toFixed(1)} MB`);
  console.log(`first query (lays out the postings): ${firstQuery(lexicon.index)}`);
  const ref = new Bm25Index(base);
  console.log(`query, lexicon: ${queryTimes((q) => lexicon.index.scores(q))}; Bm25Index: ${queryTimes((q) => ref.scores(q))}`);
  await store.close();

  let t0 = performance.now();
  store = await BankStore.open(dir, header);
  const storeMs = ms(t0);
  t0 = performance.now();
  lexicon = await BankLexicon.open(store, texts);
  console.log(`reopen: lexicon ${ms(t0).toFixed(0)} ms (store ${storeMs.toFixed(0)} ms), rebuilt: ${lexicon.rebuilt?.reason ?? "no"}`);
  console.log(`first query after reopen: ${firstQuery(lexicon.index)}`);

  put = await stage(store, lexicon, skills.slice(base.length));
  t0 = performance.now();
  await store.commit();
  console.log(`install 1,000 more: lexicon.put ${put.toFixed(0)} ms, commit ${ms(t0).toFixed(0)} ms; first query ${firstQuery(lexicon.index)}; query ${queryTimes((q) => lexicon.index.scores(q))}`);
  await store.remove(skills[5].id);
  lexicon.remove(skills[5].id);
  await store.commit();
  console.log(`after an uninstall: first query ${firstQuery(lexicon.index)}; query ${queryTimes((q) => lexicon.index.scores(q))}`);
  await store.close();

  rmSync(lexicon.path);
  store = await BankStore.open(dir, header);
  t0 = performance.now();
  lexicon = await BankLexicon.open(store, texts);
  console.log(`rebuild from texts/ (${lexicon.rebuilt?.reason}): ${ms(t0).toFixed(0)} ms for ${lexicon.index.size} skills`);
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
