// The bank's lexicon under the Router on stories260K (issue 13): it follows random installs,
// uninstalls and reinstalls and equals a fresh rebuild and a plain Bm25Index over the bank's texts;
// B and the raw scores of the whole library against a textbook BM25 and a float64 log-softmax written
// here; the lexical coverage and reach a route gives abstention against the same references; and the lexicon surviving SIGKILLs of a process that is installing and uninstalling skills.
import { spawn } from "node:child_process";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Model, Projections, Router } from "../../src/index.js";
import { Library } from "../../src/bank/library.js";
import { LexicalExpert } from "../../src/route/lexical-expert.js";
import { canonical, expectSameAsBm25, plainBm25, randomQueries, randomSkill, words } from "../helpers/lexicon.js";
import { repoRoot, viteNodeCli } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { freshSeed, rng } from "../helpers/random.js";

const seed = freshSeed();
const r = rng(seed);

/** The routable skills' texts as the bank keeps them, in the bank's order. */
async function bankDocs(library: Library): Promise<{ id: string; name: string; description: string; body: string }[]> {
  const entries = library.store.entries().filter((e) => !e.disableModelInvocation);
  return Promise.all(entries.map(async (e) => ({ id: e.id, ...(await library.text(e)) })));
}

/** log softmax of scores / T by the definition, term by term in float64 (scores here are small). */
function plainLogSoftmax(scores: number[], T: number): number[] {
  const z = Math.log(scores.reduce((a, s) => a + Math.exp(s / T), 0));
  return scores.map((s) => s / T - z);
}

/** Opens the bank as the router does and checks its lexicon against a rebuild and the references. */
async function checkBank(dir: string, projections: Projections, what: string): Promise<void> {
  const library = await Library.open(dir, projections, { create: false });
  try {
    expect(library.lexicon.rebuilt, what).toBeUndefined();
    const docs = await bankDocs(library);
    expectSameAsBm25(library.lexicon.index, docs, randomQueries(r, 5), what);
    const copy = await mkdtemp(join(tmpdir(), "gavel-lexicon-copy-"));
    await cp(dir, copy, { recursive: true });
    await rm(join(copy, "lock"));
    await rm(join(copy, "lexicon.bin"));
    const fresh = await Library.open(copy, projections, { create: false });
    expect(canonical(fresh.lexicon.index), what).toEqual(canonical(library.lexicon.index));
    await fresh.close();
    await rm(copy, { recursive: true, force: true });
  } finally {
    await library.close();
  }
}

describe(`the bank's lexicon under the Router on the tiny llama (seed ${seed})`, () => {
  let model: Model;
  let projections: Projections;
  beforeAll(async () => {
    model = await Model.load(TINY_LLAMA_PATH, { contextSize: 1024, sequences: 8, threads: 1 });
    // Δ large: every skill is shortlisted, so every B is checked
    projections = (await Projections.random(model, { seed, dim: 32 })).withCalibration({ delta: 10, lexicalTemperature: 1.5 });
  });
  afterAll(async () => {
    await model?.dispose();
  });

  it("follows random installs, uninstalls and reinstalls; B and the raw scores match plain references", async () => {
    const dir = await mkdtemp(join(tmpdir(), "gavel-lexicon-router-"));
    let router = await Router.open(model, { projections, bankDir: dir, skillBudget: 128 });
    const expert = new LexicalExpert();
    let next = 0;
    for (let round = 0; round < 6; round++) {
      const what = `seed ${seed}, round ${round}`;
      const have = router.list().map((s) => s.id);
      // the first of each batch is routable, so the library always has a skill to route to
      const batch = Array.from({ length: 2 + Math.floor(r() * 3) }, (_, i) => randomSkill(r, have.length > 0 && r() < 0.3 ? have[Math.floor(r() * have.length)] : `s${next++}`, i === 0 ? true : undefined));
      await router.install([...new Map(batch.map((s) => [s.id, s])).values()]);
      if (have.length > 3 && r() < 0.6) await router.uninstall(have[Math.floor(r() * have.length)]);
      const task = words(r, 40);
      // B of every shortlisted skill: the textbook BM25 over the bank's texts, log-softmaxed here
      const res = await router.route(task, { lexical: true });
      await router.close();
      const library = await Library.open(dir, projections, { create: false });
      const docs = await bankDocs(library);
      const plain = plainBm25(docs, task);
      const B = new Map(docs.map((d, i) => [d.id, plainLogSoftmax(plain, 1.5)[i]]));
      expect(res.shortlist.length, what).toBe(Math.min(docs.length, projections.maxShortlist));
      for (const c of res.shortlist) expect(c.B!, `${what}, ${c.skill}`).toBeCloseTo(B.get(c.skill)!, 9);
      // the whole library's raw scores, and B for any ids (−∞ for one that is not routable)
      const all = await expert.scoresAll(library, task);
      expect(all.ids, what).toEqual(docs.map((d) => d.id));
      all.scores.forEach((s, i) => expect(s, what).toBeCloseTo(plain[i], 10));
      const ids = [...docs.map((d) => d.id).reverse(), "no-such-skill"];
      const post = await expert.posterior(library, task, ids, 1.5);
      ids.forEach((id, i) => expect(post[i], `${what}, ${id}`).toBeCloseTo(B.get(id) ?? -Infinity, 9));
      expect(post.at(-1)).toBe(-Infinity);
      await library.close();
      await checkBank(dir, projections, what);
      router = await Router.open(model, { projections, bankDir: dir, skillBudget: 128 });
    }
    await router.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("a lost skill text under a rebuilt lexicon refuses the route CORRUPT_FILE naming the text, one lost or all", async () => {
    const dir = await mkdtemp(join(tmpdir(), "gavel-lexicon-lost-"));
    const skills = Array.from({ length: 3 }, (_, i) => randomSkill(r, `l${i}`, true));
    let router = await Router.open(model, { projections, bankDir: dir, skillBudget: 128 });
    await router.install(skills);
    await router.close();
    const textOf = (s: { contentHash: string }) => join(dir, "texts", `${s.contentHash}.json`);
    const damage = async () => {
      await rm(join(dir, "lexicon.bin"));
      await writeFile(join(dir, "lexicon.bin"), "not a lexicon");
    };
    // one text lost, lexicon.bin damaged: the reopened bank rebuilds it and records the skill as lost
    await rm(textOf(skills[1]));
    await damage();
    router = await Router.open(model, { projections, bankDir: dir, skillBudget: 128 });
    // Δ large: the lost skill is shortlisted; the verdict off, so no text is read on the way
    for (const options of [{ lexical: true, verdict: false }, { lexical: true, verdict: false, abstain: false }]) {
      const err = await router.route(words(r, 20), options).then(() => null, (e: unknown) => e);
      expect(err, `seed ${seed}`).toMatchObject({ code: "CORRUPT_FILE" });
      expect((err as Error).message).toContain(`the bank has lost the text of a skill: ${textOf(skills[1])} is missing; reinstall the skill`);
    }
    await router.close();
    // every text lost
    for (const s of [skills[0], skills[2]]) await rm(textOf(s));
    await damage();
    router = await Router.open(model, { projections, bankDir: dir, skillBudget: 128 });
    const err = await router.route(words(r, 20), { lexical: true, verdict: false }).then(() => null, (e: unknown) => e);
    expect(err, `seed ${seed}`).toMatchObject({ code: "CORRUPT_FILE" });
    expect((err as Error).message).toMatch(/the bank has lost the text of a skill: .* is missing; reinstall the skill/);
    await router.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("gives abstention the task's lexical coverage and reach, as computed by hand over the bank's texts", async () => {
    const dir = await mkdtemp(join(tmpdir(), "gavel-lexicon-coverage-"));
    const k1 = 0.5 + 2.5 * r();
    const b = r();
    const skills = Array.from({ length: 4 + Math.floor(r() * 8) }, (_, i) => randomSkill(r, `c${i}`, i === 0 ? true : undefined));
    for (const feature of ["coverage", "reach"] as const) {
      // a threshold model's score is its feature's value, as decide computed it
      const p = projections.withCalibration({ lexicalK1: k1, lexicalB: b, abstention: { kind: "threshold", feature, threshold: -1, marginCap: 1 } });
      const router = await Router.open(model, { projections: p, bankDir: dir, skillBudget: 128 });
      if (feature === "coverage") await router.install(skills);
      const tasks = [words(r, 1 + Math.floor(r() * 30)), `${words(r, 5)} zzunseen`];
      const scores: number[] = [];
      for (const task of tasks) scores.push((await router.route(task)).abstention!.score);
      await router.close();
      const library = await Library.open(dir, p, { create: false });
      const docs = await bankDocs(library);
      await library.close();
      const tok = (t: string): string[] => t.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
      const N = docs.length;
      tasks.forEach((task, i) => {
        const what = `seed ${seed}, ${feature}, task "${task}"`;
        const top = Math.max(...plainBm25(docs, task, k1, b));
        const idf = (w: string) => {
          const n = docs.filter((d) => tok(`${d.name}\n${d.description}\n${d.body}`).includes(w)).length;
          return Math.log(1 + (N - n + 0.5) / (n + 0.5));
        };
        const ceiling = tok(task).reduce((a, w) => a + idf(w) * (k1 + 1), 0);
        const expected = feature === "coverage" ? top / ceiling : Math.log(1 + top / Math.log(1 + (N + 0.5) / 0.5));
        expect(scores[i], what).toBeCloseTo(expected, 9);
      });
    }
    await rm(dir, { recursive: true, force: true });
  });

  it("survives SIGKILLs of a process installing and uninstalling skills", async () => {
    const dir = await mkdtemp(join(tmpdir(), "gavel-lexicon-kill-"));
    const child = join(repoRoot, "test", "helpers", "router-install-child.ts");
    const projSeed = seed ^ 0x5bd1e995;
    const childProjections = await Projections.random(model, { seed: projSeed, dim: 32 });
    for (let round = 0; round < 3; round++) {
      const lines = 2 + Math.floor(r() * 12);
      const what = `seed ${seed}, round ${round}, killed after ${lines} lines`;
      const res = await new Promise<{ signal: NodeJS.Signals | null; err: string }>((resolve, reject) => {
        const p = spawn(process.execPath, [viteNodeCli, child, dir, String(projSeed), String((seed + round) >>> 0)], { cwd: repoRoot });
        let out = "";
        let err = "";
        p.stdout.setEncoding("utf8").on("data", (d: string) => {
          out += d;
          if (out.split("\n").length - 2 >= lines) p.kill("SIGKILL");
        });
        p.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
        const timer = setTimeout(() => p.kill("SIGKILL"), 90_000);
        p.on("error", reject);
        p.on("close", (_code, signal) => {
          clearTimeout(timer);
          resolve({ signal, err });
        });
      });
      expect(res.signal, `${what}: ${res.err}`).toBe("SIGKILL");
      await checkBank(dir, childProjections, what);
    }
    await rm(dir, { recursive: true, force: true });
  });
});
