/**
 * gavel-mini training data: token streams (uint16, little-endian) from ../shared/data/skills-mit.jsonl.gz,
 * tokenized with the 32K SentencePiece vocabulary of llama.cpp's models/ggml-vocab-llama-spm.gguf (through
 * a tiny random-weight GGUF that carries it, written by selftest.py) and rendered with the repo's own
 * appendix G renders (src/render, src/router/encode.ts RenderEncoder) through the chat template that
 * export.py puts in the model, so training sees exactly the tokens the router will feed.
 *
 * Three kinds of documents, each BOS … EOS:
 *   (a) plain     "name: {name}\ndescription: {description}\n\n{body}", cut to --doc-tokens tokens
 *                 (--doc-tokens-cjk for skills written mostly in CJK scripts, about half the library);
 *   (b) render    r(s) + the verdict continuation with a request made from s's own description + the
 *                 assistant's answer "Yes", cut to --render-tokens (body, then description); not for CJK skills;
 *   (c) pair      r(s') + verdict continuation with s's request + "Yes" when s' = s or "No" for a random
 *                 other skill s', half each, cut to --pair-tokens.
 * SWE-Skills-Bench: every skill whose text contains a task's text (any 12-word window of a task) is dropped.
 * Held out: skills whose sha1(id) mod 100 = 0 (~1%): their (a) documents form val.bin (perplexity),
 * their (b)/(c) forms val_chat.bin, and a balanced yes/no set val_verdict.{bin,json} (prompts + labels).
 *
 *   npx esbuild scripts/backbone/prepare.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=.cache/prepare.mjs && node .cache/prepare.mjs [--limit N] [--out .device/backbone/pack/data]
 *
 * --kinds bc keeps only the (b)/(c) documents in train.bin (the held-out files and the generator's path are
 * unchanged: the same val*.bin for any --kinds); --lens also writes train.lens (uint32 LE document lengths,
 * in stream order). pack-corpus.ts uses both to mix the chat documents into the larger corpus.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Model } from "../../src/model/Model.js";
import { loadSkills } from "../../src/skills/index.js";
import type { Skill } from "../../src/skills/types.js";
import { RenderEncoder } from "../../src/render/encode.js";
import { mulberry32 as prng } from "../../src/util/prng.js";
import { args, opt, ROOT } from "./args.js";

const O = {
  skills: opt("skills", resolve(ROOT, "../shared/data/skills-mit.jsonl.gz")),
  tasks: opt("tasks", resolve(ROOT, "../shared/data/swe-skills-bench/tasks.jsonl")),
  tokenizer: opt("tokenizer", join(ROOT, ".device/backbone/test/tiny-q8_0.gguf")),
  out: opt("out", join(ROOT, ".device/backbone/pack/data")),
  limit: Number(opt("limit", "Infinity")),
  seed: Number(opt("seed", "1234")),
  docTokens: Number(opt("doc-tokens", "704")),
  docTokensCjk: Number(opt("doc-tokens-cjk", "192")),
  docChars: Number(opt("doc-chars", "4000")),
  renderTokens: Number(opt("render-tokens", "320")),
  pairTokens: Number(opt("pair-tokens", "160")),
  descChars: Number(opt("desc-chars", "500")),
  taskTokens: Number(opt("task-tokens", "96")),
  cjk: Number(opt("cjk", "0.1")),
  shingle: Number(opt("shingle", "12")),
  /** Which kinds go into train.bin ("abc" = all; pack-corpus.ts asks "bc": its corpus has whole skills). */
  kinds: opt("kinds", "abc"),
  /** Also write train.lens: each train.bin document's length (uint32 LE), in stream order. */
  lens: args.includes("--lens"),
};
if (!/^[abc]+$/.test(O.kinds)) throw new Error(`--kinds ${O.kinds}: letters of a, b, c`);

const rand = prng(O.seed);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];

// ---------- SWE-Skills-Bench exclusion -------------------------------------------------------------
const words = (s: string) => s.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
const tasks = readFileSync(O.tasks, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as { id: string; text: string });
const shingles = new Map<string, number>();
for (const [ti, t] of tasks.entries()) {
  const w = words(t.text);
  for (let i = 0; i + O.shingle <= w.length; i++) shingles.set(w.slice(i, i + O.shingle).join(" "), ti);
}
/** The bench task whose text this document contains (a shared 12-word window), or -1. */
function containsTask(text: string): number {
  const w = words(text);
  for (let i = 0; i + O.shingle <= w.length; i++) {
    const hit = shingles.get(w.slice(i, i + O.shingle).join(" "));
    if (hit !== undefined) return hit;
  }
  return -1;
}

// ---------- requests made from a description -------------------------------------------------------
const REQUESTS = [
  (d: string) => `I need to ${d}`,
  (d: string) => `Help me: ${d}`,
  (d: string) => `Can you help with this? ${d}`,
  (d: string) => `${d}`,
  (d: string) => `Task: ${d}`,
  (d: string) => `Please do the following. ${d}`,
  (d: string) => `I'm working on something and need this: ${d}`,
];
function request(s: Skill, variant: number): string {
  let d = s.description.replace(/\s+/g, " ").trim();
  if (d.length > 600) d = d.slice(0, 600).replace(/\s+\S*$/, "");
  d = d.replace(/[.\s]+$/, "");
  const lower = d.length > 1 && /^[A-Z][a-z]/.test(d) ? d[0].toLowerCase() + d.slice(1) : d;
  const f = REQUESTS[variant % REQUESTS.length];
  return variant % REQUESTS.length === 3 ? `${d}.` : `${f(lower)}.`;
}

function cutChars(s: string, n: number): string {
  if (s.length <= n) return s;
  const c = s.slice(0, n);
  const ws = c.search(/\s\S*$/);
  return ws > n * 0.7 ? c.slice(0, ws) : c;
}

// ---------- main ------------------------------------------------------------------------------------
const t0 = Date.now();
const { skills: all, failed } = await loadSkills(O.skills, { limit: O.limit });
console.log(`skills: ${all.length} loaded, ${failed.length} failed to load (${((Date.now() - t0) / 1000).toFixed(1)} s)`);

const excluded: { skill: string; task: string }[] = [];
const kept: Skill[] = [];
for (const s of all) {
  const hit = containsTask(`${s.name}\n${s.description}\n${s.body}`);
  if (hit >= 0) excluded.push({ skill: s.id, task: tasks[hit].id });
  else kept.push(s);
}
console.log(`excluded ${excluded.length} skills containing SWE-Skills-Bench task text (${tasks.length} tasks, ${shingles.size} ${O.shingle}-word windows)`);

const heldOut = (s: Skill) => createHash("sha1").update(s.id).digest().readUInt32BE(0) % 100 === 0;
const train = kept.filter((s) => !heldOut(s));
const val = kept.filter(heldOut);
console.log(`train skills ${train.length}, held-out skills ${val.length}`);

const model = await Model.load(O.tokenizer, { contextSize: 4096, sequences: 2, threads: 1 });
const BOS = model.info.bos!;
const EOS = model.info.eos!;
const enc = new RenderEncoder(model, 1 << 20);
const plain = (t: string) => model.tokenize(t, { special: false, addBos: false });
const YES = plain("Yes");
const NO = plain("No");
if (YES.length !== 1 || NO.length !== 1 || !enc.answers.yes.includes(YES[0]) || !enc.answers.no.includes(NO[0])) {
  throw new Error(`answer tokens: Yes ${YES} No ${NO} not among the router's read ids`);
}

type Doc = Int32Array;
/** Skills mostly in CJK scripts (about half the library): the SPM vocabulary spends 1-3 tokens a character
 * on them, so they get a short plain document and a yes/no pair, and no long render. */
function isCjk(s: Skill): boolean {
  const t = `${s.description} ${s.body.slice(0, 2000)}`;
  let n = 0;
  for (const ch of t) if (ch.codePointAt(0)! > 0x2e80) n++;
  return n / Math.max(1, t.length) > O.cjk;
}
function docPlain(s: Skill): Doc {
  const body = cutChars(s.body, O.docChars);
  const t = plain(`name: ${s.name}\ndescription: ${s.description}${body ? `\n\n${body}` : ""}`);
  const n = Math.min(t.length, (isCjk(s) ? O.docTokensCjk : O.docTokens) - 2);
  const d = new Int32Array(n + 2);
  d[0] = BOS;
  d.set(t.subarray(0, n), 1);
  d[n + 1] = EOS;
  return d;
}
/**
 * r(skill) + verdict continuation of `req`; the router's exact tokens (BOS included by encodeSkill), at
 * most `cap` tokens: the description is cut to --desc-chars, the body by characters until the whole fits.
 */
function verdictPrompt(skill: Skill, cap: number, req: string): Doc {
  const tail = enc.encodeVerdictTail(req, O.taskTokens);
  const description = cutChars(skill.description, O.descChars);
  let bodyChars = cap * 4;
  let r = enc.encodeSkill({ name: skill.name, description, body: cutChars(skill.body, bodyChars) });
  let descChars = description.length;
  while (r.tokens.length + tail.tokens.length > cap && (bodyChars > 0 || descChars > 16)) {
    const over = r.tokens.length + tail.tokens.length - cap;
    if (bodyChars > 0) bodyChars = Math.max(0, Math.min(bodyChars - 1, Math.floor(bodyChars * 0.9) - over * 2));
    else descChars = Math.max(16, Math.floor(descChars * 0.7));
    r = enc.encodeSkill({ name: skill.name, description: cutChars(description, descChars), body: cutChars(skill.body, bodyChars) });
  }
  const d = new Int32Array(r.tokens.length + tail.tokens.length);
  d.set(r.tokens, 0);
  d.set(tail.tokens, r.tokens.length);
  return d;
}
function withAnswer(p: Doc, yes: boolean): Doc {
  const d = new Int32Array(p.length + 2);
  d.set(p, 0);
  d[p.length] = yes ? YES[0] : NO[0];
  d[p.length + 1] = EOS;
  return d;
}
function otherSkill(pool: Skill[], s: Skill): Skill {
  for (;;) {
    const o = pick(pool);
    if (o.id !== s.id && o.name !== s.name) return o;
  }
}

const counts = { a: 0, a_cjk: 0, b: 0, c_yes: 0, c_no: 0 };
const tokensOf = { a: 0, b: 0, c: 0 };
const bDocs = new Set<Doc>(); // the (b) renders, for --kinds
function build(pool: Skill[], label: string): { docs: Doc[]; chat: Doc[] } {
  const docs: Doc[] = [];
  const chat: Doc[] = [];
  const t1 = Date.now();
  for (const [i, s] of pool.entries()) {
    const a = docPlain(s);
    docs.push(a);
    const v = Math.floor(rand() * 1000);
    const b = isCjk(s) ? new Int32Array(0) : withAnswer(verdictPrompt(s, O.renderTokens, request(s, v)), true);
    if (b.length) {
      chat.push(b);
      bDocs.add(b);
    }
    const yes = rand() < 0.5;
    const sp = yes ? s : otherSkill(pool, s);
    const c = withAnswer(verdictPrompt(sp, O.pairTokens, request(s, v + 1)), yes);
    chat.push(c);
    if (label === "train") {
      counts.a++;
      if (isCjk(s)) counts.a_cjk++;
      if (b.length) counts.b++;
      if (yes) counts.c_yes++;
      else counts.c_no++;
      tokensOf.a += a.length;
      tokensOf.b += b.length;
      tokensOf.c += c.length;
    }
    if ((i + 1) % 5000 === 0) console.log(`  ${label}: ${i + 1}/${pool.length} (${((Date.now() - t1) / 1000).toFixed(0)} s)`);
  }
  return { docs, chat };
}

function shuffle<T>(xs: T[]): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}
function writeStream(file: string, docs: Doc[]): number {
  let n = 0;
  for (const d of docs) n += d.length;
  const u = new Uint16Array(n);
  let o = 0;
  for (const d of docs) {
    for (const x of d) {
      if (x < 0 || x > 65535) throw new Error(`token ${x} does not fit uint16`);
    }
    u.set(d, o);
    o += d.length;
  }
  writeFileSync(file, Buffer.from(u.buffer, u.byteOffset, u.byteLength));
  return n;
}

mkdirSync(O.out, { recursive: true });
const tr = build(train, "train");
const va = build(val, "val");
// The shuffle runs over every kind whatever --kinds says, so the generator is left where it always is and
// the held-out verdict set below comes out the same for any --kinds.
const plainDocs = new Set<Doc>(tr.docs);
const kindOf = (d: Doc): string => (plainDocs.has(d) ? "a" : bDocs.has(d) ? "b" : "c");
const trainDocs = shuffle([...tr.docs, ...tr.chat]).filter((d) => O.kinds.includes(kindOf(d)));
const trainByKind = { a: 0, b: 0, c: 0 } as Record<string, number>;
for (const d of trainDocs) trainByKind[kindOf(d)] += 1;
const nTrain = writeStream(join(O.out, "train.bin"), trainDocs);
if (O.lens) writeFileSync(join(O.out, "train.lens"), Buffer.from(Uint32Array.from(trainDocs, (d) => d.length).buffer));
const nVal = writeStream(join(O.out, "val.bin"), va.docs);
const nValChat = writeStream(join(O.out, "val_chat.bin"), va.chat);

// Balanced held-out verdict set: for each held-out skill, its request with itself (yes) and with another
// held-out skill (no); prompts end after the generation prompt, the answer is read at the last position.
const vv: Doc[] = [];
const index: [number, number, number][] = [];
let off = 0;
for (const s of val) {
  const req = request(s, Math.floor(rand() * 1000));
  for (const yes of [true, false]) {
    const p = verdictPrompt(yes ? s : otherSkill(val, s), O.pairTokens, req);
    vv.push(p);
    index.push([off, p.length, yes ? 1 : 0]);
    off += p.length;
  }
}
writeStream(join(O.out, "val_verdict.bin"), vv);

const meta = {
  made: new Date().toISOString(),
  options: { ...O, skills: "../shared/data/skills-mit.jsonl.gz", tasks: "../shared/data/swe-skills-bench/tasks.jsonl", tokenizer: `ggml-vocab-llama-spm (via ${O.tokenizer.split("/").pop()})`, out: undefined },
  vocab: { n: model.info.nVocab, bos: BOS, eos: EOS, yes: YES[0], no: NO[0], yes_ids: Array.from(enc.answers.yes), no_ids: Array.from(enc.answers.no) },
  chat_template: model.info.chatTemplate,
  skills: { loaded: all.length, failed: failed.length, excluded_bench: excluded.length, train: train.length, held_out: val.length },
  excluded,
  train: { tokens: nTrain, docs: trainDocs.length, counts, tokens_by_kind: tokensOf, kinds: O.kinds, docs_by_kind: trainByKind },
  val: { tokens: nVal, docs: va.docs.length, chat_tokens: nValChat, chat_docs: va.chat.length },
  val_verdict: { examples: index.length, index },
  seconds: (Date.now() - t0) / 1000,
};
writeFileSync(join(O.out, "meta.json"), JSON.stringify(meta));
console.log(JSON.stringify({ ...meta, excluded: excluded.slice(0, 10), val_verdict: { examples: index.length } }, null, 1));
await model.dispose();
