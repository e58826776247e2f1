/**
 * Issue 14: the larger corpus (scripts/backbone/corpus/, built into OUT/out) as training streams for the
 * GPU machine, in xz pieces that ride along in device calls (at most 64 MiB each, the tree included).
 *
 *   bash scripts/backbone/pack-corpus.sh [--corpus /work/corpus/out] [--out .device/corpus] [options]
 *
 * What it writes (OUT is git-ignored):
 *   OUT/c1, c2, …   one folder per device call ("group"), each at most --group-mib MiB:
 *                   train-NN.bin.xz.part-MM   segment NN of the training stream, xz, cut in ≤ --piece-mib pieces
 *                   SHA256SUMS                the group's pieces (sha256sum -c format)
 *                   manifest.json             the whole manifest (every group carries a copy)
 *                   c1 also: heldout.tar.xz   meta.json + the held-out streams (below)
 *   OUT/manifest.json
 *
 * The training stream: documents BOS … EOS as uint16 little-endian token ids, shuffled at document level
 * (mulberry32, --seed), cut at document boundaries into segments; the segments concatenated in order are
 * the stream (train.py reads train-*.bin in sorted order). Its documents:
 *   - every training document of the corpus (train-*.jsonl, 121,950 documents), tokenized with gavel-mini's
 *     vocabulary exactly as the builder counted them (Model.tokenize, no BOS, special off; the count is
 *     checked against each record's `tokens`), except a held-out share of the package documents (below);
 *   - prepare.ts's (b) render and (c) pair documents of the training skills (--chat: its output with
 *     --kinds bc --lens), --chat-copies times, so that the backbones still answer the router's verdict
 *     prompt (the corpus holds whole skills, which stand in for prepare.ts's (a) documents).
 * --max-tokens T keeps a deterministic subset: the skills and the chat documents whole, and the package
 * documents in the corpus's own order (build.ts's seeded shuffle, so a prefix is a uniform sample of them)
 * until the stream holds T tokens.
 *
 * The held-out streams (heldout.tar.xz): prepare.ts's val.bin, val_chat.bin, val_verdict.bin (identical to
 * gavel-mini's: same skills, same rule, same generator path) and its meta.json (extended here), plus
 *   val_skills.bin  the 313 held-out skills whole (heldout-skills.jsonl), BOS … EOS;
 *   val_corpus.bin  package documents with sha1("val:" + package + ":" + path) mod --val-mod = 0, BOS … EOS,
 *                   taken out of the training stream (perplexity on the new corpus's own kind of text).
 */
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import { copyFileSync, createReadStream, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { Model } from "../../src/model/Model.js";
import { Rng } from "../../src/util/prng.js";
import { opt, ROOT } from "./args.js";

const O = {
  corpus: resolve(opt("corpus", "/work/corpus/out")),
  chat: resolve(opt("chat", join(ROOT, ".cache/corpus-pack/chat"))),
  out: resolve(opt("out", join(ROOT, ".device/corpus"))),
  work: resolve(opt("work", join(ROOT, ".cache/corpus-pack/work"))),
  tokenizer: resolve(opt("tokenizer", join(ROOT, "models/gavel-mini.gguf"))),
  seed: Number(opt("seed", "1234")),
  chatCopies: Number(opt("chat-copies", "3")),
  valMod: Number(opt("val-mod", "500")),
  maxTokens: Number(opt("max-tokens", "0")),
  /** Read at most this many corpus records (a slice, for tests); 0 = all. */
  slice: Number(opt("slice", "0")),
  groupMiB: Number(opt("group-mib", "55")),
  pieceMiB: Number(opt("piece-mib", "15")),
  xz: opt("xz", "-9"),
  /** After writing: read the pieces back, check them, and decode this many documents. */
  verify: Number(opt("verify", "8")),
};
const MiB = 1 << 20;
const t0 = Date.now();
const log = (...a: unknown[]) => console.log(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(5)} s]`, ...a);
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

// ---------- a growable token buffer and the document table ------------------------------------------
let buf = new Uint16Array(64 * MiB);
let used = 0;
function append(t: ArrayLike<number>, bos: number, eos: number): number {
  const n = t.length + 2;
  if (used + n > buf.length) {
    const nb = new Uint16Array(Math.max(buf.length * 2, used + n));
    nb.set(buf.subarray(0, used));
    buf = nb;
  }
  const at = used;
  buf[at] = bos;
  for (let i = 0; i < t.length; i++) {
    const x = t[i];
    if (x < 0 || x > 65535) throw new Error(`token ${x} does not fit uint16`);
    buf[at + 1 + i] = x;
  }
  buf[at + n - 1] = eos;
  used += n;
  return at;
}
/** buf 0: the corpus tokens, 1: prepare.ts's chat stream; h: sha1 of the source text (corpus documents). */
type Doc = { buf: 0 | 1; off: number; len: number; kind: string; h?: string };
const sha1 = (s: string) => createHash("sha1").update(s).digest("hex");

// ---------- inputs ----------------------------------------------------------------------------------
for (const f of ["train.bin", "train.lens", "meta.json", "val.bin", "val_chat.bin", "val_verdict.bin"]) {
  if (!existsSync(join(O.chat, f))) throw new Error(`${O.chat}/${f} missing: run prepare.ts --kinds bc --lens --out ${O.chat} (pack-corpus.sh does)`);
}
const chatMeta = JSON.parse(readFileSync(join(O.chat, "meta.json"), "utf8"));
if (chatMeta.train?.kinds !== "bc") throw new Error(`${O.chat}: prepare.ts was not run with --kinds bc (kinds ${chatMeta.train?.kinds})`);
const chatRaw = readFileSync(join(O.chat, "train.bin"));
const chatBuf = new Uint16Array(chatRaw.buffer, chatRaw.byteOffset, chatRaw.byteLength / 2);
const lensRaw = readFileSync(join(O.chat, "train.lens"));
const chatLens = new Uint32Array(lensRaw.buffer.slice(lensRaw.byteOffset, lensRaw.byteOffset + lensRaw.byteLength));
const shards = readdirSync(O.corpus).filter((f) => /^train-\d+\.jsonl$/.test(f)).sort();
if (!shards.length) throw new Error(`no train-*.jsonl under ${O.corpus}`);
const corpusStats = JSON.parse(readFileSync(join(O.corpus, "stats.json"), "utf8"));

const model = await Model.load(O.tokenizer, { contextSize: 512, sequences: 2, threads: 1 });
const BOS = model.info.bos!;
const EOS = model.info.eos!;
if (BOS !== chatMeta.vocab.bos || EOS !== chatMeta.vocab.eos || model.info.nVocab !== chatMeta.vocab.n) {
  throw new Error(`tokenizer ${O.tokenizer} differs from prepare.ts's (bos/eos/n_vocab)`);
}
const tokenize = (text: string) => model.tokenize(text, { special: false, addBos: false });

// chat documents (b)/(c): their BOS/EOS come from prepare.ts
const chatDocs: Doc[] = [];
{
  let off = 0;
  for (const n of chatLens) {
    if (chatBuf[off] !== BOS || chatBuf[off + n - 1] !== EOS) throw new Error(`chat document at ${off} is not BOS … EOS`);
    chatDocs.push({ buf: 1, off, len: n, kind: "chat" });
    off += n;
  }
  if (off !== chatBuf.length) throw new Error(`train.lens sums to ${off}, train.bin holds ${chatBuf.length}`);
}
const chatTokens = chatBuf.length;
log(`chat documents (prepare.ts --kinds bc): ${chatDocs.length} (${chatMeta.train.docs_by_kind.b} renders, ${chatMeta.train.docs_by_kind.c} pairs), ${chatTokens.toLocaleString()} tokens; ${O.chatCopies} copies`);

// ---------- the corpus --------------------------------------------------------------------------------
const isVal = (rec: { package?: string; path?: string }) =>
  O.valMod > 0 && createHash("sha1").update(`val:${rec.package ?? ""}:${rec.path ?? ""}`).digest().readUInt32BE(0) % O.valMod === 0;
type Count = { docs: number; tokens: number; chars: number; val_docs: number; val_tokens: number; subset_dropped_docs: number; subset_dropped_tokens: number };
const bySource = new Map<string, Count>();
const cnt = (s: string) => {
  let c = bySource.get(s);
  if (!c) bySource.set(s, (c = { docs: 0, tokens: 0, chars: 0, val_docs: 0, val_tokens: 0, subset_dropped_docs: 0, subset_dropped_tokens: 0 }));
  return c;
};
// the subset rule needs the skills' and chat documents' tokens before the package documents are kept
const skillTokensTotal = (corpusStats.sources?.skills?.tokens ?? 0) + (corpusStats.sources?.skills?.documents ?? 0) * 2;
const reserved = skillTokensTotal + chatTokens * O.chatCopies;
if (O.maxTokens > 0 && reserved > O.maxTokens) throw new Error(`--max-tokens ${O.maxTokens}: the skills and chat documents alone hold ${reserved}`);
let packageBudget = O.maxTokens > 0 ? O.maxTokens - reserved : Infinity;

const docs: Doc[] = [];
const valCorpus: number[][] = [];
let mismatches = 0;
let read = 0;
let chars = 0;
const tTok = Date.now();
outer: for (const shard of shards) {
  const rl = createInterface({ input: createReadStream(join(O.corpus, shard)), crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line) continue;
    if (O.slice > 0 && read >= O.slice) {
      rl.close();
      break outer;
    }
    read++;
    const rec = JSON.parse(line) as { text: string; source: string; package?: string; path?: string; tokens: number };
    const c = cnt(rec.source);
    const held = rec.source !== "skills" && isVal(rec);
    if (!held && rec.source !== "skills" && rec.tokens + 2 > packageBudget) {
      c.subset_dropped_docs++;
      c.subset_dropped_tokens += rec.tokens + 2;
      packageBudget = 0; // a prefix: once one does not fit, no later one is kept
      continue;
    }
    const t = tokenize(rec.text);
    if (t.length !== rec.tokens) mismatches++;
    chars += rec.text.length;
    if (held) {
      const v = [BOS];
      for (const x of t) v.push(x);
      v.push(EOS);
      valCorpus.push(v);
      c.val_docs++;
      c.val_tokens += t.length + 2;
      continue;
    }
    const off = append(t, BOS, EOS);
    docs.push({ buf: 0, off, len: t.length + 2, kind: rec.source, h: sha1(rec.text) });
    c.docs++;
    c.tokens += t.length + 2;
    c.chars += rec.text.length;
    if (rec.source !== "skills") packageBudget -= t.length + 2;
    if (read % 10000 === 0) {
      const s = (Date.now() - tTok) / 1000;
      log(`  ${read.toLocaleString()} records, ${(used / 1e6).toFixed(1)} M tokens, ${(chars / s / 1e6).toFixed(2)} M chars/s (${shard})`);
    }
  }
}
log(`corpus: ${read.toLocaleString()} records read, ${docs.length.toLocaleString()} training documents, ${used.toLocaleString()} tokens (BOS/EOS included), ${valCorpus.length} held out; ${mismatches} token counts differ from the builder's`);
if (mismatches) throw new Error(`${mismatches} documents tokenized to another length than build.ts counted: not the same tokenizer?`);

// held-out skills, whole
const valSkills: number[] = [];
let valSkillDocs = 0;
{
  const rl = createInterface({ input: createReadStream(join(O.corpus, "heldout-skills.jsonl")), crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line) continue;
    const t = tokenize((JSON.parse(line) as { text: string }).text);
    valSkills.push(BOS);
    for (const x of t) valSkills.push(x);
    valSkills.push(EOS);
    valSkillDocs++;
  }
}

// ---------- shuffle ---------------------------------------------------------------------------------
for (let r = 0; r < O.chatCopies; r++) for (const d of chatDocs) docs.push(d);
const rng = new Rng(O.seed);
for (let i = docs.length - 1; i > 0; i--) {
  const j = rng.int(i + 1);
  [docs[i], docs[j]] = [docs[j], docs[i]];
}
const total = docs.reduce((s, d) => s + d.len, 0);
const src = (d: Doc) => (d.buf === 0 ? buf : chatBuf).subarray(d.off, d.off + d.len);
log(`stream: ${docs.length.toLocaleString()} documents, ${total.toLocaleString()} tokens (${((total * 2) / MiB).toFixed(1)} MiB raw), seed ${O.seed}`);

// ---------- held-out files ----------------------------------------------------------------------------
rmSync(O.work, { recursive: true, force: true });
mkdirSync(join(O.work, "heldout"), { recursive: true });
const u16 = (xs: ArrayLike<number>) => {
  const u = Uint16Array.from(xs);
  return Buffer.from(u.buffer, u.byteOffset, u.byteLength);
};
for (const f of ["val.bin", "val_chat.bin", "val_verdict.bin"]) copyFileSync(join(O.chat, f), join(O.work, "heldout", f));
writeFileSync(join(O.work, "heldout", "val_skills.bin"), u16(valSkills));
writeFileSync(join(O.work, "heldout", "val_corpus.bin"), u16(valCorpus.flat()));

function xz(input: string, output: string) {
  const r = spawnSync("sh", ["-c", `xz ${O.xz} -T1 -c "$1" > "$2"`, "xz", input, output], { stdio: "inherit" });
  if (r.status !== 0) throw new Error(`xz ${input} failed (${r.status})`);
}

// ---------- segments: cut at document boundaries so that each compresses under its group's budget -----
rmSync(O.out, { recursive: true, force: true });
mkdirSync(O.out, { recursive: true });
const writeSegment = (from: number, to: number, file: string) => {
  let n = 0;
  for (let i = from; i < to; i++) n += docs[i].len;
  const u = new Uint16Array(n);
  let o = 0;
  for (let i = from; i < to; i++) {
    u.set(src(docs[i]), o);
    o += docs[i].len;
  }
  const b = Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  writeFileSync(file, b);
  return { tokens: n, bytes: b.length, sha256: sha256(b) };
};
// group 1 also carries the held-out files
const heldTar = join(O.work, "heldout.tar.xz");
{
  const r = spawnSync("sh", ["-c", `tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$1" -cf - . | xz -9 -T1 -c > "$2"`, "tar", join(O.work, "heldout"), heldTar], { stdio: "inherit" });
  if (r.status !== 0) throw new Error("tar of the held-out files failed");
}
type Piece = { file: string; bytes: number; sha256: string };
type Segment = { index: number; group: string; file: string; docs: number; tokens: number; bytes: number; sha256: string; xz_bytes: number; xz_sha256: string; pieces: Piece[] };
const segments: Segment[] = [];
const margin = 0.3 * MiB; // manifest.json, SHA256SUMS
const budgetOf = (k: number) => O.groupMiB * MiB - margin - (k === 1 ? statSync(heldTar).size : 0);
// The ratio xz reaches on a segment-sized piece (xz -9's 64 MiB dictionary does better on large inputs
// than on small ones), from a probe of up to 128 MiB of the stream's start.
let ratio: number;
{
  let to = 0;
  let n = 0;
  while (to < docs.length && n < 64 * MiB) n += docs[to++].len;
  writeSegment(0, to, join(O.work, "probe.bin"));
  xz(join(O.work, "probe.bin"), join(O.work, "probe.bin.xz"));
  ratio = statSync(join(O.work, "probe.bin.xz")).size / statSync(join(O.work, "probe.bin")).size;
  rmSync(join(O.work, "probe.bin"));
  rmSync(join(O.work, "probe.bin.xz"));
  log(`xz ${O.xz}: ${ratio.toFixed(3)} of the raw bytes (${(ratio * 16).toFixed(2)} bits a token) on the first ${((n * 2) / MiB).toFixed(0)} MiB`);
}
// As few groups as the estimate allows, the rest of the stream split evenly over them; a segment over its
// budget is cut shorter and the rest planned again.
let at = 0;
while (at < docs.length) {
  const k = segments.length + 1;
  const group = `c${k}`;
  const budget = budgetOf(k);
  let left = 0;
  for (let i = at; i < docs.length; i++) left += docs[i].len * 2;
  const groupsLeft = Math.max(1, Math.ceil((left * ratio) / (budgetOf(2) * 0.97)));
  let target = Math.min(left / groupsLeft, (budget / ratio) * 0.97);
  for (let attempt = 0; ; attempt++) {
    let to = at;
    let bytes = 0;
    while (to < docs.length && (to === at || bytes + docs[to].len * 2 <= target)) bytes += docs[to++].len * 2;
    if (groupsLeft === 1 && attempt === 0) while (to < docs.length) bytes += docs[to++].len * 2;
    const name = `train-${String(k).padStart(2, "0")}.bin`;
    const raw = join(O.work, name);
    const w = writeSegment(at, to, raw);
    xz(raw, `${raw}.xz`);
    const z = statSync(`${raw}.xz`).size;
    if (z > budget) {
      if (attempt >= 4) throw new Error(`segment ${k} does not compress under its budget`);
      log(`  segment ${k}: ${(z / MiB).toFixed(2)} MiB of xz over ${(budget / MiB).toFixed(2)}: cut shorter`);
      target = w.bytes * (budget / z) * 0.97;
      continue;
    }
    const zb = readFileSync(`${raw}.xz`);
    mkdirSync(join(O.out, group), { recursive: true });
    const pieces: Piece[] = [];
    const pieceBytes = O.pieceMiB * MiB;
    for (let p = 0, o = 0; o < zb.length; p++, o += pieceBytes) {
      const part = zb.subarray(o, Math.min(zb.length, o + pieceBytes));
      const file = `${name}.xz.part-${String(p).padStart(2, "0")}`;
      writeFileSync(join(O.out, group, file), part);
      pieces.push({ file, bytes: part.length, sha256: sha256(part) });
    }
    ratio = Math.max(ratio, z / w.bytes); // plan the rest with the worse of the two
    segments.push({ index: k, group, file: name, docs: to - at, tokens: w.tokens, bytes: w.bytes, sha256: w.sha256, xz_bytes: z, xz_sha256: sha256(zb), pieces });
    log(`  segment ${k} -> ${group}: ${(to - at).toLocaleString()} documents, ${w.tokens.toLocaleString()} tokens, ${(w.bytes / MiB).toFixed(1)} MiB raw, ${(z / MiB).toFixed(2)} MiB xz, ${pieces.length} pieces`);
    rmSync(`${raw}.xz`);
    rmSync(raw);
    at = to;
    break;
  }
}
copyFileSync(heldTar, join(O.out, "c1", "heldout.tar.xz"));

// ---------- meta.json (for train.py) and the manifest --------------------------------------------------
const heldFiles = Object.fromEntries(
  ["val.bin", "val_chat.bin", "val_verdict.bin", "val_skills.bin", "val_corpus.bin"].map((f) => {
    const b = readFileSync(join(O.work, "heldout", f));
    return [f, { tokens: b.length / 2, bytes: b.length, sha256: sha256(b) }];
  }),
);
const sources = Object.fromEntries([...bySource.entries()].sort());
const corpusInfo = {
  corpus: O.corpus,
  corpus_built: corpusStats.built,
  corpus_total: corpusStats.total,
  records_read: read,
  slice: O.slice || undefined,
  seed: O.seed,
  val_rule: `package documents with sha1("val:" + package + ":" + path) mod ${O.valMod} = 0 -> val_corpus.bin (not trained on)`,
  subset:
    O.maxTokens > 0
      ? `--max-tokens ${O.maxTokens}: skills and chat documents whole; package documents in the corpus's (seeded, shuffled) order until the stream holds ${O.maxTokens} tokens`
      : "none: every training document of the corpus",
  chat: { copies: O.chatCopies, docs: chatDocs.length, tokens: chatTokens, by_kind: chatMeta.train.docs_by_kind, options: chatMeta.options },
  sources,
  stream: { docs: docs.length, tokens: total, bytes: total * 2, chat_tokens: chatTokens * O.chatCopies, corpus_tokens: used },
  heldout: { ...heldFiles, val_skills_docs: valSkillDocs, val_corpus_docs: valCorpus.length },
};
const meta = { ...chatMeta, train: { tokens: total, docs: docs.length, kinds: "corpus + chat (b, c)" }, corpus: corpusInfo, made: new Date().toISOString() };
writeFileSync(join(O.work, "heldout", "meta.json"), JSON.stringify(meta));
// the tarball carries meta.json too: rebuild it now that meta is final (its size barely moves)
{
  const r = spawnSync("sh", ["-c", `tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$1" -cf - . | xz -9 -T1 -c > "$2"`, "tar", join(O.work, "heldout"), join(O.out, "c1", "heldout.tar.xz")], { stdio: "inherit" });
  if (r.status !== 0) throw new Error("tar of the held-out files failed");
}
const heldXz = readFileSync(join(O.out, "c1", "heldout.tar.xz"));
const xzv = spawnSync("xz", ["--version"], { encoding: "utf8" }).stdout.split("\n")[0];
const manifest = {
  made: meta.made,
  format: "uint16 little-endian token ids (gavel-mini's 32K SPM vocabulary), documents BOS … EOS; the stream = train-01.bin … concatenated in order",
  tokenizer: { file: O.tokenizer.replace(`${ROOT}/`, ""), bos: BOS, eos: EOS, n_vocab: model.info.nVocab },
  xz: `${xzv} ${O.xz} -T1`,
  group_mib: O.groupMiB,
  piece_mib: O.pieceMiB,
  stream: corpusInfo.stream,
  segments,
  heldout: { group: "c1", file: "heldout.tar.xz", bytes: heldXz.length, sha256: sha256(heldXz), files: heldFiles },
  groups: [...new Set(segments.map((s) => s.group))].map((g) => {
    const files = readdirSync(join(O.out, g));
    const bytes = files.reduce((s, f) => s + statSync(join(O.out, g, f)).size, 0);
    return { group: g, payload_files: files.length, payload_bytes: bytes }; // manifest.json and SHA256SUMS apart
  }),
  corpus: corpusInfo,
};
const mtext = JSON.stringify(manifest, null, 1);
writeFileSync(join(O.out, "manifest.json"), mtext);
for (const g of manifest.groups) {
  writeFileSync(join(O.out, g.group, "manifest.json"), mtext);
  const lines = readdirSync(join(O.out, g.group))
    .filter((f) => f !== "SHA256SUMS" && f !== "manifest.json")
    .sort()
    .map((f) => `${sha256(readFileSync(join(O.out, g.group, f)))}  ${f}`);
  writeFileSync(join(O.out, g.group, "SHA256SUMS"), `${lines.join("\n")}\n`);
  const all = readdirSync(join(O.out, g.group)).reduce((s, f) => s + statSync(join(O.out, g.group, f)).size, 0);
  log(`  ${g.group}: ${(all / MiB).toFixed(2)} MiB in ${readdirSync(join(O.out, g.group)).length} files`);
}
log(`wrote ${O.out}: ${segments.length} groups, ${(segments.reduce((s, x) => s + x.xz_bytes, 0) / MiB).toFixed(1)} MiB of xz for ${total.toLocaleString()} tokens`);

// ---------- verify: the pieces back into the stream, and documents back into text ------------------------
if (O.verify > 0) {
  let o = 0;
  const whole = createHash("sha256");
  for (const s of segments) {
    const parts = s.pieces.map((p) => readFileSync(join(O.out, s.group, p.file)));
    const zb = Buffer.concat(parts);
    if (sha256(zb) !== s.xz_sha256) throw new Error(`segment ${s.index}: pieces do not reassemble`);
    const r = spawnSync("xz", ["-dc"], { input: zb, maxBuffer: 1 << 30 });
    if (r.status !== 0) throw new Error(`segment ${s.index}: xz -d failed`);
    if (sha256(r.stdout) !== s.sha256) throw new Error(`segment ${s.index}: decompressed sha256 differs`);
    whole.update(r.stdout);
    o += r.stdout.length / 2;
  }
  if (o !== total) throw new Error(`reassembled ${o} tokens, wrote ${total}`);
  // decode sampled documents of the stream: a corpus document must give back its source text (sha1), a
  // chat document must re-tokenize to the same ids
  const vr = new Rng(O.seed + 1);
  let same = 0;
  const shown: string[] = [];
  for (let i = 0; i < O.verify; i++) {
    const d = docs[vr.int(docs.length)];
    const t = src(d);
    if (t[0] !== BOS || t[t.length - 1] !== EOS) throw new Error("a document is not BOS … EOS");
    const text = model.detokenize(Int32Array.from(t.subarray(1, t.length - 1)), { special: false });
    let ok: boolean;
    if (d.h) ok = sha1(text) === d.h;
    else {
      const again = tokenize(text);
      ok = again.length === t.length - 2 && again.every((x, j) => x === t[j + 1]);
    }
    if (ok) same++;
    const how = d.h ? (ok ? "= source text" : "DIFFERS from its source text") : ok ? "re-tokenizes to the same ids" : "DIFFERS on re-tokenizing";
    shown.push(`${d.kind.padEnd(7)} ${String(t.length).padStart(7)} tokens ${how}: ${JSON.stringify(text.slice(0, 90))}`);
  }
  log(`verify: ${segments.length} segments reassembled and decompressed to their sha256 (${total.toLocaleString()} tokens); ${same}/${O.verify} sampled documents decode back:`);
  for (const s of shown) console.log(`    ${s}`);
}
await model.dispose();
