/**
 * A learned re-ranking of the first stage's leaders (issue 34), rebuilt from per-query records and
 * the library's full texts in one command.
 *
 * Candidates: the records' pool of each task, the glance's top 20 ∪ BM25's top 20 (the `verdict`
 * entries of `gavel eval --per-query --lexical-pool 20` records, each with g). Features: cheap ones a
 * route computes on the CPU per candidate (rerank-features.ts, and BM25 over the full text, the name,
 * the description and the body, each its own index over the whole library). Model: a softmax over a
 * task's candidates, linear in the standardised features, L2-regularised, fitted by Newton's method
 * on validation only (SWE-Skills-Bench batches 1-5); feature set and regularisation chosen by
 * leave-one-batch-out cross-validation, and the reported CV figure is nested (the choice itself is
 * made again inside each outer fold). Test (batches 6-10) is read only with --test, once.
 *
 * Usage: npx vite-node scripts/select/rerank.ts -- [--records DIR] [--out DIR] [--test] [--greedy] [--no-nested] [--runtime] [--pools 5,10,40]
 *   DIR defaults: bench/results/2026-11-28-h200-default/l1, bench/results/2026-11-28-cpu-rerank.
 *   Features are cached under .cache/rerank/ (delete it after changing the features). Writes table.txt
 *   (table-test.txt with --test), val.jsonl.gz (a record per task: pool size, gold in pool, the lexical
 *   expert's, the default's and the nested-CV model's hit, the final model's pick) and model.json.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { basename, dirname, join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { loadLibrary, readPerQuery } from "../../lab/eval/io.js";
import { loadTasks, batchNumber } from "../../lab/eval/tasks.js";
import { lexicalB } from "../../lab/eval/lexical-fit.js";
import type { PerQueryRecord } from "../../lab/eval/evaluate.js";
import { Bm25Index, bm25Tokens } from "../../src/lexical/bm25.js";
import { firstStageShortlist } from "../../src/route/index.js";
import { bigramShare, idfShare, nameBigramShare, nameTokens, nameVerbatim, share, slugOf, taskText } from "../../src/lexical/name-features.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const flag = (n: string) => { const i = args.indexOf(n); return i >= 0 ? (args.splice(i, 1), true) : false; };
const opt = (n: string) => { const i = args.indexOf(n); return i >= 0 ? args.splice(i, 2)[1] : undefined; };
const readTest = flag("--test");
const greedy = flag("--greedy");
const skipNested = flag("--no-nested");
// --runtime: only the feature sets a route computes from what it already holds (the lexical expert's
// BM25 over the full text, the skills' names and the task text; no per-field index): what can ship
const runtimeOnly = flag("--runtime");
// --prf M,E: a feature "prf", the pool's score under the task's pseudo-relevance feedback (the lexical
// expert's best M skills over the library; their E best terms by Σ p(d)·tf/|d|·idf; BM25 of those
// terms, weighted, over the pool's best), joins both stages (scripts/experiments/prf.ts measures it alone)
const prfOpt = opt("--prf")?.split(",").map(Number);
// --copies J: a feature "copies", ln(1 + the library's near-copies of the candidate: the same slug,
// full-text token sets of Jaccard ≥ J), joining both stages: does a widely copied version win?
const copiesOpt = opt("--copies");
// --tie-ranks: the rank features (bm25Rank, gRank, LRank) give equal values the same rank, the best of
// theirs (1, 2, 2, 4), instead of ranking ties by pool order: two exact copies of one skill then read
// the same R
const tieRanks = flag("--tie-ranks");
/** Each value's 0-based rank, best first; ties by pool order, or with --tie-ranks the best rank of the tied. */
const rankBy = (v: readonly number[]): number[] => {
  const o = v.map((_, k) => k).sort((a, b) => v[b] - v[a] || a - b);
  const rk = new Array<number>(v.length);
  o.forEach((k, j) => (rk[k] = tieRanks && j > 0 && v[o[j - 1]] === v[k] ? rk[o[j - 1]] : j));
  return rk;
};
const recordsDir = opt("--records") ?? "bench/results/2026-11-28-h200-default/l1";
const outDir = opt("--out") ?? "bench/results/2026-11-28-cpu-rerank";
const K1 = 3, B = 1;
// the route fitted to these records, as select-default.ts stores it in selection.json beside them (β, α,
// γ, Δ, T; for l1, the default route), replayed exactly
const selection = join(dirname(recordsDir), "selection.json");
const fitted = existsSync(selection) ? (JSON.parse(readFileSync(selection, "utf8")) as Record<string, { chosen: { beta: number; alpha: number; gamma: number; delta: number; T: number } } | undefined>)[basename(recordsDir)]?.chosen : undefined;
if (!fitted) throw new Error(`${selection} has no fitted route for ${basename(recordsDir)}`);
const DEFAULT = fitted;

export const FEATURES = [
  "bm25", "bm25Rel", "bm25Rank", "lucene", "name", "desc", "body",
  "nameShare", "nameVerbatim", "nameTitle", "descBigram", "descCov", "taskCov",
  "g", "gRank", "logLen", "title", "nameBigram", "L", "LRel", "LRank", "V", "prf", "copies", "copiesRel",
] as const;
type Feature = (typeof FEATURES)[number];
const fi = (f: Feature) => FEATURES.indexOf(f);

interface Row {
  id: string;
  batch: number;
  skills: string[];
  gold: boolean[];
  x: number[][];
  defaultHit: number;
  lexicalHit: number;
  /** --distinct: each candidate's copy group (near-copies of one skill share it; absent: each its own). */
  dup?: number[];
  /** Where the row comes from: "full" (the benchmark's library), or a bank's size (bank-records.ts). */
  group?: string;
  /** The verdict's read-outs of the candidates were not recorded (bank rows only). */
  missing?: boolean;
}

// ---------------------------------------------------------------- features (cached)
async function buildRows(split: "val" | "test"): Promise<Row[]> {
  const cache = `.cache/rerank/features-${recordsDir.replace(/[^A-Za-z0-9]+/g, "_")}-${split}${prfOpt ? `-prf${prfOpt.join("_")}` : ""}${copiesOpt ? `-copies${copiesOpt}` : ""}${tieRanks ? "-tieranks" : ""}.json`;
  if (existsSync(cache)) return JSON.parse(readFileSync(cache, "utf8")) as Row[];
  const records = (await readPerQuery(`${recordsDir}/${split}.jsonl.gz`)).filter((r) => !r.offDomain && r.verdict?.length);
  const tasks = new Map((await loadTasks("../shared/data/swe-skills-bench/tasks.jsonl")).map((t) => [t.id, t]));
  const lib = await corpus();
  const rows: Row[] = [];
  let t0 = Date.now();
  for (const r of records) {
    const task = tasks.get(r.id);
    if (!task) throw new Error(`task ${r.id} missing`);
    rows.push(rowOf(r, task.text, lib));
    if (Date.now() - t0 > 20000) { console.log(`${split}: ${rows.length}/${records.length}`); t0 = Date.now(); }
  }
  mkdirSync(".cache/rerank", { recursive: true });
  writeFileSync(cache, JSON.stringify(rows));
  return rows;
}

type Corpus = Awaited<ReturnType<typeof buildCorpus>>;
let corpusP: Promise<Corpus> | undefined;
const corpus = () => (corpusP ??= buildCorpus(["../shared/data/swe-skills-bench/skills.jsonl", "../shared/data/skills-mit.jsonl.gz"]));
async function buildCorpus(paths: string[]) {
  const t0 = Date.now();
  const { skills } = await loadLibrary(paths);
  const routable = skills.filter((s) => !s.disableModelInvocation);
  const byId = new Map(routable.map((s, i) => [s.id, i]));
  const full = new Bm25Index(routable, { k1: K1, b: B });
  const name = new Bm25Index(routable.map((s) => ({ id: s.id, name: `${s.name}\n${slugOf(s.id)}`, description: "" })));
  const desc = new Bm25Index(routable.map((s) => ({ id: s.id, name: "", description: s.description })));
  const body = new Bm25Index(routable.map((s) => ({ id: s.id, name: "", description: "", body: s.body })));
  // document frequencies over the full texts, for the idf-weighted coverages
  const df = new Map<string, number>();
  const len = new Float64Array(routable.length);
  for (let i = 0; i < routable.length; i++) {
    const s = routable[i];
    const toks = bm25Tokens(`${s.name}\n${s.description}\n${s.body}`);
    len[i] = toks.length;
    for (const t of new Set(toks)) df.set(t, (df.get(t) ?? 0) + 1);
  }
  const N = routable.length;
  const idf = (t: string) => { const n = df.get(t) ?? 0; return Math.log(1 + (N - n + 0.5) / (n + 0.5)); };
  console.log(`library: ${N} skills, 4 BM25 indexes and df in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  return { routable, byId, full, name, desc, body, idf, len };
}

function rowOf(r: PerQueryRecord, text: string, c: Corpus): Row {
  const pool = r.verdict!;
  const idx = pool.map((p) => { const i = c.byId.get(p.skill); if (i === undefined) throw new Error(`${p.skill} not in library`); return i; });
  const sFull = c.full.scores(text);
  const sLuc = c.full.scores(text, { k1: 1.2, b: 0.75 });
  const sName = c.name.scores(text), sDesc = c.desc.scores(text), sBody = c.body.scores(text);
  const task = taskText(text);
  const rel = (s: Float64Array) => { const m = Math.max(...idx.map((i) => s[i])); return (i: number) => (m > 0 ? s[i] / m : 0); };
  const sTitle = c.full.scores(text.split("\n").find((l) => l.trim().length > 0) ?? "", { k1: 1.2, b: 0.75 });
  const rTitle = rel(sTitle);
  const rFull = rel(sFull), rLuc = rel(sLuc), rName = rel(sName), rDesc = rel(sDesc), rBody = rel(sBody);
  const bRank = rankBy(idx.map((i) => sFull[i]));
  const gRank = rankBy(pool.map((p) => p.g));
  const Ls = pool.map((p) => p.L ?? 0), Lmax = Math.max(...Ls), LRank = rankBy(Ls);
  const rPrf = prfOpt ? rel(prfScores(sFull, c, prfOpt[0], prfOpt[1])) : () => 0;
  // copies: each candidate's near-copies over the library; copiesRel: its log-count less the largest
  // of its copy group within the pool (0 for the most copied version of a skill, and for a skill with
  // no copy in the pool): a choice between copies only, no prior across different skills
  const cpy = copiesOpt ? idx.map((i) => Math.log1p(copiesOf(c, i, Number(copiesOpt)))) : idx.map(() => 0);
  const cpyRel = copiesOpt ? poolCopyRel(c, idx, cpy, Number(copiesOpt)) : idx.map(() => 0);
  const x = pool.map((p, k) => {
    const s = c.routable[idx[k]];
    const nt = nameTokens(s);
    const dt = bm25Tokens(s.description);
    const fullSet = new Set(bm25Tokens(`${s.name}\n${s.description}\n${s.body}`));
    const f: Record<Feature, number> = {
      bm25: sFull[idx[k]] / DEFAULT.T,
      bm25Rel: rFull(idx[k]),
      bm25Rank: Math.log1p(bRank[k]),
      lucene: rLuc(idx[k]),
      name: rName(idx[k]),
      desc: rDesc(idx[k]),
      body: rBody(idx[k]),
      nameShare: share(nt, task.tokens),
      nameVerbatim: nameVerbatim(s, task),
      nameTitle: share(nt, task.title),
      descBigram: bigramShare(dt, task),
      descCov: idfShare(dt, task.tokens, c.idf),
      taskCov: idfShare(task.tokens, fullSet, c.idf),
      g: p.g,
      gRank: Math.log1p(gRank[k]),
      logLen: Math.log1p(c.len[idx[k]]),
      title: rTitle(idx[k]),
      nameBigram: nameBigramShare(s, task),
      L: Ls[k],
      LRel: Ls[k] - Lmax,
      LRank: Math.log1p(LRank[k]),
      V: p.V ?? 0,
      prf: rPrf(idx[k]),
      copies: cpy[k],
      copiesRel: cpyRel[k],
    };
    return FEATURES.map((n) => f[n]);
  });
  const pB = pool.map((p) => ({ skill: p.skill, g: p.g, L: p.L ?? 0, V: p.V ?? 0, B: lexicalB(r.lexical, p.s, DEFAULT.T) }));
  const sl = firstStageShortlist(pB, DEFAULT.delta, 20, DEFAULT.beta, (q) => q.B);
  const pick = sl.length === 1 ? sl[0] : sl.reduce((a, b) => (b.g + DEFAULT.alpha * b.L + DEFAULT.gamma * b.V + DEFAULT.beta * b.B > a.g + DEFAULT.alpha * a.L + DEFAULT.gamma * a.V + DEFAULT.beta * a.B ? b : a));
  return {
    id: r.id,
    batch: batchNumber(r.batch) ?? 0,
    skills: pool.map((p) => p.skill),
    gold: pool.map((p) => r.accepted.includes(p.skill)),
    x,
    defaultHit: pick && r.accepted.includes(pick.skill) ? 1 : 0,
    lexicalHit: r.bm25?.[0] && r.accepted.includes(r.bm25[0]) ? 1 : 0,
  };
}

/** Each library skill's full-text token set, made once. */
const tokenSets = new Map<number, Set<string>>();
function tokenSetOf(c: Corpus, j: number): Set<string> {
  let t = tokenSets.get(j);
  if (!t) {
    const s = c.routable[j];
    t = new Set(bm25Tokens(`${s.name}\n${s.description}\n${s.body}`));
    tokenSets.set(j, t);
  }
  return t;
}

/** Whether library skills i and j are near-copies: the same slug, full-text token sets of Jaccard ≥ J. */
function nearCopies(c: Corpus, i: number, j: number, J: number): boolean {
  if (slugOf(c.routable[i].id) !== slugOf(c.routable[j].id)) return false;
  const A = tokenSetOf(c, i), B = tokenSetOf(c, j);
  let inter = 0;
  for (const t of A) if (B.has(t)) inter++;
  return inter / (A.size + B.size - inter) >= J;
}

/**
 * The copy groups of the library skills `idx` (undefined: a skill outside the library, a group of its
 * own): each position's group root, and how many near-copy pairs joined them.
 */
function copyGroups(c: Corpus, idx: readonly (number | undefined)[], J: number): { group: number[]; pairs: number } {
  const g = idx.map((_, k) => k);
  const find = (k: number): number => (g[k] === k ? k : (g[k] = find(g[k])));
  let pairs = 0;
  for (let a = 0; a < idx.length; a++) for (let b = a + 1; b < idx.length; b++) {
    const i = idx[a], j = idx[b];
    if (i !== undefined && j !== undefined && nearCopies(c, i, j, J)) { g[find(b)] = find(a); pairs++; }
  }
  return { group: idx.map((_, k) => find(k)), pairs };
}

/** How many other skills of the library are near-copies of skill i. */
const copyCache = new Map<number, number>();
let bySlug: Map<string, number[]> | undefined;
function copiesOf(c: Corpus, i: number, J: number): number {
  const hit = copyCache.get(i);
  if (hit !== undefined) return hit;
  if (!bySlug) {
    bySlug = new Map();
    c.routable.forEach((s, j) => { const k = slugOf(s.id); const a = bySlug!.get(k); if (a) a.push(j); else bySlug!.set(k, [j]); });
  }
  const n = (bySlug.get(slugOf(c.routable[i].id)) ?? []).filter((j) => j !== i && nearCopies(c, i, j, J)).length;
  copyCache.set(i, n);
  return n;
}

/** Per pool member: its value less the largest of its copy group's in the pool. */
function poolCopyRel(c: Corpus, idx: readonly number[], v: readonly number[], J: number): number[] {
  const { group } = copyGroups(c, idx, J);
  const best = new Map<number, number>();
  idx.forEach((_, k) => best.set(group[k], Math.max(best.get(group[k]) ?? -Infinity, v[k])));
  return idx.map((_, k) => v[k] - best.get(group[k])!);
}

/** The feedback query's BM25 over the library: the best m skills by `s`, their E best terms. */
function prfScores(s: Float64Array, c: Corpus, m: number, E: number): Float64Array {
  const lead = [...s.keys()].sort((a, b) => s[b] - s[a] || a - b).slice(0, m);
  const mx = s[lead[0]];
  const p = lead.map((i) => Math.exp((s[i] - mx) / (0.1 * Math.max(mx, 1e-9))));
  const ps = p.reduce((a, x) => a + x, 0);
  const w = new Map<string, number>();
  lead.forEach((i, j) => {
    const d = c.routable[i];
    const toks = bm25Tokens(`${d.name}\n${d.description}\n${d.body}`);
    const tf = new Map<string, number>();
    for (const t of toks) tf.set(t, (tf.get(t) ?? 0) + 1);
    for (const [t, n] of tf) w.set(t, (w.get(t) ?? 0) + (p[j] / ps) * (n / toks.length) * c.idf(t));
  });
  const best = [...w.entries()].sort((a, b) => b[1] - a[1]).slice(0, E);
  const tot = best.reduce((a, [, v]) => a + v, 0);
  const out = new Float64Array(s.length);
  for (const [t, v] of best) { const st = c.full.scores(t); for (let i = 0; i < out.length; i++) out[i] += (v / tot) * st[i]; }
  return out;
}

// ---------------------------------------------------------------- model
interface Model { feats: number[]; mean: number[]; sd: number[]; w: number[]; k: number }

/** The candidates a model reads: BM25's best k of the pool (k ≥ the pool: all of it, the glance's leaders included). */
function restrict(r: Row, k: number): Row {
  if (k >= r.x.length) return r;
  const keep = r.x.map((x, i) => i).filter((i) => Math.round(Math.expm1(r.x[i][fi("bm25Rank")])) < k);
  // the verdict's read-outs relative to the candidates kept (a route runs the verdict on those only)
  const Lk = keep.map((i) => r.x[i][fi("L")]), Lmax = Math.max(...Lk);
  const rank = rankBy(Lk);
  const x = keep.map((i, j) => { const v = r.x[i].slice(); v[fi("LRel")] = Lk[j] - Lmax; v[fi("LRank")] = Math.log1p(rank[j]); return v; });
  return { ...r, skills: keep.map((i) => r.skills[i]), gold: keep.map((i) => r.gold[i]), x };
}

function solve(A: number[][], b: number[]): number[] {
  const n = b.length;
  const M = A.map((r, i) => [...r, b[i]]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(M[r][c]) > Math.abs(M[p][c])) p = r;
    [M[c], M[p]] = [M[p], M[c]];
    for (let r = c + 1; r < n; r++) { const f = M[r][c] / M[c][c]; for (let k = c; k <= n; k++) M[r][k] -= f * M[c][k]; }
  }
  const x = new Array<number>(n).fill(0);
  for (let r = n - 1; r >= 0; r--) { let s = M[r][n]; for (let k = r + 1; k < n; k++) s -= M[r][k] * x[k]; x[r] = s / M[r][r]; }
  return x;
}

/** Softmax over each task's candidates; the target is the probability of its accepted ones. */
function fit(all: readonly Row[], feats: number[], lambda: number, k = 1e9): Model {
  const d = feats.length;
  const train = all.map((r) => restrict(r, k)).filter((r) => r.gold.some(Boolean));
  const mean = new Array<number>(d).fill(0), sd = new Array<number>(d).fill(0);
  let n = 0;
  for (const r of train) for (const x of r.x) { n++; feats.forEach((f, j) => (mean[j] += x[f])); }
  mean.forEach((_, j) => (mean[j] /= n));
  for (const r of train) for (const x of r.x) feats.forEach((f, j) => (sd[j] += (x[f] - mean[j]) ** 2));
  sd.forEach((_, j) => (sd[j] = Math.sqrt(sd[j] / n) || 1));
  const Z = train.map((r) => r.x.map((x) => feats.map((f, j) => (x[f] - mean[j]) / sd[j])));
  let w = new Array<number>(d).fill(0);
  const objective = (w: number[]) => {
    let ll = 0;
    train.forEach((r, t) => {
      const s = Z[t].map((z) => z.reduce((a, v, j) => a + v * w[j], 0));
      const m = Math.max(...s);
      const lse = m + Math.log(s.reduce((a, v) => a + Math.exp(v - m), 0));
      const lg = m + Math.log(s.reduce((a, v, k) => a + (r.gold[k] ? Math.exp(v - m) : 0), 0));
      ll += lg - lse;
    });
    return -ll + 0.5 * lambda * w.reduce((a, v) => a + v * v, 0);
  };
  let obj = objective(w);
  for (let it = 0; it < 50; it++) {
    const g = new Array<number>(d).fill(0);
    const H = Array.from({ length: d }, () => new Array<number>(d).fill(0));
    train.forEach((r, t) => {
      const z = Z[t];
      const s = z.map((zz) => zz.reduce((a, v, j) => a + v * w[j], 0));
      const m = Math.max(...s);
      const e = s.map((v) => Math.exp(v - m));
      const sum = e.reduce((a, v) => a + v, 0);
      const eg = e.map((v, k) => (r.gold[k] ? v : 0));
      const sumg = eg.reduce((a, v) => a + v, 0);
      const p = e.map((v) => v / sum), q = eg.map((v) => v / sumg);
      const mp = new Array<number>(d).fill(0), mq = new Array<number>(d).fill(0);
      z.forEach((zz, k) => zz.forEach((v, j) => { mp[j] += p[k] * v; mq[j] += q[k] * v; }));
      for (let j = 0; j < d; j++) g[j] += mp[j] - mq[j];
      // Hessian of −log Σ_gold + log Σ_all: Cov_p(z) − Cov_q(z) (the latter ≥ 0 only with one gold; drop it: a PSD bound)
      z.forEach((zz, k) => { for (let i = 0; i < d; i++) for (let j = 0; j < d; j++) H[i][j] += p[k] * (zz[i] - mp[i]) * (zz[j] - mp[j]); });
    });
    for (let j = 0; j < d; j++) { g[j] += lambda * w[j]; H[j][j] += lambda + 1e-9; }
    const step = solve(H, g);
    let a = 1, next = w, nobj = obj;
    for (; a > 1e-4; a /= 2) { next = w.map((v, j) => v - a * step[j]); nobj = objective(next); if (nobj <= obj) break; }
    if (!(nobj <= obj)) break;
    const done = obj - nobj < 1e-8 * (1 + Math.abs(obj));
    w = next; obj = nobj;
    if (done) break;
  }
  return { feats, mean, sd, w, k };
}

/** The index of the best candidate (ties: the pool's order). */
function predict(m: Model, row: Row): string {
  const r = restrict(row, m.k);
  let best = 0, bs = -Infinity;
  r.x.forEach((x, k) => {
    const s = m.feats.reduce((a, f, j) => a + m.w[j] * (x[f] - m.mean[j]) / m.sd[j], 0);
    if (s > bs + 1e-12) { bs = s; best = k; }
  });
  return r.skills[best];
}
const hitOf = (m: Model, r: Row) => (r.gold[r.skills.indexOf(predict(m, r))] ? 1 : 0);

interface Config { name: string; feats: number[]; lambda: number; k: number }
const SETS: Record<string, Feature[]> = {
  "bm25": ["bm25"],
  "bm25+g": ["bm25", "g"],
  "bm25 family": ["bm25", "bm25Rel", "bm25Rank", "lucene"],
  "bm25+name": ["bm25", "bm25Rel", "bm25Rank", "nameShare", "nameTitle"],
  "+fields": ["bm25", "bm25Rel", "bm25Rank", "lucene", "name", "desc", "body"],
  "+name": ["bm25", "bm25Rel", "bm25Rank", "lucene", "name", "desc", "body", "nameShare", "nameVerbatim", "nameTitle"],
  "+coverage": ["bm25", "bm25Rel", "bm25Rank", "lucene", "name", "desc", "body", "nameShare", "nameVerbatim", "nameTitle", "descBigram", "descCov", "taskCov"],
  "+coverage+g": ["bm25", "bm25Rel", "bm25Rank", "lucene", "name", "desc", "body", "nameShare", "nameVerbatim", "nameTitle", "descBigram", "descCov", "taskCov", "g", "gRank"],
  "all": [...FEATURES],
  "lexical cheap": ["bm25", "name", "desc", "nameShare", "nameVerbatim", "descCov"],
  "+name+title": ["bm25", "bm25Rel", "bm25Rank", "lucene", "name", "desc", "body", "nameShare", "nameVerbatim", "nameTitle", "nameBigram", "title"],
  "names": ["bm25", "bm25Rel", "bm25Rank", "lucene", "nameShare", "nameVerbatim", "nameTitle", "nameBigram"],
  "names+g": ["bm25", "bm25Rel", "bm25Rank", "lucene", "nameShare", "nameVerbatim", "nameTitle", "nameBigram", "g", "gRank"],
  "bm25+verdict": ["bm25", "bm25Rel", "bm25Rank", "L", "LRel", "LRank", "V"],
  "names+verdict": ["bm25", "bm25Rel", "bm25Rank", "lucene", "nameShare", "nameVerbatim", "nameTitle", "nameBigram", "L", "LRel", "LRank", "V"],
};
/** The features a route can compute without more indexes than the bank's lexicon (src/route/rerank.ts). */
export const RUNTIME_FEATURES: readonly Feature[] = ["bm25", "bm25Rel", "bm25Rank", "lucene", "nameShare", "nameVerbatim", "nameTitle", "nameBigram", "g", "gRank", "L", "LRel", "LRank", "V"];
const SETS_ALL = { ...SETS };
if (runtimeOnly) for (const k of Object.keys(SETS)) if (!SETS[k].every((f) => RUNTIME_FEATURES.includes(f))) delete SETS[k];
const LAMBDAS = [0.1, 1, 10, 100];
const POOLS = (opt("--pools") ?? "5,10,40").split(",").map(Number);
const CONFIGS: Config[] = Object.entries(SETS).flatMap(([name, fs]) => POOLS.flatMap((k) => LAMBDAS.map((lambda) => ({ name, feats: fs.map(fi), lambda, k }))));

/** Leave-one-batch-out predictions (a hit per task, in `rows` order) of one config. */
function cvHits(rows: readonly Row[], c: Config): number[] {
  const out = new Array<number>(rows.length).fill(0);
  for (const b of new Set(rows.map((r) => r.batch))) {
    const m = fit(rows.filter((r) => r.batch !== b), c.feats, c.lambda, c.k);
    rows.forEach((r, i) => { if (r.batch === b) out[i] = hitOf(m, r); });
  }
  return out;
}
const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / (xs.length || 1);

/** Paired bootstrap of mean(a − b) over tasks: the 95% interval. */
function paired(a: readonly number[], b: readonly number[], n = 10000): [number, number] {
  let seed = 12345;
  const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const d = a.map((v, i) => v - b[i]);
  const ms: number[] = [];
  for (let k = 0; k < n; k++) { let s = 0; for (let i = 0; i < d.length; i++) s += d[Math.floor(rnd() * d.length)]; ms.push(s / d.length); }
  ms.sort((x, y) => x - y);
  return [ms[Math.floor(0.025 * n)], ms[Math.floor(0.975 * n)]];
}

// ---------------------------------------------------------------- report
const lines: string[] = [];
const say = (s = "") => { console.log(s); lines.push(s); };
const f3 = (x: number) => x.toFixed(3);
const val0 = await buildRows("val");
// --bank-records F[,F…]: rows over smaller real banks (scripts/select/bank-records.ts), scored by the
// cascade's CV per library (group); with --bank-train they join every fit too (never a held-out fold's)
const bankFiles = opt("--bank-records")?.split(",") ?? [];
const bankTrain = flag("--bank-train");
const bankRows: Row[] = bankFiles.flatMap((f) => gunzipSync(readFileSync(f)).toString().split("\n").filter(Boolean).map((l) => bankRow(JSON.parse(l) as BankRecord)));
const val: Row[] = [...val0.map((r) => ({ ...r, group: "full" })), ...bankRows];
// --distinct J: near-copies in a pool (the same slug, full-text token sets with Jaccard ≥ J) form one
// group, and the verdict reads the cheap stage's best of each group: two copies of one skill never take
// both of its places (what the route would do with a copy check)
const distinctJ = opt("--distinct");
async function markCopies(rows: Row[]): Promise<void> {
  if (distinctJ === undefined) return;
  const J = Number(distinctJ);
  const c = await corpus();
  let pairs = 0;
  for (const r of rows) {
    const cg = copyGroups(c, r.skills.map((id) => c.byId.get(id)), J);
    r.dup = cg.group;
    pairs += cg.pairs;
  }
  console.log(`--distinct ${J}: ${pairs} near-copy pairs over ${rows.length} rows`);
}
await markCopies(val);
interface BankRecord { id: string; batch: string; size: number; accepted: string[]; lexicalTop: string; pool: (Record<string, number> & { skill: string })[] }
function bankRow(r: BankRecord): Row {
  const gRank = rankBy(r.pool.map((p) => p.g));
  const x = r.pool.map((p, k) => FEATURES.map((f) => (f === "gRank" ? Math.log1p(gRank[k]) : f === "L" || f === "V" ? (p[f] ?? NaN) : f === "LRel" || f === "LRank" ? NaN : (p[f] ?? 0))));
  // the first stage there: g + βB over the pool (Δ keeps one candidate; B's normaliser is the task's)
  const first = r.pool.reduce((a, p) => (p.g + DEFAULT.beta * (p.s / DEFAULT.T) > a.g + DEFAULT.beta * (a.s / DEFAULT.T) ? p : a));
  return { id: r.id, batch: batchNumber(r.batch) ?? 0, skills: r.pool.map((p) => p.skill), gold: r.pool.map((p) => r.accepted.includes(p.skill)), x, defaultHit: r.accepted.includes(first.skill) ? 1 : 0, lexicalHit: r.accepted.includes(r.lexicalTop) ? 1 : 0, group: String(r.size) };
}
// --demo W: the demo's in-domain tasks over examples/skills (demo-records.ts), W copies of each, join
// every fit (never a CV fold's held-out part: the figures stay over validation tasks)
const demoWeight = Number(opt("--demo") ?? "0");
const extra: Row[] = [];
if (demoWeight > 0) {
  const recs = (await readPerQuery(`${outDir}/demo.jsonl.gz`)).filter((r) => r.verdict?.length);
  const texts = (JSON.parse(readFileSync("examples/demo-tasks.json", "utf8")) as { task: string; expected: string | null }[]).filter((t) => t.expected !== null).map((t) => t.task);
  const c = await buildCorpus(["examples/skills"]);
  for (const r of recs) {
    const row = { ...rowOf(r, texts[Number(r.id.split("/")[1])], c), batch: 0 };
    for (let k = 0; k < demoWeight; k++) extra.push(row);
  }
  console.log(`demo rows: ${recs.length} tasks × ${demoWeight}; gold in pool for ${extra.filter((r) => r.gold.some(Boolean)).length / demoWeight}`);
}
/** A fit's training rows: the given ones and the demo's. */
const withExtra = (rows: readonly Row[]) => (extra.length ? [...rows, ...extra] : rows);
// --cascade: a cheap model (names) orders the pool, the verdict reads its best m, and a second model
// (names + the verdict's read-outs) picks among those m: what a route can afford on the CPU.
const cascade = opt("--cascade");
if (cascade !== undefined) {
  // --no-bm25: without BM25 over T, whose scale follows the library's idf (the rest is relative to the pool)
  const noBm25 = flag("--no-bm25");
  const drop = (fs: readonly Feature[]) => fs.filter((f) => !(noBm25 && f === "bm25")).map(fi);
  // --copies-as F: which copies feature joins the stages (copies, copiesRel, or both: copies+copiesRel)
  const copiesAs = (opt("--copies-as") ?? "copies").split("+") as Feature[];
  const withPrf = (fs: readonly Feature[]): Feature[] => [...fs, ...(prfOpt ? ["prf" as const] : []), ...(copiesOpt ? copiesAs : [])];
  const cheap = drop(withPrf(SETS_ALL["names"])), full = drop(withPrf(SETS_ALL["names+verdict"]));
  const score = (m: Model, x: number[]) => m.feats.reduce((a, f, j) => a + m.w[j] * (x[f] - m.mean[j]) / m.sd[j], 0);
  /** The row restricted to the cheap model's best m (ties: pool order), its verdict features made relative to those. */
  const topM = (a: Model, r: Row, mm: number): Row => {
    const s = r.x.map((x) => score(a, x));
    const seenGroup = new Set<number>();
    const keep = s.map((_, i) => i).sort((i, j) => s[j] - s[i] || i - j).filter((i) => { const d = r.dup?.[i] ?? -1 - i; if (seenGroup.has(d)) return false; seenGroup.add(d); return true; }).slice(0, mm).sort((i, j) => i - j);
    const Lk = keep.map((i) => r.x[i][fi("L")]), Lmax = Math.max(...Lk);
    const rk = rankBy(Lk);
    const x = keep.map((i, j) => { const v = r.x[i].slice(); v[fi("LRel")] = Lk[j] - Lmax; v[fi("LRank")] = Math.log1p(rk[j]); return v; });
    // a bank row whose verdict read-outs were not computed for these candidates: the cheap stage's best decides
    if (Lk.some((v) => Number.isNaN(v))) { const b = keep.indexOf(keep.reduce((p, q) => (s[q] > s[p] || (s[q] === s[p] && q < p) ? q : p))); return { ...r, skills: [r.skills[keep[b]]], gold: [r.gold[keep[b]]], x: [x[b]], missing: true }; }
    return { ...r, skills: keep.map((i) => r.skills[i]), gold: keep.map((i) => r.gold[i]), x };
  };
  const fitFull = (rows: Row[], lam: number) => fit(rows.filter((r) => !r.missing), full, lam);
  const trainOf = (rows: readonly Row[]) => rows.filter((r) => bankTrain || r.group === "full");
  const lamA = Number(opt("--lambda-a") ?? "100");
  const MS = cascade.split(",").map(Number), LB = [0.1, 1, 10, 100];
  /** Leave-one-batch-out hits of the cascade (m, λB) over `rows`. */
  const cvCascade = (rows: readonly Row[], mm: number, lamB: number): number[] => {
    const out = new Array<number>(rows.length).fill(0);
    for (const b of new Set(rows.map((r) => r.batch))) {
      const train = withExtra(trainOf(rows.filter((r) => r.batch !== b)));
      const a = fit(train, cheap, lamA);
      const bm = fitFull(train.map((r) => topM(a, r, mm)), lamB);
      rows.forEach((r, i) => { if (r.batch === b) { const rr = topM(a, r, mm); out[i] = rr.gold[rr.skills.indexOf(predict(bm, rr))] ? 1 : 0; } });
    }
    return out;
  };
  // --margins τ,…: the verdict runs only when the cheap stage's best leads its second by less than τ
  // (otherwise the cheap stage's best is the pick), at m 2, λB 10. τ is chosen by leave-one-batch-out
  // CV: the largest Hit@1 over every row among the τ not below the first stage on any smaller library
  // (a bank group); ties: the smaller τ (fewer verdicts). The choice is made again in each outer fold
  // (nested CV), then on all of validation for the model written (cascade-margin.json).
  const margins = opt("--margins")?.split(",").map(Number) ?? [];
  /** One held-out row under a fitted (a, bm) and τ: [hit, verdict ran]. */
  const marginHit = (a: Model, bm: Model, r: Row, tau: number): [number, number] => {
    const rr = topM(a, r, 2);
    // the lead of the cheap stage's best over its second (with --distinct, the best of another group)
    const sc = rr.x.map((x) => score(a, x)).sort((p, q) => q - p);
    if (sc.length > 1 && sc[0] - sc[1] < tau && !rr.missing) return [rr.gold[rr.skills.indexOf(predict(bm, rr))] ? 1 : 0, 1];
    return [topM(a, r, 1).gold[0] ? 1 : 0, 0];
  };
  const cvMargin = (rows: readonly Row[], tau: number) => {
    const hits = new Array<number>(rows.length).fill(0), ran = new Array<number>(rows.length).fill(0);
    for (const b of new Set(rows.map((r) => r.batch))) {
      const train = withExtra(trainOf(rows.filter((r) => r.batch !== b)));
      const a = fit(train, cheap, lamA), bm = fitFull(train.map((r) => topM(a, r, 2)), 10);
      rows.forEach((r, i) => { if (r.batch === b) [hits[i], ran[i]] = marginHit(a, bm, r, tau); });
    }
    return { hits, ran };
  };
  const groupsOf = (rows: readonly Row[]) => [...new Set(rows.map((r) => r.group ?? "full"))];
  const inGroup = (rows: readonly Row[], grp: string) => rows.map((r, i) => ((r.group ?? "full") === grp ? i : -1)).filter((i) => i >= 0);
  const chooseTau = (rows: readonly Row[]) => {
    let best = { tau: margins[0], h: -1 };
    for (const tau of margins) {
      const { hits } = cvMargin(rows, tau);
      const ok = groupsOf(rows).filter((g) => g !== "full").every((g) => { const ix = inGroup(rows, g); return mean(ix.map((i) => hits[i])) >= mean(ix.map((i) => rows[i].defaultHit)) - 1e-12; });
      if (ok && mean(hits) > best.h + 1e-12) best = { tau, h: mean(hits) };
    }
    return best;
  };
  if (margins.length) {
    for (const tau of margins) {
      const { hits, ran } = cvMargin(val, tau);
      const per = groupsOf(val).map((grp) => { const ix = inGroup(val, grp); return `${grp}: ${mean(ix.map((i) => hits[i])).toFixed(3)} (verdict ${mean(ix.map((i) => ran[i])).toFixed(2)}, first stage ${mean(ix.map((i) => val[i].defaultHit)).toFixed(3)})`; });
      console.log(`margin τ ${tau}: CV Hit@1 ${mean(hits).toFixed(3)}; ${per.join("; ")}`);
    }
    const nested = new Array<number>(val.length).fill(0), nran = new Array<number>(val.length).fill(0);
    const chosen: string[] = [];
    for (const b of [...new Set(val.map((r) => r.batch))].sort()) {
      const inner = val.filter((r) => r.batch !== b);
      const { tau } = chooseTau(inner);
      chosen.push(`batch ${b}: τ ${tau}`);
      const train = withExtra(trainOf(inner));
      const a = fit(train, cheap, lamA), bm = fitFull(train.map((r) => topM(a, r, 2)), 10);
      val.forEach((r, i) => { if (r.batch === b) [nested[i], nran[i]] = marginHit(a, bm, r, tau); });
    }
    for (const grp of groupsOf(val)) {
      const ix = inGroup(val, grp);
      const h = ix.map((i) => nested[i]), d = ix.map((i) => val[i].defaultHit), l = ix.map((i) => val[i].lexicalHit);
      const [a1, b1] = paired(h, d), [a2, b2] = paired(h, l);
      console.log(`margin, nested CV (${chosen.join("; ")}), library ${grp} (${ix.length} tasks): Hit@1 ${mean(h).toFixed(3)}, verdict on ${mean(ix.map((i) => nran[i])).toFixed(2)}; first stage ${mean(d).toFixed(3)} (${(mean(h) - mean(d)).toFixed(3)} [${a1.toFixed(3)}, ${b1.toFixed(3)}]); lexical ${mean(l).toFixed(3)} (${(mean(h) - mean(l)).toFixed(3)} [${a2.toFixed(3)}, ${b2.toFixed(3)}])`);
    }
    const { tau, h } = chooseTau(val);
    const train = withExtra(trainOf(val));
    const a = fit(train, cheap, lamA), bm = fitFull(train.map((r) => topM(a, r, 2)), 10);
    const st = (m: Model) => ({ features: m.feats.map((f) => FEATURES[f]), weights: m.w, mean: m.mean, scale: m.sd });
    const model = { kind: "cascade", poolGlance: 20, poolLexical: 20, lucene: { k1: 1.2, b: 0.75 }, verdictTop: 2, cheap: st(a), full: st(bm), verdictMargin: tau };
    mkdirSync(outDir, { recursive: true });
    writeFileSync(`${outDir}/cascade-margin.json`, JSON.stringify(model, null, 2) + "\n");
    console.log(`margin chosen on all of validation: τ ${tau} (CV Hit@1 ${h.toFixed(3)}); wrote ${outDir}/cascade-margin.json`);
    if (extra.length) console.log(`demo tasks right under it: ${extra.filter((r, i) => i % demoWeight === 0 && marginHit(a, bm, r, tau)[0] === 1).length} of ${extra.length / demoWeight}`);
    if (readTest) {
      const test = [...(await buildRows("test")).map((r) => ({ ...r, group: "full" })), ...(opt("--bank-test")?.split(",") ?? []).flatMap((f) => gunzipSync(readFileSync(f)).toString().split("\n").filter(Boolean).map((l) => bankRow(JSON.parse(l) as BankRecord)))];
      await markCopies(test);
      const res = test.map((r) => marginHit(a, bm, r, tau));
      for (const grp of groupsOf(test)) {
        const ix = inGroup(test, grp);
        const hh = ix.map((i) => res[i][0]), d = ix.map((i) => test[i].defaultHit), l = ix.map((i) => test[i].lexicalHit);
        const [a1, b1] = paired(hh, d), [a2, b2] = paired(hh, l);
        console.log(`TEST (batches 6-10, read once), library ${grp} (${ix.length} tasks, ${ix.filter((i) => topM(a, test[i], 2).missing).length} without the verdict's read-outs): Hit@1 ${mean(hh).toFixed(3)}, verdict on ${mean(ix.map((i) => res[i][1])).toFixed(2)}; first stage ${mean(d).toFixed(3)} (${(mean(hh) - mean(d)).toFixed(3)} [${a1.toFixed(3)}, ${b1.toFixed(3)}]); lexical ${mean(l).toFixed(3)} (${(mean(hh) - mean(l)).toFixed(3)} [${a2.toFixed(3)}, ${b2.toFixed(3)}])`);
      }
    }
    process.exit(0);
  }
  // --replay F[,F…]: fixed cascades (cascade*.json, as shipped) scored on every row, per library
  for (const file of opt("--replay")?.split(",") ?? []) {
    const c = JSON.parse(readFileSync(file, "utf8")) as { verdictTop: number; cheap: { features: Feature[]; weights: number[]; mean: number[]; scale: number[] }; full: { features: Feature[]; weights: number[]; mean: number[]; scale: number[] } };
    const asModel = (st: typeof c.cheap): Model => ({ feats: st.features.map(fi), w: st.weights, mean: st.mean, sd: st.scale, k: 1e9 });
    const a = asModel(c.cheap), bm = asModel(c.full);
    const hits = val.map((r) => { const rr = topM(a, r, c.verdictTop); return rr.gold[rr.skills.indexOf(predict(bm, rr))] ? 1 : 0; });
    for (const grp of [...new Set(val.map((r) => r.group))]) {
      const ix = val.map((r, i) => (r.group === grp ? i : -1)).filter((i) => i >= 0);
      const h = ix.map((i) => hits[i]), d = ix.map((i) => val[i].defaultHit);
      const [lo, hi] = paired(h, d);
      console.log(`replay ${file}, library ${grp} (${ix.length} tasks, ${ix.filter((i) => topM(a, val[i], c.verdictTop).missing).length} without the verdict's read-outs): Hit@1 ${mean(h).toFixed(3)}; first stage ${mean(d).toFixed(3)} (${(mean(h) - mean(d)).toFixed(3)} [${lo.toFixed(3)}, ${hi.toFixed(3)}]); lexical ${mean(ix.map((i) => val[i].lexicalHit)).toFixed(3)}`);
    }
  }
  const nestedC = new Array<number>(val.length).fill(0);
  const picks: string[] = [];
  for (const b of [...new Set(val.map((r) => r.batch))].sort()) {
    const inner = val.filter((r) => r.batch !== b);
    let best = { mm: MS[0], lamB: LB[0], h: -1 };
    const innerFit = withExtra(trainOf(inner));
    for (const mm of MS) for (const lamB of LB) { const h = mean(cvCascade(inner, mm, lamB)); if (h > best.h + 1e-12) best = { mm, lamB, h }; }
    picks.push(`batch ${b}: m ${best.mm} λB ${best.lamB}`);
    const a = fit(innerFit, cheap, lamA);
    const bm = fitFull(innerFit.map((r) => topM(a, r, best.mm)), best.lamB);
    val.forEach((r, i) => { if (r.batch === b) { const rr = topM(a, r, best.mm); nestedC[i] = rr.gold[rr.skills.indexOf(predict(bm, rr))] ? 1 : 0; } });
  }
  const [nlo, nhi] = paired(nestedC, val.map((r) => r.defaultHit));
  console.log(`cascade nested CV (m and λB chosen within each outer fold; ${picks.join("; ")}): Hit@1 ${mean(nestedC).toFixed(3)}; − default ${(mean(nestedC) - mean(val.map((r) => r.defaultHit))).toFixed(3)} [${nlo.toFixed(3)}, ${nhi.toFixed(3)}]`);
  for (const grp of [...new Set(val.map((r) => r.group))]) {
    const ix = val.map((r, i) => (r.group === grp ? i : -1)).filter((i) => i >= 0);
    const h = ix.map((i) => nestedC[i]), d = ix.map((i) => val[i].defaultHit), l = ix.map((i) => val[i].lexicalHit);
    const [a1, b1] = paired(h, d), [a2, b2] = paired(h, l);
    console.log(`  library ${grp} (${ix.length} tasks${grp === "full" ? "" : `, ${ix.filter((i) => topM(fit(withExtra(trainOf(val)), cheap, lamA), val[i], 2).missing).length} without the verdict's read-outs`}): nested CV ${mean(h).toFixed(3)}; first stage ${mean(d).toFixed(3)} (${(mean(h) - mean(d)).toFixed(3)} [${a1.toFixed(3)}, ${b1.toFixed(3)}]); lexical ${mean(l).toFixed(3)} (${(mean(h) - mean(l)).toFixed(3)} [${a2.toFixed(3)}, ${b2.toFixed(3)}])`);
  }
  // the final cascade: (m, λB) by plain CV on all of validation, fitted on all of it
  let top = { mm: MS[0], lamB: LB[0], h: -1 };
  for (const mm of MS) for (const lamB of LB) { const h = mean(cvCascade(val, mm, lamB)); if (h > top.h + 1e-12) top = { mm, lamB, h }; }
  const fa = fit(withExtra(trainOf(val)), cheap, lamA), fb = fitFull(withExtra(trainOf(val)).map((r) => topM(fa, r, top.mm)), top.lamB);
  function pickOf0(r: Row): string { const rr = topM(fa, r, top.mm); return predict(fb, rr); }
  const stage = (m: Model) => ({ features: m.feats.map((f) => FEATURES[f]), weights: m.w, mean: m.mean, scale: m.sd });
  const cascadeModel = { kind: "cascade", poolGlance: 20, poolLexical: 20, lucene: { k1: 1.2, b: 0.75 }, verdictTop: top.mm, cheap: stage(fa), full: stage(fb) };
  console.log(`chosen by CV: m ${top.mm} λB ${top.lamB} (CV Hit@1 ${top.h.toFixed(3)}); model: ${JSON.stringify(cascadeModel)}`);
  mkdirSync(outDir, { recursive: true });
  if (extra.length) console.log(`demo tasks right under the final cascade: ${extra.filter((r, i) => i % demoWeight === 0 && r.gold[r.skills.indexOf(pickOf0(r))]).length} of ${extra.length / demoWeight}`);
  writeFileSync(`${outDir}/cascade${demoWeight > 0 ? "-demo" : ""}.json`, JSON.stringify(cascadeModel, null, 2) + "\n");
  const pickOf = pickOf0;
  writeFileSync(`${outDir}/cascade${demoWeight > 0 ? "-demo" : ""}-val.jsonl.gz`, gzipSync(val.map((r, i) => JSON.stringify({ id: r.id, batch: r.batch, inPool: r.gold.some(Boolean), lexical: r.lexicalHit, default: r.defaultHit, cvNested: nestedC[i], pick: pickOf(r) })).join("\n") + "\n"));
  if (readTest) {
    const test = await buildRows("test");
    const th = test.map((r) => (r.gold[r.skills.indexOf(pickOf(r))] ? 1 : 0));
    const tl = test.map((r) => r.lexicalHit), td = test.map((r) => r.defaultHit);
    const [a1, b1] = paired(th, tl), [c1, d1] = paired(th, td);
    console.log(`TEST (batches 6-10, ${test.length} tasks, read once): cascade Hit@1 ${mean(th).toFixed(3)}; lexical ${mean(tl).toFixed(3)} (${(mean(th) - mean(tl)).toFixed(3)} [${a1.toFixed(3)}, ${b1.toFixed(3)}]); default ${mean(td).toFixed(3)} (${(mean(th) - mean(td)).toFixed(3)} [${c1.toFixed(3)}, ${d1.toFixed(3)}])`);
    writeFileSync(`${outDir}/cascade${demoWeight > 0 ? "-demo" : ""}-test.jsonl.gz`, gzipSync(test.map((r, i) => JSON.stringify({ id: r.id, batch: r.batch, inPool: r.gold.some(Boolean), lexical: r.lexicalHit, default: r.defaultHit, model: th[i], pick: pickOf(r) })).join("\n") + "\n"));
  }
  for (const mm of MS) {
    for (const lamB of LB) {
      const hits = new Array<number>(val.length).fill(0);
      let recallM = 0;
      for (const b of new Set(val.map((r) => r.batch))) {
        const train = trainOf(val.filter((r) => r.batch !== b));
        const a = fit(train, cheap, lamA);
        const bm = fitFull(train.map((r) => topM(a, r, mm)), lamB);
        val.forEach((r, i) => { if (r.batch === b) { const rr = topM(a, r, mm); recallM += rr.gold.some(Boolean) ? 1 : 0; hits[i] = rr.gold[rr.skills.indexOf(predict(bm, rr))] ? 1 : 0; } });
      }
      const [lo, hi] = paired(hits, val.map((r) => r.defaultHit));
      console.log(`cascade m ${mm} λA ${lamA} λB ${lamB}: CV Hit@1 ${mean(hits).toFixed(3)} (gold in the m: ${(recallM / val.length).toFixed(3)}); − default ${(mean(hits) - mean(val.map((r) => r.defaultHit))).toFixed(3)} [${lo.toFixed(3)}, ${hi.toFixed(3)}]`);
    }
  }
  process.exit(0);
}
say(`# Learned first-stage re-ranking (issue 34), ${new Date().toISOString().slice(0, 10)}`);
say(`records: ${recordsDir}/{val,test}.jsonl.gz; features: full texts of the benchmark's library (30,593 skills); BM25 k1 ${K1}, b ${B}`);
say(`machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}, node ${process.version}; made ${new Date().toISOString()}`);
say(`command: npx vite-node scripts/select/rerank.ts -- ${process.argv.slice(2).filter((a) => a !== "--").join(" ")}`.trimEnd());
say();
const recall = mean(val.map((r) => (r.gold.some(Boolean) ? 1 : 0)));
say(`validation: ${val.length} tasks; pool (glance top 20 ∪ BM25 top 20) mean ${f3(mean(val.map((r) => r.skills.length)))} candidates, recall ${f3(recall)} (the ceiling of any re-ranking)`);
const lex = val.map((r) => r.lexicalHit), def = val.map((r) => r.defaultHit);
say(`lexical expert alone (BM25 k1 3, b 1): Hit@1 ${f3(mean(lex))}; the route fitted to these records (${basename(recordsDir)} in selection.json, replayed): ${f3(mean(def))}`);
say();
say("Leave-one-batch-out CV on validation (5 folds = batches 1-5), each feature set at its best λ and pool (candidates: BM25's best k of the pool; 40: the whole pool):");
say();
say("| features | λ | BM25's best k | CV Hit@1 | − lexical [95%] | − default [95%] |\n| --- | --- | --- | --- | --- | --- |");
const all = CONFIGS.map((c) => ({ c, h: cvHits(val, c) }));
for (const name of Object.keys(SETS)) {
  const best = all.filter((a) => a.c.name === name).reduce((a, b) => (mean(b.h) > mean(a.h) + 1e-12 ? b : a));
  const [l1, h1] = paired(best.h, lex), [l2, h2] = paired(best.h, def);
  say(`| ${name}: ${SETS[name].join(", ")} | ${best.c.lambda} | ${best.c.k} | ${f3(mean(best.h))} | ${f3(mean(best.h) - mean(lex))} [${f3(l1)}, ${f3(h1)}] | ${f3(mean(best.h) - mean(def))} [${f3(l2)}, ${f3(h2)}] |`);
}
// nested: inside each outer fold, choose the config by inner leave-one-batch-out CV on the other 4 batches
const nested = new Array<number>(val.length).fill(0);
const chosenPerFold: string[] = [];
for (const b of skipNested ? [] : [...new Set(val.map((r) => r.batch))].sort()) {
  const inner = val.filter((r) => r.batch !== b);
  const pick = CONFIGS.map((c) => ({ c, h: mean(cvHits(inner, c)) })).reduce((a, x) => (x.h > a.h + 1e-12 ? x : a));
  chosenPerFold.push(`batch ${b}: ${pick.c.name} λ ${pick.c.lambda} k ${pick.c.k}`);
  const m = fit(inner, pick.c.feats, pick.c.lambda, pick.c.k);
  val.forEach((r, i) => { if (r.batch === b) nested[i] = hitOf(m, r); });
}
const [nl1, nh1] = paired(nested, lex), [nl2, nh2] = paired(nested, def);
say();
say(`Nested CV (the choice of features and λ made again within each outer fold; ${chosenPerFold.join("; ")}):`);
say(`CV Hit@1 ${f3(mean(nested))}; against the lexical expert ${f3(mean(nested) - mean(lex))} [${f3(nl1)}, ${f3(nh1)}], against the default ${f3(mean(nested) - mean(def))} [${f3(nl2)}, ${f3(nh2)}] (paired bootstrap over tasks, 10,000 draws)`);

if (greedy) {
  say();
  say("Greedy forward selection by CV Hit@1 (λ 1; exploratory, not nested):");
  let chosen: number[] = [];
  let bestH = 0;
  for (;;) {
    const tries = FEATURES.map((_, j) => j).filter((j) => !chosen.includes(j)).map((j) => ({ j, h: mean(cvHits(val, { name: "", feats: [...chosen, j], lambda: 1, k: 40 })) }));
    if (tries.length === 0) break;
    const t = tries.reduce((a, x) => (x.h > a.h + 1e-12 ? x : a));
    if (t.h <= bestH + 1e-12) break;
    chosen = [...chosen, t.j];
    bestH = t.h;
    say(`  + ${FEATURES[t.j]}: ${f3(t.h)}`);
  }
}

// the model fitted on all validation with the config the plain CV prefers (largest CV Hit@1; ties: fewer features, more λ)
const top = all.reduce((a, x) => (mean(x.h) > mean(a.h) + 1e-12 || (Math.abs(mean(x.h) - mean(a.h)) < 1e-12 && (x.c.feats.length < a.c.feats.length || (x.c.feats.length === a.c.feats.length && x.c.lambda > a.c.lambda))) ? x : a));
const model = fit(val, top.c.feats, top.c.lambda, top.c.k);
say();
say(`chosen by CV: ${top.c.name} λ ${top.c.lambda}, BM25's best ${top.c.k}; weights on standardised features: ${model.feats.map((f, j) => `${FEATURES[f]} ${model.w[j].toFixed(3)}`).join(", ")}`);
const inSample = val.map((r) => hitOf(model, r));
say(`the chosen model scored on the tasks it was fitted on (no held-out tasks): Hit@1 ${f3(mean(inSample))}`);
const both = (a: number[], b: number[], x: number, y: number) => a.filter((v, i) => v === x && b[i] === y).length;
say(`nested CV against the lexical expert, task by task: ${both(nested, lex, 1, 0)} won, ${both(nested, lex, 0, 1)} lost; in-pool accuracy ${f3(mean(nested) / recall)} against BM25's ${f3(mean(lex) / recall)}`);
const rankOfGold = val.filter((r) => r.gold.some(Boolean)).map((r) => Math.min(...r.x.map((x, k) => (r.gold[k] ? Math.round(Math.expm1(x[fi("bm25Rank")])) : 99))));
say(`where BM25 ranks the gold within the pool: ${[0, 1, 2, 3, 4].map((k) => `${k + 1}: ${rankOfGold.filter((v) => v === k).length}`).join(", ")}, 6-10: ${rankOfGold.filter((v) => v >= 5 && v < 10).length}, 11+: ${rankOfGold.filter((v) => v >= 10).length} (of ${val.length})`);
const sameName = val.filter((r) => {
  if (r.lexicalHit) return false;
  const top = r.x.findIndex((x) => Math.round(Math.expm1(x[fi("bm25Rank")])) === 0);
  return r.skills.some((s, k) => r.gold[k] && slugOf(s) === slugOf(r.skills[top]));
}).length;
say(`BM25's misses whose first pick is a copy of the gold under the gold's own name (its text differs, so it does not count): ${sameName} of ${val.filter((r) => !r.lexicalHit).length}`);
mkdirSync(outDir, { recursive: true });
const recs = val.map((r, i) => ({ id: r.id, batch: r.batch, pool: r.skills.length, inPool: r.gold.some(Boolean), lexical: r.lexicalHit, default: r.defaultHit, cvNested: nested[i], pick: predict(model, r) }));
if (readTest) {
  const test = await buildRows("test");
  const th = test.map((r) => hitOf(model, r));
  const tl = test.map((r) => r.lexicalHit), td = test.map((r) => r.defaultHit);
  const [a, b] = paired(th, tl), [c, d] = paired(th, td);
  say();
  say(`TEST (batches 6-10, ${test.length} tasks, read once; pool recall ${f3(mean(test.map((r) => (r.gold.some(Boolean) ? 1 : 0))))}): Hit@1 ${f3(mean(th))}; lexical ${f3(mean(tl))} (${f3(mean(th) - mean(tl))} [${f3(a)}, ${f3(b)}]); default ${f3(mean(td))} (${f3(mean(th) - mean(td))} [${f3(c)}, ${f3(d)}])`);
  writeFileSync(`${outDir}/test${runtimeOnly ? "-runtime" : ""}.jsonl.gz`, gzipSync(test.map((r, i) => JSON.stringify({ id: r.id, batch: r.batch, pool: r.skills.length, inPool: r.gold.some(Boolean), lexical: r.lexicalHit, default: r.defaultHit, model: th[i], pick: predict(model, r) })).join("\n") + "\n"));
}
writeFileSync(`${outDir}/val${runtimeOnly ? "-runtime" : ""}.jsonl.gz`, gzipSync(recs.map((r) => JSON.stringify(r)).join("\n") + "\n"));
writeFileSync(`${outDir}/model${runtimeOnly ? "-runtime" : ""}.json`, JSON.stringify({ config: top.c.name, lambda: top.c.lambda, k: top.c.k, features: model.feats.map((f) => FEATURES[f]), mean: model.mean, sd: model.sd, w: model.w }, null, 2) + "\n");
writeFileSync(`${outDir}/table${runtimeOnly ? "-runtime" : ""}${readTest ? "-test" : ""}.txt`, lines.join("\n") + "\n");
