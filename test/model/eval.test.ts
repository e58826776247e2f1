// gavel eval: metrics and the gold rule on hand-made cases, BM25 on a toy library, and an
// end-to-end run (API and CLI) on the real stories260K model over a small mixed library.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { Model } from "../../src/model/Model.js";
import { runNode } from "../helpers/run.js";
import { Projections } from "../../src/projections/projections.js";
import { Router } from "../../src/route/Router.js";
import { loadSkills, type Skill } from "../../src/skills/index.js";
import { appendPerQuery } from "../../lab/eval/io.js";
import { Bm25Index, bm25Tokens } from "../../src/lexical/bm25.js";
import { chooseByRuling } from "../../src/route/index.js";
import {
  acceptedIds,
  evaluate,
  hitAt1,
  loadLibrary,
  loadTasks,
  parseBatches,
  parseMethods,
  readPerQuery,
  recallAt,
  scoreRecords,
  selectTasks,
  writePerQuery,
  type EvalTask,
  type PerQueryRecord,
} from "../../lab/eval/index.js";
import { repoRoot, sharedDir, storiesPath, needsShared, SHARED } from "../helpers/paths.js";
import { expectCode } from "../helpers/gavel-error.js";

const NO_SHARED = needsShared("stories260K, the MIT skills library and SWE-Skills-Bench for the end-to-end eval", SHARED.stories, SHARED.mit, SHARED.bench);

const bench = join(sharedDir, "data", "swe-skills-bench");

const lib = [
  { id: "pdf", name: "pdf", description: "Extract text and tables from PDF files", body: "Use pdfplumber to read every page here." },
  { id: "mirror/pdf", name: "pdf", description: "Extract text and tables from PDF files", body: "A verbatim copy kept by a mirror." },
  { id: "pdf-lite", name: "pdf", description: "Extract text from PDF files", body: "Same name, other description: not a copy." },
  { id: "docker", name: "docker", description: "Write Dockerfiles and compose files", body: "Multi-stage builds, healthchecks, compose services." },
  { id: "git", name: "git", description: "Rebase, bisect and recover commits", body: "git rebase -i, git bisect, git reflog." },
];

describe("metrics", () => {
  it("accepts a gold and its identical copies (same name AND description), nothing else", () => {
    expect([...acceptedIds(["pdf"], lib)].sort()).toEqual(["mirror/pdf", "pdf"]);
    // A copy is accepted whichever of the two the task names as gold.
    expect([...acceptedIds(["mirror/pdf"], lib)].sort()).toEqual(["mirror/pdf", "pdf"]);
    expect([...acceptedIds(["docker", "nope"], lib)]).toEqual(["docker"]);
    expect(acceptedIds(["nope"], lib).size).toBe(0);
  });

  it("Hit@1 reads the committed (first) skill; R@k any of the first k", () => {
    const acc = acceptedIds(["pdf"], lib);
    expect(hitAt1(["mirror/pdf", "docker"], acc)).toBe(1); // the copy counts
    expect(hitAt1(["pdf-lite", "pdf"], acc)).toBe(0); // same name, other description: a miss
    expect(hitAt1([], acc)).toBe(0);
    expect(hitAt1([{ skill: "pdf" }], acc)).toBe(1);
    expect(hitAt1([{ id: "git" }], acc)).toBe(0);
    expect(recallAt(["git", "docker", "pdf"], acc, 3)).toBe(1);
    expect(recallAt(["git", "docker", "pdf"], acc, 2)).toBe(0);
    expect(recallAt(["git"], acc, 20)).toBe(0);
  });

  it("the ruling replay keeps route()'s order on ties and honours Δ and maxShortlist", () => {
    // Values exact in binary, so the tie below is exact.
    const verdict = [
      { skill: "a", g: 1.0, L: -1, V: 0 },
      { skill: "b", g: 0.5, L: -1, V: 5 }, // S = 0 ties with a's at γ = 0.1
      { skill: "c", g: 0.25, L: 0, V: 0 },
    ];
    expect(chooseByRuling(verdict, { alpha: 1, gamma: 0.1, delta: 0.6, maxShortlist: 20 })).toBe("a"); // tie: glance order
    expect(chooseByRuling(verdict, { alpha: 1, gamma: 0.2, delta: 0.6, maxShortlist: 20 })).toBe("b");
    expect(chooseByRuling(verdict, { alpha: 1, gamma: 0.2, delta: 0.4, maxShortlist: 20 })).toBe("a"); // b not shortlisted
    expect(chooseByRuling(verdict, { alpha: 1, gamma: 0, delta: 1, maxShortlist: 20 })).toBe("c"); // 0.25 + 0 > 1 - 1
    expect(chooseByRuling(verdict, { alpha: 1, gamma: 0, delta: 1, maxShortlist: 2 })).toBe("a");
    expect(chooseByRuling([], { alpha: 1, gamma: 0, delta: 1, maxShortlist: 2 })).toBeNull();
  });

  it("scores per-query records: ablations' R@20 is the glance's", () => {
    const records: PerQueryRecord[] = [
      { id: "t1", golds: ["pdf"], accepted: ["pdf"], bm25: ["pdf"], glance: [{ skill: "git", g: 1 }, { skill: "pdf", g: 0.9 }], chosen: { ruling: "pdf", gL: "git", gV: null } },
      { id: "t2", golds: ["git"], accepted: ["git"], bm25: ["docker", "pdf"], glance: [{ skill: "docker", g: 1 }], chosen: { ruling: "docker", gL: "docker", gV: "docker" } },
    ];
    const rows = Object.fromEntries(scoreRecords(records).map((r) => [r.method, r]));
    expect(rows.bm25).toMatchObject({ hitAt1: 0.5, recallAt20: 0.5, n: 2 });
    expect(rows.glance).toMatchObject({ hitAt1: 0, recallAt20: 0.5, n: 2 });
    expect(rows.ruling).toMatchObject({ hitAt1: 0.5, recallAt20: 0.5, n: 2 });
    expect(rows.gL).toMatchObject({ hitAt1: 0, recallAt20: 0.5, n: 2 });
    expect(rows.gV).toMatchObject({ hitAt1: 0, recallAt20: 0.5, n: 2 });
  });

  it("parses batches and methods", () => {
    expect([...parseBatches("6-10")]).toEqual([6, 7, 8, 9, 10]);
    expect([...parseBatches("1,3,batch5")]).toEqual([1, 3, 5]);
    expect(() => parseBatches("6-")).toThrow(/batches/);
    expect(parseMethods("ruling,bm25,g+αL,gV")).toEqual(["bm25", "ruling", "gL", "gV"]);
    expect(parseMethods("all")).toHaveLength(7);
    expect(parseMethods("g+βB,ruling0")).toEqual(["gB", "rulingNoB"]);
    expect(() => parseMethods("bm26")).toThrow(/unknown method/);
    const tasks: EvalTask[] = [1, 2, 6, 7].map((b) => ({ id: `t${b}`, text: "x", gold_skill_ids: [], batch: `batch${b}` }));
    expect(selectTasks(tasks, { batches: "6-10" }).map((t) => t.id)).toEqual(["t6", "t7"]);
    expect(selectTasks(tasks, { limit: 1 }).map((t) => t.id)).toEqual(["t1"]);
  });
});

describe("BM25", () => {
  it("computes Okapi BM25 exactly (k1 = 1.2, b = 0.75, Lucene's idf)", () => {
    const docs = [
      { id: "a", name: "x", description: "apple apple banana", body: "" },
      { id: "b", name: "y", description: "banana", body: "" },
    ];
    const index = new Bm25Index(docs);
    // Tokens: a = [x, apple, apple, banana] (4), b = [y, banana] (2); avgdl = 3.
    const idf = (df: number) => Math.log(1 + (2 - df + 0.5) / (df + 0.5));
    const term = (f: number, len: number) => (f * 2.2) / (f + 1.2 * (0.25 + (0.75 * len) / 3));
    const s = index.scores("apple banana");
    expect(s[0]).toBeCloseTo(idf(1) * term(2, 4) + idf(2) * term(1, 4), 12);
    expect(s[1]).toBeCloseTo(idf(2) * term(1, 2), 12);
    expect(bm25Tokens("Audit_logs, audit-LOGS.js")).toEqual(["audit", "logs", "audit", "logs", "js"]);
  });

  it("ranks the obviously matching skill first; ties keep library order", () => {
    const index = new Bm25Index(lib);
    expect(index.search("Write a Dockerfile with a multi-stage build and a compose file")[0].id).toBe("docker");
    expect(index.search("git bisect to find the commit that broke it")[0].id).toBe("git");
    // "tables" occurs once in pdf and in its copy, whose texts have as many words: a tie.
    const hits = index.search("tables");
    expect(hits.map((h) => h.id).slice(0, 2)).toEqual(["pdf", "mirror/pdf"]);
    expect(hits[0].score).toBe(hits[1].score);
    expect(index.search("zebra")).toEqual([]);
  });

  it("evaluate with bm25 alone needs no router, and skips tasks without a gold in the library", async () => {
    const reordered = [lib[1], lib[0], ...lib.slice(2)]; // the copy first: a tie goes to it
    const tasks: EvalTask[] = [
      { id: "t-pdf", text: "pull the tables out of this PDF", gold_skill_ids: ["pdf"], batch: "batch6" },
      { id: "t-git", text: "rebase my branch and recover a lost commit with reflog", gold_skill_ids: ["git"] },
      { id: "t-docker", text: "recover the lost commits", gold_skill_ids: ["docker"] }, // BM25 picks git
      { id: "t-none", text: "anything", gold_skill_ids: ["dotnet-backend-patterns"] },
    ];
    const res = await evaluate({ tasks, library: reordered });
    expect(res.skipped).toEqual(["t-none"]);
    expect(res.table).toHaveLength(1);
    expect(res.table[0]).toMatchObject({ method: "bm25", hitAt1: 2 / 3, n: 3, k: 20 });
    expect(res.perQuery[0]).toMatchObject({ id: "t-pdf", golds: ["pdf"], batch: "batch6" });
    expect(res.perQuery[0].accepted.sort()).toEqual(["mirror/pdf", "pdf"]);
    expect(res.perQuery[0].bm25![0]).toBe("mirror/pdf"); // the copy, which counts
    expect(res.perQuery[2].bm25![0]).toBe("git");
    await expect(evaluate({ tasks, library: lib, methods: ["glance"] })).rejects.toThrow(/need a router/);
    // bad arguments are typed, naming what is wrong
    await expectCode(evaluate(undefined as never), "INVALID_ARGUMENT", /evaluate needs an options object/);
    await expectCode(evaluate({ tasks, library: lib, methods: ["bogus" as never] }), "INVALID_ARGUMENT", /unknown method "bogus" \(methods: bm25, glance/);
    await expectCode(evaluate({ tasks, library: lib, methods: "bm25" as never }), "INVALID_ARGUMENT");
  });

  it("resumes from earlier records: complete ones are kept as they are, the rest are scored and handed out one by one", async () => {
    const tasks: EvalTask[] = [
      { id: "t-pdf", text: "pull the tables out of this PDF", gold_skill_ids: ["pdf"] },
      { id: "t-git", text: "rebase my branch and recover a lost commit with reflog", gold_skill_ids: ["git"] },
      { id: "t-docker", text: "write a Dockerfile with compose services", gold_skill_ids: ["docker"] },
    ];
    // An earlier record whose (made-up) BM25 list misses: kept as it is, so Hit@1 counts it a miss.
    const earlier: PerQueryRecord = { id: "t-git", golds: ["git"], accepted: ["git"], bm25: ["docker"] };
    // One lacking the read-outs of the asked method is scored again; one of an unselected task is dropped.
    const incomplete: PerQueryRecord = { id: "t-pdf", golds: ["pdf"], accepted: ["pdf"] };
    const stray: PerQueryRecord = { id: "t-gone", golds: ["git"], accepted: ["git"], bm25: ["git"] };
    const handed: string[] = [];
    const res = await evaluate({ tasks, library: lib, previous: [stray, earlier, incomplete], onRecord: async (r) => void handed.push(r.id) });
    expect(handed).toEqual(["t-pdf", "t-docker"]);
    expect(res.perQuery.map((r) => r.id)).toEqual(["t-pdf", "t-git", "t-docker"]);
    expect(res.perQuery[1]).toBe(earlier);
    expect(res.perQuery[0].bm25![0]).toBe("pdf");
    expect(res.table[0]).toMatchObject({ method: "bm25", hitAt1: 2 / 3, n: 3 });
  });

  it("reads back records whose last line a stopped run tore, only when asked to", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-pq-"));
    try {
      const file = join(dir, "pq.jsonl");
      const rec: PerQueryRecord = { id: "a", golds: ["x"], accepted: ["x"], bm25: ["x"] };
      writeFileSync(file, JSON.stringify(rec) + "\n" + JSON.stringify(rec).slice(0, 17));
      await expect(readPerQuery(file)).rejects.toThrow(/pq.jsonl:2: not JSON/);
      expect(await readPerQuery(file, { tornTail: true })).toEqual([rec]);
      writeFileSync(file, JSON.stringify(rec).slice(0, 17) + "\n" + JSON.stringify(rec) + "\n");
      await expect(readPerQuery(file, { tornTail: true })).rejects.toThrow(/pq.jsonl:1: not JSON/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reads gzipped records like plain ones, and says when a .gz file is not gzip", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-pq-"));
    try {
      const recs: PerQueryRecord[] = [
        { id: "a", golds: ["x"], accepted: ["x"], bm25: ["x", "y"] },
        { id: "b", golds: ["y"], accepted: ["y", "z"], glance: [{ skill: "z", g: 0.25 }] },
      ];
      const text = recs.map((r) => JSON.stringify(r)).join("\n") + "\n";
      writeFileSync(join(dir, "pq.jsonl"), text);
      writeFileSync(join(dir, "pq.jsonl.gz"), gzipSync(text));
      expect(await readPerQuery(join(dir, "pq.jsonl.gz"))).toEqual(await readPerQuery(join(dir, "pq.jsonl")));
      expect(await readPerQuery(join(dir, "pq.jsonl.gz"))).toEqual(recs);
      writeFileSync(join(dir, "plain.jsonl.gz"), text);
      await expectCode(readPerQuery(join(dir, "plain.jsonl.gz")), "INVALID_ARGUMENT", /plain\.jsonl\.gz: not gzip data/);
      // records are written plain (appended a line per task), never under a .gz name
      await expectCode(writePerQuery(join(dir, "out.jsonl.gz"), recs), "INVALID_ARGUMENT", /gzip the file afterwards/);
      await expectCode(appendPerQuery(join(dir, "out.jsonl.gz"), recs[0]), "INVALID_ARGUMENT");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(NO_SHARED)("end to end on stories260K", () => {
  let dir: string;
  let model: Model;
  let projections: Projections;
  let library: Skill[];
  let tasks: EvalTask[];
  const nTasks = 4;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-eval-"));
    model = await Model.load(storiesPath, { contextSize: 1024, sequences: 16 });
    // A verdict pool of 8 rather than 20 keeps the test quick (the verdict dominates its time).
    const random = await Projections.random(model, { seed: 7, dim: 64 });
    projections = new Projections({ ...random.meta, wq: random.wq, ws: random.ws, maxShortlist: 8 });
    await projections.save(join(dir, "p.gguf"));
    // The gold skills mixed into a slice of the public library, both as JSONL files for the CLI.
    const mit = (await loadSkills(join(sharedDir, "data", "skills-mit.jsonl.gz"), { limit: 100 })).skills;
    writeFileSync(join(dir, "mit100.jsonl"), mit.map((s) => JSON.stringify({ id: s.id, name: s.name, description: s.description, body: s.body })).join("\n") + "\n");
    library = (await loadLibrary([join(bench, "skills.jsonl"), join(dir, "mit100.jsonl")])).skills;
    // Tasks cut to 600 characters: the Router reserves 64 tokens for the verdict's question and
    // closing, which stories' 512-token vocabulary spells in ~69, so a task that fills its whole
    // budget overflows the context (CONTEXT_OVERFLOW); shorter tasks also keep the test quick.
    tasks = selectTasks(await loadTasks(join(bench, "tasks.jsonl")), { batches: "6", limit: nTasks }).map((t) => ({ ...t, text: t.text.slice(0, 600) }));
    writeFileSync(join(dir, "tasks.jsonl"), tasks.map((t) => JSON.stringify(t)).join("\n") + "\n");
  });

  afterAll(async () => {
    await model?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("every method gives a row in [0, 1]; per-query records round-trip; a missing skill is refused", async () => {
    expect(library).toHaveLength(149);
    const router = await Router.open(model, { projections, bankDir: join(dir, "bank"), skillBudget: 192 });
    try {
      const report = await router.install(library);
      expect(report.failed).toEqual([]);
      let progress = 0;
      // the wide pool (the glance's top maxShortlist, whatever Δ), which calibration reads
      const res = await evaluate({ router, tasks, library, pool: projections.maxShortlist, onProgress: () => progress++ });
      expect(res.table.map((r) => r.method)).toEqual(["bm25", "glance", "gB", "ruling", "rulingNoB", "gL", "gV"]);
      // β = 0 in these projections: the first stage is the glance's order, and the ruling has no B
      const row = (m: string) => res.table.find((r) => r.method === m)!;
      expect(projections.beta).toBe(0);
      expect(row("gB").hitAt1).toBe(row("glance").hitAt1);
      expect(row("rulingNoB").hitAt1).toBe(row("ruling").hitAt1);
      const scored = tasks.length - res.skipped.length;
      expect(scored).toBeGreaterThan(0);
      expect(progress).toBe(scored);
      for (const row of res.table) {
        expect(row.n).toBe(scored);
        for (const x of [row.hitAt1, row.recallAt20]) {
          expect(x).toBeGreaterThanOrEqual(0);
          expect(x).toBeLessThanOrEqual(1);
        }
      }
      const rec = res.perQuery[0];
      expect(rec.bm25).toHaveLength(20);
      expect(rec.glance).toHaveLength(20);
      expect(rec.verdict).toHaveLength(projections.maxShortlist);
      expect(rec.pool).toBe(projections.maxShortlist);
      // The verdict pool is the glance's top, in its order; the replayed ruling is route()'s choice.
      expect(rec.verdict!.map((v) => v.skill)).toEqual(rec.glance!.slice(0, projections.maxShortlist).map((h) => h.skill));
      const routed = await router.route(tasks.find((t) => t.id === rec.id)!.text);
      expect(rec.chosen!.ruling).toBe(routed.skill);
      // The table is what the records say.
      expect(scoreRecords(res.perQuery)).toEqual(res.table);
      const file = join(dir, "pq.jsonl");
      await writePerQuery(file, res.perQuery);
      expect(await readPerQuery(file)).toEqual(res.perQuery);

      const extra = { id: "not-installed", name: "nope", description: "not in the bank", body: "" };
      await expect(evaluate({ router, tasks, library: [...library, extra], methods: ["glance"] })).rejects.toThrow(/1 of the 150 library skills are not installed.*not-installed/);
    } finally {
      await router.close();
    }
  }, 600_000);

  it("the CLI runs eval and calibrate over the same bank", async () => {
    const cli = join(repoRoot, "dist", "cli", "gavel.js");
    expect(existsSync(cli), "build first: npx tsup").toBe(true);
    // asynchronous: a long spawnSync would block the worker's event loop (no progress, no timeout)
    const gavel = (...args: string[]) => runNode([cli, ...args], { timeoutMs: 300_000, env: { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" } });
    const libs = ["--library", join(bench, "skills.jsonl"), "--library", join(dir, "mit100.jsonl")];
    const common = ["--model", storiesPath, "--projections", join(dir, "p.gguf"), "--bank", join(dir, "bank"), "--context", "1024", "--skill-budget", "192"];
    const tasksArg = ["--tasks", join(dir, "tasks.jsonl"), "--batches", "6", "--limit", "2"];

    const bm = await gavel("eval", ...tasksArg, ...libs, "--methods", "bm25");
    expect(bm.code, bm.err).toBe(0);
    expect(bm.out).toMatch(/^method\s+Hit@1\s+R@20\s+n/m);
    expect(bm.out).toMatch(/^bm25\s+\d\.\d{3}\s+\d\.\d{3}\s+\d+$/m);

    // --per-query keeps records as they come; --resume routes only the tasks the file lacks.
    const bq = join(dir, "bm25-pq.jsonl");
    const first = await gavel("eval", ...tasksArg, ...libs, "--methods", "bm25", "--per-query", bq, "--limit", "1");
    expect(first.code, first.err).toBe(0);
    const one = readFileSync(bq, "utf8");
    expect(one.trim().split("\n")).toHaveLength(1);
    writeFileSync(bq, one + one.slice(0, 10)); // a torn line, as a killed run may leave
    const resumed = await gavel("eval", ...tasksArg, ...libs, "--methods", "bm25", "--per-query", bq, "--resume", "--json");
    expect(resumed.code, resumed.err).toBe(0);
    expect(resumed.err).toMatch(/resuming: 1 records/);
    const lines = readFileSync(bq, "utf8").trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe(one.trim());
    expect(JSON.parse(resumed.out).table[0]).toMatchObject({ method: "bm25", n: 2 });
    const lone = await gavel("eval", ...tasksArg, ...libs, "--methods", "bm25", "--resume");
    expect(lone.code).toBe(1);
    expect(lone.err).toMatch(/--resume needs --per-query/);
    const gz = await gavel("eval", ...tasksArg, ...libs, "--methods", "bm25", "--per-query", join(dir, "pq.jsonl.gz"));
    expect(gz.code).toBe(1);
    expect(gz.err).toMatch(/pq\.jsonl\.gz: per-query records are written as plain JSONL/);
    expect(existsSync(join(dir, "pq.jsonl.gz"))).toBe(false);
    const calSaveGz = await gavel("calibrate", ...tasksArg, ...libs, "--save-per-query", join(dir, "pq.jsonl.gz"));
    expect(calSaveGz.code).toBe(1);
    expect(calSaveGz.err).toMatch(/per-query records are written as plain JSONL/);

    const pq = join(dir, "cli-pq.jsonl");
    const full = await gavel("eval", ...tasksArg, ...libs, ...common, "--pool", "8", "--per-query", pq, "--json");
    expect(full.code, full.err).toBe(0);
    const out = JSON.parse(full.out) as { table: { method: string; hitAt1: number; recallAt20: number }[] };
    expect(out.table.map((r) => r.method)).toEqual(["bm25", "glance", "gB", "ruling", "rulingNoB", "gL", "gV"]);
    expect(readFileSync(pq, "utf8").trim().split("\n")).toHaveLength(2);
    expect(readFileSync(pq, "utf8").trim().split("\n").map((l) => (JSON.parse(l) as PerQueryRecord).pool)).toEqual([8, 8]);
    // the default: the route's own shortlist, which calibrate refuses to fit Δ on
    const rq = join(dir, "cli-route-pq.jsonl");
    const routed = await gavel("eval", ...tasksArg, ...libs, ...common, "--methods", "glance,ruling", "--per-query", rq, "--limit", "1");
    expect(routed.code, routed.err).toBe(0);
    expect(routed.out).toMatch(/^route's own shortlist: 1 tasks, declined \d+; the verdict ran on \d+ \(\d+ skills in all\); route p50 \d+ ms$/m);
    expect((JSON.parse(readFileSync(rq, "utf8")) as PerQueryRecord).pool).toBe("route");
    const refused = await gavel("calibrate", "--per-query", rq);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/route's own shortlist.*--pool N/);
    const noPool = await gavel("eval", ...tasksArg, ...libs, ...common, "--lexical-pool", "5");
    expect(noPool.code).toBe(1);
    expect(noPool.err).toMatch(/give --pool N too/);

    // eval only reads the bank: it runs while another process holds the bank open for writing
    const writer = await Router.open(model, { projections, bankDir: join(dir, "bank"), skillBudget: 192 });
    try {
      const beside = await gavel("eval", ...tasksArg, ...libs, ...common, "--methods", "glance", "--limit", "1");
      expect(beside.code, beside.err).toBe(0);
      expect(beside.err).not.toMatch(/BANK_LOCKED/);
    } finally {
      await writer.close();
    }

    const missing = await gavel("eval", ...tasksArg, "--library", join(bench, "skills.jsonl"), "--library", join(sharedDir, "data", "skills-mit.jsonl.gz"), ...common, "--methods", "glance", "--limit", "1");
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/not installed in the bank/);

    const cal = await gavel("calibrate", "--per-query", pq, "--projections", join(dir, "p.gguf"), "--out", join(dir, "p2.gguf"));
    expect(cal.code, cal.err).toBe(0);
    expect(cal.out).toMatch(/best: +α=\S+ +γ=\S+ +Δ=\S+ +Hit@1 [\d.]+%/);
    expect(cal.out).toMatch(/wrote α, γ, Δ into/);
    // the same records gzipped calibrate to the same constants
    writeFileSync(join(dir, "cli-pq.jsonl.gz"), gzipSync(readFileSync(pq)));
    const calGz = await gavel("calibrate", "--per-query", join(dir, "cli-pq.jsonl.gz"), "--projections", join(dir, "p.gguf"), "--out", join(dir, "p3.gguf"));
    expect(calGz.code, calGz.err).toBe(0);
    expect(calGz.out.match(/best:.*/)![0]).toBe(cal.out.match(/best:.*/)![0]);

    // Computed on the fly from tasks and the router instead of a records file.
    const fly = await gavel("calibrate", ...tasksArg, ...libs, ...common, "--json");
    expect(fly.code, fly.err).toBe(0);
    const fit = JSON.parse(fly.out) as { alpha: number; gamma: number; delta: number; hitAt1: number; evaluated: number; wrote: string | null };
    expect(fit.evaluated).toBe(2);
    expect(fit.wrote).toBeNull();
    for (const x of [fit.alpha, fit.gamma, fit.delta, fit.hitAt1]) expect(Number.isFinite(x)).toBe(true);
  }, 600_000);

  it("calibrated constants load back from the projections file", async () => {
    const p2 = await Projections.load(join(dir, "p2.gguf"));
    expect(p2.hash).toBe(projections.hash); // the bank stays valid
    for (const x of [p2.alpha, p2.gamma, p2.delta]) expect(Number.isFinite(x)).toBe(true);
  });
});
