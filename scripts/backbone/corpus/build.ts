/**
 * The larger backbone corpus (issue 14): real, unique text from the public skills and from the Debian
 * packages fetch.sh unpacked, deduplicated, screened against SWE-Skills-Bench, sharded as JSONL.
 *
 *   npx vite-node scripts/backbone/corpus/build.ts -- --cache CACHE --out OUT_DIR [options]
 *   (build.sh runs fetch.sh then this)
 *
 * Pass 1 walks the sources in a fixed order (skills, held-out ones first; then the packages by group
 * and name; files of a package in sorted path order), extracts text, filters, and keeps a document
 * unless it is
 *   - an exact duplicate of a kept one (sha1 of the text with all whitespace runs squeezed to one space),
 *   - SWE-Skills-Bench task text: lab/train/queries/overlap.ts TaskOverlap (a shared 12-word run),
 *   - a near duplicate: MinHash (64 hashes) of its set of 5-word shingles, LSH with 16 bands of 4 rows
 *     for candidates, dropped when the estimated Jaccard with a kept document is >= --jaccard (0.8).
 * The first copy met is kept, so skills win over packages and the held-out skills over everything: no
 * training document is a near copy of a held-out one. Kept documents go to a work file.
 * Pass 2 writes them in a seeded shuffled order to OUT/train-NNNNN.jsonl shards
 * ({text, source, package, version, licence, path[, tokens]}), the held-out skills to
 * OUT/heldout-skills.jsonl, and OUT/stats.json. Tokens are counted with gavel-mini's own vocabulary
 * (models/gavel-mini.gguf through the repo's Model.tokenize, no BOS) on every document, or on a seeded
 * --token-fraction of them with the per-source characters-per-token ratio extrapolating the rest.
 */
import { createHash } from "node:crypto";
import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { join, resolve } from "node:path";
import { Model } from "../../../src/model/Model.js";
import { loadSkills } from "../../../src/skills/index.js";
import { TaskOverlap } from "../../../lab/train/queries/overlap.js";
import { words } from "../../../lab/train/queries/text.js";
import { Rng } from "../../../src/util/prng.js";
import { boilerplateLines, decodeText, dropLines, htmlToText, letterFraction, looksGenerated, looksMinified, roffToText, tidy } from "./extract.js";
import { licenceOf, packageLicence, type PackageLicence } from "./licence.js";
import { args, opt, ROOT } from "../args.js";

const O = {
  cache: resolve(opt("cache", "/work/corpus/cache")),
  out: resolve(opt("out", "/work/corpus/out")),
  skills: resolve(opt("skills", resolve(ROOT, "../shared/data/skills-mit.jsonl.gz"))),
  tasks: resolve(opt("tasks", resolve(ROOT, "../shared/data/swe-skills-bench/tasks.jsonl"))),
  tokenizer: resolve(opt("tokenizer", join(ROOT, "models/gavel-mini.gguf"))),
  seed: Number(opt("seed", "1234")),
  tokenFraction: Number(opt("token-fraction", "1")),
  shardBytes: Number(opt("shard-mb", "256")) * 2 ** 20,
  maxBytes: Number(opt("max-bytes", String(1 << 20))),
  minChars: Number(opt("min-chars", "200")),
  minLetters: Number(opt("min-letters", "0.25")),
  jaccard: Number(opt("jaccard", "0.8")),
  /** Only packages whose sha1("sub:"+name) mod `subsetMod` is 0 (a subset run for timing); 1 = all. */
  subsetMod: Number(opt("subset-mod", "1")),
  groups: opt("groups", "python,rust,go,node,man,docs").split(","),
  noSkills: args.includes("--no-skills"),
  /** Keep documents of packages whose copyright file could not be found or read (dropped by default). */
  keepUnknownLicence: args.includes("--keep-unknown-licence"),
};
if (!(O.tokenFraction > 0 && O.tokenFraction <= 1)) throw new Error("--token-fraction must be in (0, 1]");

const t0 = Date.now();
const secs = () => ((Date.now() - t0) / 1000).toFixed(0);
const log = (s: string) => console.log(`[${secs()} s] ${s}`);

// ---------- per-source accounting ---------------------------------------------------------------------
interface Count {
  files: number;
  skipped: Record<string, number>;
  exact: number;
  near: number;
  task: number;
  kept: number;
  chars: number;
  heldout: number;
  tokenized_docs: number;
  tokenized_chars: number;
  tokenized_tokens: number;
}
const counts = new Map<string, Count>();
function count(src: string): Count {
  let c = counts.get(src);
  if (!c) counts.set(src, (c = { files: 0, skipped: {}, exact: 0, near: 0, task: 0, kept: 0, chars: 0, heldout: 0, tokenized_docs: 0, tokenized_chars: 0, tokenized_tokens: 0 }));
  return c;
}
const skip = (c: Count, why: string) => (c.skipped[why] = (c.skipped[why] ?? 0) + 1);
const byLicence = new Map<string, { docs: number; chars: number }>();

// ---------- dedup + task screen -----------------------------------------------------------------------
const tasks = readFileSync(O.tasks, "utf8").split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { text: string }).text);
const overlap = new TaskOverlap(tasks);
log(`${tasks.length} SWE-Skills-Bench tasks indexed (window ${overlap.window} words)`);

const exactSeen = new Set<string>();
const K = 64;
const BANDS = 16;
const ROWS = K / BANDS;
const SEEDS = new Uint32Array(K);
{
  const r = new Rng(O.seed ^ 0x5eed);
  for (let i = 0; i < K; i++) SEEDS[i] = Math.floor(r.next() * 2 ** 32) >>> 0;
}
let sigs = new Uint32Array(K * 65536);
let nSigs = 0;
const bandMaps: Map<number, number>[] = Array.from({ length: BANDS }, () => new Map());

function wordHash(w: string): number {
  let h = 0x811c9dc5;
  for (let j = 0; j < w.length; j++) h = Math.imul(h ^ w.charCodeAt(j), 0x01000193);
  return h >>> 0;
}
/** MinHash signature of the 5-word shingles, or null below 5 words. */
function minhash(ws: string[]): Uint32Array | null {
  if (ws.length < 5) return null;
  const wh = new Uint32Array(ws.length);
  for (let i = 0; i < ws.length; i++) wh[i] = wordHash(ws[i]);
  const sig = new Uint32Array(K).fill(0xffffffff);
  for (let i = 0; i + 5 <= wh.length; i++) {
    let s = 0x9747b28c;
    for (let j = 0; j < 5; j++) s = Math.imul((s ^ wh[i + j]) >>> 0, 0x5bd1e995) ^ (s >>> 15);
    for (let k = 0; k < K; k++) {
      let v = Math.imul(s ^ SEEDS[k], 0x9e3779b1);
      v ^= v >>> 16;
      v = Math.imul(v, 0x85ebca6b);
      v ^= v >>> 13;
      v >>>= 0;
      if (v < sig[k]) sig[k] = v;
    }
  }
  return sig;
}
function bandKey(sig: Uint32Array, b: number): number {
  let a = 0x12345 + b;
  let c = 0x6789 + b;
  for (let r = 0; r < ROWS; r++) {
    const v = sig[b * ROWS + r];
    a = Math.imul(a ^ v, 0x01000193);
    c = Math.imul(c ^ v, 0x5bd1e995) ^ (c >>> 13);
  }
  return (a >>> 0) * 2 ** 21 + ((c >>> 0) & 0x1fffff);
}
/** Whether the signature is a near duplicate of a kept one; if not, it is added to the index. */
function nearDuplicate(sig: Uint32Array): boolean {
  const keys: number[] = [];
  const seen = new Set<number>();
  for (let b = 0; b < BANDS; b++) {
    const key = bandKey(sig, b);
    keys.push(key);
    const cand = bandMaps[b].get(key);
    if (cand === undefined || seen.has(cand)) continue;
    seen.add(cand);
    let eq = 0;
    const off = cand * K;
    for (let k = 0; k < K; k++) if (sigs[off + k] === sig[k]) eq++;
    if (eq / K >= O.jaccard) return true;
  }
  if ((nSigs + 1) * K > sigs.length) {
    const g = new Uint32Array(sigs.length * 2);
    g.set(sigs);
    sigs = g;
  }
  sigs.set(sig, nSigs * K);
  for (let b = 0; b < BANDS; b++) if (!bandMaps[b].has(keys[b])) bandMaps[b].set(keys[b], nSigs);
  nSigs++;
  return false;
}

// ---------- the work file of kept documents ------------------------------------------------------------
mkdirSync(O.out, { recursive: true });
for (const f of readdirSync(O.out)) if (/^(train-\d+\.jsonl|heldout-skills\.jsonl|stats\.json|manifest\.tsv|work\.jsonl)$/.test(f)) rmSync(join(O.out, f));
const workPath = join(O.out, "work.jsonl");
const work = openSync(workPath, "w");
let workPos = 0;
const kept: { off: number; len: number; src: string; held: boolean }[] = [];

interface Meta {
  source: string;
  package: string;
  version: string;
  licence: string;
  path: string;
}
/** Screens one document; true if kept. */
function offer(text: string, m: Meta, held = false): boolean {
  const c = count(m.source);
  const norm = text.replace(/\s+/g, " ").trim();
  const h = createHash("sha1").update(norm).digest("base64");
  if (exactSeen.has(h)) {
    c.exact++;
    return false;
  }
  exactSeen.add(h);
  if (overlap.overlaps(text)) {
    c.task++;
    return false;
  }
  const sig = minhash(words(text));
  if (sig && nearDuplicate(sig)) {
    c.near++;
    return false;
  }
  const line = Buffer.from(`${JSON.stringify({ text, ...m })}\n`, "utf8");
  writeSync(work, line);
  kept.push({ off: workPos, len: line.length, src: m.source, held });
  workPos += line.length;
  if (held) c.heldout++;
  else {
    c.kept++;
    c.chars += text.length;
    const l = byLicence.get(m.licence) ?? { docs: 0, chars: 0 };
    l.docs++;
    l.chars += text.length;
    byLicence.set(m.licence, l);
  }
  return true;
}

// ---------- skills ---------------------------------------------------------------------------------------
if (!O.noSkills) {
  const { skills, failed } = await loadSkills(O.skills);
  const heldOut = (id: string) => createHash("sha1").update(id).digest().readUInt32BE(0) % 100 === 0;
  log(`skills: ${skills.length} loaded, ${failed.length} failed to load`);
  const c = count("skills");
  // Held-out skills first, so that their copies leave training (and only then the training skills).
  for (const pass of [true, false]) {
    for (const s of skills) {
      if (heldOut(s.id) !== pass) continue;
      if (pass === false) c.files++;
      const text = `name: ${s.name}\ndescription: ${s.description}${s.body ? `\n\n${s.body}` : ""}`;
      const meta = s.meta as { commit?: string };
      offer(text, { source: "skills", package: "skills-mit", version: String(meta?.commit ?? s.source ?? ""), licence: "MIT", path: s.id }, pass);
    }
  }
  log(`skills: ${c.kept} kept, ${c.heldout} held out, ${c.exact} exact / ${c.near} near duplicates, ${c.task} with task text`);
}

// ---------- packages -------------------------------------------------------------------------------------
const CODE = new Set(["py", "pyi", "js", "mjs", "cjs", "ts", "mts", "cts", "tsx", "jsx", "rs", "go", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "java", "rb", "pl", "pm", "t", "sh", "bash", "lua", "sql", "el", "tcl", "awk", "s", "S", "cmake"]);
const DOCS = new Set(["md", "markdown", "rst", "txt", "pod", "adoc", "asciidoc", "texi", "org", "tex"]);
const HTML = new Set(["html", "htm", "xhtml"]);
const RUST_BOOKS = /^\/usr\/share\/doc\/rust-doc\/html\/(book|reference|nomicon|rust-by-example|edition-guide|embedded-book|unstable-book|rustc|rustdoc|style-guide|cargo)\//;
const SKIP_PATH = /\/(testdata|vendor|node_modules|__pycache__|\.git|_static|_images)\/|\/(changelog|NEWS|copyright|COPYING|LICEN[SC]E|AUTHORS|THANKS|ChangeLog)[^/]*$|\.min\.js$|\/(genindex|search|py-modindex|searchindex|print)[^/]*\.html$|\.cargo-checksum\.json$/i;

function walk(dir: string, rel: string, out: string[]): void {
  let entries: string[];
  try {
    entries = readdirSync(dir).sort();
  } catch {
    return;
  }
  for (const e of entries) {
    const p = join(dir, e);
    const st = lstatSync(p);
    if (st.isSymbolicLink()) continue;
    if (st.isDirectory()) walk(p, `${rel}/${e}`, out);
    else if (st.isFile()) out.push(`${rel}/${e}`);
  }
}

type Kind = "code" | "doc" | "html" | "man";
function classify(path: string, pkg: string): { kind: Kind; gz: boolean } | null {
  const gz = path.endsWith(".gz");
  const p = gz ? path.slice(0, -3) : path;
  if (SKIP_PATH.test(p)) return null;
  if (/^\/usr\/share\/man\/man[^/]+\/[^/]+\.[0-9][^/]*$/.test(p)) return { kind: "man", gz };
  if (/^\/usr\/share\/man\//.test(p)) return null; // translated pages
  const base = p.slice(p.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  const ext = dot > 0 ? base.slice(dot + 1) : "";
  if (HTML.has(ext.toLowerCase())) {
    if (pkg === "rust-doc" && !RUST_BOOKS.test(p)) return null;
    return { kind: "html", gz };
  }
  if (pkg === "rust-doc") return null;
  if (DOCS.has(ext.toLowerCase())) return { kind: "doc", gz };
  if (CODE.has(ext) && !gz) return { kind: "code", gz };
  if (!ext && /^(README|INSTALL|HACKING|CONTRIBUTING|FAQ|TODO)/.test(base)) return { kind: "doc", gz };
  return null;
}

interface Pkg {
  group: string;
  name: string;
  version: string;
}
const manifestPath = join(O.cache, "manifest.tsv");
const pkgs: Pkg[] = readFileSync(manifestPath, "utf8")
  .split("\n")
  .slice(1)
  .filter(Boolean)
  .map((l) => l.split("\t"))
  .map(([group, name, , version]) => ({ group, name, version }))
  .filter((p) => O.groups.includes(p.group))
  .filter((p) => O.subsetMod <= 1 || createHash("sha1").update(`sub:${p.name}`).digest().readUInt32BE(0) % O.subsetMod === 0)
  .sort((a, b) => O.groups.indexOf(a.group) - O.groups.indexOf(b.group) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
log(`packages: ${pkgs.length} (groups ${O.groups.join(",")}${O.subsetMod > 1 ? `, subset 1/${O.subsetMod}` : ""})`);

const licences: Record<string, { version: string; group: string; copyright: string; dep5: boolean; main: string; all: string[]; docs: number; chars: number }> = {};
let lastLog = Date.now();
let boilerplateDropped = 0;
for (const [pi, pkg] of pkgs.entries()) {
  const root = join(O.cache, "root", pkg.name);
  const lic: PackageLicence = packageLicence(root, pkg.name, join(O.cache, "root"));
  const rec = (licences[pkg.name] = { version: pkg.version, group: pkg.group, copyright: lic.file, dep5: lic.dep5, main: lic.main, all: lic.all, docs: 0, chars: 0 });
  const files: string[] = [];
  walk(root, "", files);
  // Sphinx trees ship both the HTML and its _sources/*.rst.txt: keep the reStructuredText, skip the page.
  const sphinxHtml = new Set<string>();
  for (const f of files) {
    const i = f.indexOf("/_sources/");
    if (i < 0) continue;
    const rel = f.slice(i + 10).replace(/(\.gz)?$/, "").replace(/\.txt$/, "").replace(/\.(rst|md)$/, "");
    sphinxHtml.add(`${f.slice(0, i)}/${rel}.html`);
  }
  const c = count(pkg.group);
  const items: { text: string; path: string; html: boolean }[] = [];
  for (const f of files) {
    const k = classify(f, pkg.name);
    if (!k) continue;
    if (k.kind === "html" && sphinxHtml.has(f.replace(/\.gz$/, ""))) continue;
    c.files++;
    const full = join(root, f);
    const size = lstatSync(full).size;
    if (size > O.maxBytes) {
      skip(c, "large");
      continue;
    }
    let buf: Buffer = readFileSync(full);
    if (k.gz) {
      try {
        buf = gunzipSync(buf, { maxOutputLength: O.maxBytes + 1 });
      } catch {
        skip(c, "large-or-bad-gzip");
        continue;
      }
      if (buf.length > O.maxBytes) {
        skip(c, "large");
        continue;
      }
    }
    const raw = decodeText(buf);
    if (raw === "binary" || raw === "non-utf8") {
      skip(c, raw);
      continue;
    }
    let text: string;
    if (k.kind === "html") text = htmlToText(raw);
    else if (k.kind === "man") text = roffToText(raw);
    else {
      if (looksMinified(raw)) {
        skip(c, "minified");
        continue;
      }
      if (k.kind === "code" && looksGenerated(raw)) {
        skip(c, "generated");
        continue;
      }
      text = k.kind === "doc" ? tidy(raw).trim() : raw.replace(/\r\n/g, "\n").replace(/[ \t]+$/gm, "").trim();
    }
    items.push({ text, path: f, html: k.kind === "html" });
  }
  // Site navigation: lines found on at least half of the package's HTML pages (>= 8 pages) go.
  const boiler = boilerplateLines(items.filter((x) => x.html).map((x) => x.text));
  for (const it of items) {
    let text = it.text;
    if (it.html && boiler.size) {
      const r = dropLines(text, boiler);
      text = r.text;
      boilerplateDropped += r.dropped;
    }
    if (text.length < O.minChars) {
      skip(c, "short");
      continue;
    }
    if (letterFraction(text) < O.minLetters) {
      skip(c, "few-letters");
      continue;
    }
    const licence = licenceOf(lic, it.path.replace(/\.gz$/, ""));
    if (/unknown/.test(licence) && !O.keepUnknownLicence) {
      skip(c, "licence-unknown");
      continue;
    }
    if (offer(text, { source: pkg.group, package: pkg.name, version: pkg.version, licence, path: it.path })) {
      rec.docs++;
      rec.chars += text.length;
    }
  }
  if (Date.now() - lastLog > 30000 || pi === pkgs.length - 1) {
    lastLog = Date.now();
    const tot = [...counts.values()].reduce((a, x) => a + x.chars, 0);
    log(`${pi + 1}/${pkgs.length} packages (${pkg.name}); kept ${kept.length} docs, ${(tot / 1e6).toFixed(1)} M chars`);
  }
}
closeSync(work);
log(`pass 1 done: ${kept.length} documents kept`);

// ---------- pass 2: shuffled shards + tokens ---------------------------------------------------------------
const model = await Model.load(O.tokenizer, { contextSize: 512, sequences: 2, threads: 1 });
const rng = new Rng(O.seed);
const train = kept.filter((d) => !d.held);
const held = kept.filter((d) => d.held);
for (let i = train.length - 1; i > 0; i--) {
  const j = rng.int(i + 1);
  [train[i], train[j]] = [train[j], train[i]];
}
const fd = openSync(workPath, "r");
function readDoc(d: { off: number; len: number }): Record<string, unknown> {
  const b = Buffer.alloc(d.len);
  readSync(fd, b, 0, d.len, d.off);
  return JSON.parse(b.toString("utf8")) as Record<string, unknown>;
}
let shard = -1;
let shardFd = -1;
let shardPos = Infinity;
const shards: { file: string; docs: number; bytes: number }[] = [];
const tokRng = new Rng(O.seed + 1);
let done = 0;
for (const d of train) {
  const rec = readDoc(d);
  if (O.tokenFraction >= 1 || tokRng.next() < O.tokenFraction) {
    const text = rec.text as string;
    const n = model.tokenize(text, { addBos: false }).length;
    rec.tokens = n;
    const c = count(d.src);
    c.tokenized_docs++;
    c.tokenized_chars += text.length;
    c.tokenized_tokens += n;
  }
  const line = `${JSON.stringify(rec)}\n`;
  if (shardPos >= O.shardBytes) {
    if (shardFd >= 0) closeSync(shardFd);
    shard++;
    const file = `train-${String(shard).padStart(5, "0")}.jsonl`;
    shardFd = openSync(join(O.out, file), "w");
    shards.push({ file, docs: 0, bytes: 0 });
    shardPos = 0;
  }
  const b = Buffer.from(line, "utf8");
  writeSync(shardFd, b);
  shardPos += b.length;
  shards[shard].docs++;
  shards[shard].bytes += b.length;
  if (++done % 20000 === 0) log(`pass 2: ${done}/${train.length} documents written`);
}
if (shardFd >= 0) closeSync(shardFd);
let heldTokens = 0;
let heldChars = 0;
{
  const hf = openSync(join(O.out, "heldout-skills.jsonl"), "w");
  for (const d of held) {
    const rec = readDoc(d);
    const n = model.tokenize(rec.text as string, { addBos: false }).length;
    rec.tokens = n;
    heldTokens += n;
    heldChars += (rec.text as string).length;
    writeSync(hf, `${JSON.stringify(rec)}\n`);
  }
  closeSync(hf);
}
closeSync(fd);
rmSync(workPath);
await model.dispose();

// ---------- stats -----------------------------------------------------------------------------------------
const sources: Record<string, unknown> = {};
let tot = { docs: 0, chars: 0, tokens: 0, tokens_measured: 0, exact: 0, near: 0, task: 0, files: 0 };
for (const [src, c] of [...counts.entries()].sort()) {
  const ratio = c.tokenized_chars ? c.tokenized_tokens / c.tokenized_chars : 0;
  const tokens = O.tokenFraction >= 1 ? c.tokenized_tokens : Math.round(c.chars * ratio);
  sources[src] = {
    candidate_files: c.files,
    skipped: c.skipped,
    removed_exact_duplicates: c.exact,
    removed_near_duplicates: c.near,
    removed_task_overlap: c.task,
    documents: c.kept,
    characters: c.chars,
    tokens,
    tokens_exact: O.tokenFraction >= 1,
    tokenized_documents: c.tokenized_docs,
    tokenized_tokens: c.tokenized_tokens,
    chars_per_token: ratio ? +(1 / ratio).toFixed(3) : null,
    ...(c.heldout ? { heldout_documents: c.heldout } : {}),
  };
  tot = {
    docs: tot.docs + c.kept, chars: tot.chars + c.chars, tokens: tot.tokens + tokens, tokens_measured: tot.tokens_measured + c.tokenized_tokens,
    exact: tot.exact + c.exact, near: tot.near + c.near, task: tot.task + c.task, files: tot.files + c.files,
  };
}
const stats = {
  built: new Date().toISOString(),
  seconds: (Date.now() - t0) / 1000,
  options: { ...O, shardBytes: undefined, shard_mb: O.shardBytes / 2 ** 20 },
  tokenizer: "models/gavel-mini.gguf vocabulary (llama SPM 32K), Model.tokenize without BOS",
  dedup: {
    exact: "sha1 of the text with whitespace runs squeezed to one space",
    near: `MinHash K=${K} over the set of 5-word shingles (words: lower-cased letter/digit runs), LSH ${BANDS} bands x ${ROWS} rows, dropped at estimated Jaccard >= ${O.jaccard} with a kept document; first copy kept (skills, then packages in group/name/path order)`,
    html_boilerplate: `lines found on >= half of a package's HTML pages (packages with >= 8 pages) removed: ${boilerplateDropped} lines`,
    task_screen: `lab/train/queries/overlap.ts TaskOverlap over the ${tasks.length} SWE-Skills-Bench task texts (window ${overlap.window} words)`,
  },
  heldout: { rule: "skills with sha1(id) mod 100 = 0 (as scripts/backbone/prepare.ts)", documents: held.length, characters: heldChars, tokens: heldTokens, file: "heldout-skills.jsonl" },
  total: { documents: tot.docs, characters: tot.chars, tokens: tot.tokens, tokens_measured: tot.tokens_measured, candidate_files: tot.files, removed_exact_duplicates: tot.exact, removed_near_duplicates: tot.near, removed_task_overlap: tot.task },
  sources,
  licences: Object.fromEntries([...byLicence.entries()].sort((a, b) => b[1].chars - a[1].chars)),
  shards,
  packages: licences,
};
writeFileSync(join(O.out, "stats.json"), `${JSON.stringify(stats, null, 1)}\n`);
writeFileSync(join(O.out, "manifest.tsv"), readFileSync(manifestPath));
log(`done: ${tot.docs} documents, ${(tot.chars / 1e6).toFixed(1)} M chars, ${(tot.tokens / 1e6).toFixed(1)} M tokens${O.tokenFraction < 1 ? " (estimated from a sample)" : ""} in ${shards.length} shards; held out ${held.length} skills (${heldTokens} tokens)`);
if (existsSync(workPath)) rmSync(workPath);
