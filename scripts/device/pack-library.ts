// Packs a skill library for the GPU machine, whose calls carry at most 64 MiB: each skill's body is
// cut just past the characters its install render reads under the token budget (the encoder's own
// cut), so the device installs exactly the keys it would from the full library, from a file a
// fraction of the size. BM25 (which reads whole bodies) is evaluated here, on the full library.
//
// Usage: npx vite-node scripts/device/pack-library.ts -- <model.gguf> <budget> <out.jsonl> <library> [<library> …]
// Then: xz -T2 -9 <out.jsonl>. Every cut skill is re-encoded from its packed text and compared token
// for token with the full text's encoding; one that differs is packed whole.
import { createWriteStream } from "node:fs";
import { once } from "node:events";
import { Model, loadSkills } from "../../src/index.js";
import { RenderEncoder } from "../../src/render/encode.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const [modelPath, budgetArg, out, ...libraries] = args;
const budget = Number(budgetArg);
if (!modelPath || !out || libraries.length === 0 || !Number.isInteger(budget)) {
  console.error("usage: pack-library.ts <model.gguf> <budget> <out.jsonl> <library> [<library> …]");
  process.exit(2);
}
const model = await Model.load(modelPath, { contextSize: 2048, threads: 1 });
const enc = new RenderEncoder(model, budget);
const file = createWriteStream(out);
let n = 0, cut = 0, whole = 0, charsIn = 0, charsOut = 0;
const t0 = performance.now();
for (const lib of libraries) {
  const { skills, failed } = await loadSkills(lib);
  if (failed.length) console.log(`${lib}: ${failed.length} entries failed to load (left out, as install leaves them out)`);
  for (const s of skills) {
    const e = enc.encodeSkill(s);
    // A cut body keeps 64 characters past the cut: loading trims a body's trailing whitespace, so a
    // body ending at the cut could lose a space the render had; with the margin the packed render
    // still overflows. The encoder's cut search is not a function of the prefix alone (byte-fallback
    // tokens, e.g. Chinese text, can fit a longer cut when the body is shorter), so every cut skill is
    // encoded again from its packed text, and one whose tokens differ keeps its whole body.
    let body = s.body;
    if (e.truncated) {
      body = s.body.slice(0, e.bodyChars + 64);
      const { skills: packed } = await loadSkills([{ id: s.id, name: s.name, description: s.description, body }]);
      const b = packed.length === 1 ? enc.encodeSkill(packed[0]).tokens : [];
      if (b.length !== e.tokens.length || b.some((t, i) => t !== e.tokens[i])) {
        body = s.body;
        whole++;
      }
    }
    const rec = { id: s.id, name: s.name, description: s.description, body };
    const line = JSON.stringify(rec);
    if (!file.write(line + "\n")) await once(file, "drain");
    n++;
    if (e.truncated) cut++;
    charsIn += s.body.length;
    charsOut += body.length;
    if (n % 2000 === 0) console.log(`${n} skills, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
}
file.end();
await once(file, "finish");
console.log(`${n} skills packed (${cut} bodies cut, ${whole} of them kept whole: their cut text encodes differently), body characters ${charsIn} → ${charsOut}; ${((performance.now() - t0) / 1000).toFixed(0)} s`);
await model.dispose();
