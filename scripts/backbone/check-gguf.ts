/**
 * Checks gavel-mini GGUFs with the repo's own Model (llama.cpp through the addon):
 *
 *   check-gguf.ts selftest [dir]   the tiny random models of selftest.py: llama.cpp's logits equal the numpy
 *                                  float64 reference (and differ from the wrong, rotate-half RoPE); the
 *                                  copied tokenizer reproduces llama.cpp's own test vectors
 *                                  (models/ggml-vocab-llama-spm.gguf.inp/.out); the chat template renders.
 *   check-gguf.ts model FILE       a trained model: loads, info, tokenization, finite logits, the verdict's
 *                                  yes/no read ids, and a greedy answer to one verdict prompt.
 *
 * Bundle and run like the benches:
 *   npx esbuild scripts/backbone/check-gguf.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=.cache/check-gguf.mjs && node .cache/check-gguf.mjs selftest
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Model } from "../../src/model/Model.js";
import { ChatTemplate } from "../../src/render/template.js";
import { renderVerdict } from "../../src/render/gavel.js";
import { RenderEncoder } from "../../src/render/encode.js";

/** Run from the repository root. */
const ROOT = resolve(process.env.GAVEL_ROOT ?? process.cwd());
let failures = 0;
function check(ok: boolean, what: string): void {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures++;
}

function readF32(path: string): Float32Array {
  const b = readFileSync(path);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
function maxAbs(a: Float32Array): number {
  let m = 0;
  for (const x of a) m = Math.max(m, Math.abs(x));
  return m;
}

/** llama.cpp's tokenizer test vectors for the SPM vocabulary (tests/test-tokenizer-0 format). */
function tokenizerVectors(): { text: string; ids: number[] }[] {
  const base = join(ROOT, "build/llama.cpp/models/ggml-vocab-llama-spm.gguf");
  const inp = readFileSync(base + ".inp", "utf8").split("\n__ggml_vocab_test__\n");
  const out = readFileSync(base + ".out", "utf8").split("\n");
  const n = Math.min(inp.length, out.length);
  const v: { text: string; ids: number[] }[] = [];
  for (let i = 0; i < n; i++) {
    v.push({ text: inp[i], ids: out[i].trim() === "" ? [] : out[i].trim().split(/\s+/).map(Number) });
  }
  return v;
}

async function checkTokenizer(model: Model): Promise<void> {
  const vec = tokenizerVectors();
  let bad = 0;
  for (const { text, ids } of vec) {
    const got = Array.from(model.tokenize(text, { special: false, addBos: false }));
    if (got.join(" ") !== ids.join(" ")) {
      if (bad < 3) console.log("   mismatch", JSON.stringify(text).slice(0, 60), got.slice(0, 12), ids.slice(0, 12));
      bad++;
    }
  }
  check(bad === 0, `tokenizer: ${vec.length - bad}/${vec.length} of llama.cpp's SPM test vectors reproduced`);
  const info = model.info;
  check(info.nVocab === 32000 && info.bos === 1 && info.eos === 2 && info.addBos === true, `vocab 32000, bos 1, eos 2, addBos (${JSON.stringify({ n: info.nVocab, bos: info.bos, eos: info.eos, addBos: info.addBos })})`);
  const t = new ChatTemplate({ template: info.chatTemplate ?? null });
  check(!t.isFallback, "the GGUF carries its chat template");
  const r = t.render([{ role: "user", content: "Hi" }], { addGenerationPrompt: true });
  check(r === "<|user|>\nHi\n<|assistant|>\n", `chat template renders ${JSON.stringify(r)}`);
  const enc = new RenderEncoder(model, 4096);
  check(enc.answers.yes.length > 0 && enc.answers.no.length > 0, `verdict read ids: yes ${Array.from(enc.answers.yes)} no ${Array.from(enc.answers.no)}`);
  const v = renderVerdict(t, { name: "pdf", description: "Read PDFs.", body: "Use pdftotext." }, "Extract the tables");
  console.log("   verdict render:", JSON.stringify(v.text));
}

async function selftest(dir: string): Promise<void> {
  const st = JSON.parse(readFileSync(join(dir, "selftest.json"), "utf8"));
  const tokens = Int32Array.from(st.tokens as number[]);
  const wrong = readF32(st.files.neox_wrong.logits);
  const kinds = Object.keys(st.files).filter((k) => st.files[k].gguf);
  for (const q of kinds) {
    const f = st.files[q];
    const model = await Model.load(f.gguf, { contextSize: 256, sequences: 2, threads: 1 });
    try {
      check(model.info.architecture === "llama" && model.info.nLayer === st.hparams.n_layer && model.info.nEmbd === st.hparams.n_embd, `${q}: loads as llama, ${model.info.nLayer} layers, n_embd ${model.info.nEmbd}`);
      const got = await model.logits(tokens);
      const ref = readF32(f.logits);
      check(got.length === ref.length, `${q}: logits shape ${got.length / 32000} x 32000, file ${(f.bytes / 1e6).toFixed(2)} MB, ${f.n_params} parameters`);
      const scale = maxAbs(ref);
      const d = maxAbsDiff(got, ref);
      const dw = maxAbsDiff(got, wrong);
      const tol: number = st.tolerance?.[q] ?? 2e-3; // the Q8_0 reference quantises activations as ggml does
      check(d / scale < tol, `${q}: llama.cpp vs numpy reference: max |diff| ${d.toExponential(2)} (max |logit| ${scale.toFixed(2)}, rel ${(d / scale).toExponential(2)} < ${tol})`);
      check(dw / scale > 0.1, `${q}: the wrong (rotate-half) RoPE differs: max |diff| ${dw.toFixed(3)} (rel ${(dw / scale).toFixed(3)})`);
      if (q === kinds[0]) await checkTokenizer(model);
    } finally {
      await model.dispose();
    }
  }
}

async function trained(file: string): Promise<void> {
  const model = await Model.load(file, { contextSize: 2048, sequences: 2, threads: 2 });
  try {
    console.log(JSON.stringify(model.info));
    await checkTokenizer(model);
    const enc = new RenderEncoder(model, 1024);
    const skill = enc.encodeSkill({ name: "pdf-extract", description: "Extract text and tables from PDF files with pdftotext and camelot.", body: "Use pdftotext -layout for text. Use camelot for tables." });
    const tail = enc.encodeVerdictTail("Pull the revenue table out of report.pdf", 256);
    const toks = new Int32Array(skill.tokens.length + tail.tokens.length);
    toks.set(skill.tokens, 0);
    toks.set(tail.tokens, skill.tokens.length);
    const logits = await model.logits(toks);
    let finite = true;
    for (const x of logits) if (!Number.isFinite(x)) finite = false;
    check(finite, `finite logits over ${toks.length} tokens`);
    const last = logits.subarray(logits.length - model.info.nVocab);
    let best = 0;
    for (let i = 1; i < last.length; i++) if (last[i] > last[best]) best = i;
    const lse = (ids: Int32Array) => Math.log(Array.from(ids).reduce((s, i) => s + Math.exp(last[i] - last[best]), 0)) + last[best];
    console.log(`   verdict greedy answer: ${JSON.stringify(model.detokenize([best]))}, V = ${(lse(enc.answers.yes) - lse(enc.answers.no)).toFixed(3)}`);
  } finally {
    await model.dispose();
  }
}

const [mode, arg] = process.argv.slice(2);
if (mode === "selftest") await selftest(arg ?? join(ROOT, ".device/backbone/test"));
else if (mode === "model" && arg) await trained(arg);
else {
  console.error("usage: check-gguf.mjs selftest [dir] | model FILE");
  process.exit(2);
}
console.log(failures === 0 ? "all checks passed" : `${failures} check(s) FAILED`);
process.exit(failures === 0 ? 0 : 1);
