// Which SWE-Skills-Bench tasks a paste-weighted query reads differently (src/lexical/paste.ts: a paste
// that outweighs the request), and, on validation only, the lexical expert's rank of the first
// accepted skill over the benchmark library for those tasks. Run it with GAVEL_PASTE_WEIGHT=off and
// without, and compare the ranks (decision in bench/results/2026-12-05-cpu-paste/):
//   npx vite-node scripts/lexical/paste-check.ts [--test]
import { Bm25Index, bm25Tokens } from "../../src/lexical/bm25.js";
import { pasteWeight, splitPaste } from "../../src/lexical/paste.js";
import { config } from "../../src/config.js";
import { benchSplits } from "./bench-splits.js";

const { routable, splits } = await benchSplits();
const weightOf = (text: string): number => {
  const t = text.replace(/\r\n?/g, "\n");
  const split = splitPaste(t);
  if (split.pasteLines === 0) return 1;
  let request = 0, paste = 0;
  t.split("\n").forEach((l, i) => (split.paste[i] ? (paste += bm25Tokens(l).length) : (request += bm25Tokens(l).length)));
  return pasteWeight(request, paste);
};
// the glance counts the model's tokens, not words: a line's tokens, tokenized alone
const { Model } = await import("../../src/model/Model.js");
const { defaultModelPaths } = await import("../../src/defaults.js");
const model = await Model.load(defaultModelPaths().model, { contextSize: 512 });
const glanceWeightOf = (text: string): number => {
  const t = text.replace(/\r\n?/g, "\n").trim();
  const split = splitPaste(t);
  if (split.pasteLines === 0) return 1;
  let request = 0, paste = 0;
  t.split("\n").forEach((l, i) => { const n = l.trim() === "" ? 0 : model.tokenize(l, { special: false, addBos: false }).length; split.paste[i] ? (paste += n) : (request += n); });
  return pasteWeight(request, paste);
};
console.log(`glance rows weighted (model tokens): validation ${splits.validation.filter((t) => glanceWeightOf(t.text) < 1).length}, test ${splits.test.filter((t) => glanceWeightOf(t.text) < 1).length}`);
const trig = { validation: splits.validation.filter((t) => weightOf(t.text) < 1), test: splits.test.filter((t) => weightOf(t.text) < 1) };
console.log(`GAVEL_PASTE_WEIGHT=${config().pasteWeight}; triggered: validation ${trig.validation.length} of ${splits.validation.length}, test ${trig.test.length} of ${splits.test.length}`);
const index = new Bm25Index(routable.map((s) => ({ id: s.id, name: s.name, description: s.description, body: s.body })), { k1: 3, b: 1 });
let sum = 0;
for (const t of trig.validation) {
  const s = index.scores(t.text);
  let best = -1;
  routable.forEach((r, i) => { if (t.accepted.has(r.id) && (best < 0 || s[i] > s[best])) best = i; });
  const rank = 1 + s.reduce((n, x) => n + (x > s[best] ? 1 : 0), 0);
  sum += rank;
  console.log(`validation task (weight ${weightOf(t.text).toFixed(3)}): gold rank ${rank}`);
}
console.log(`summed rank over the triggered validation tasks: ${sum}`);
// --test: the same ranks for the test tasks either reading weighs (read once, to report, after the choice)
if (process.argv.includes("--test")) {
  for (const t of splits.test.filter((t) => weightOf(t.text) < 1 || glanceWeightOf(t.text) < 1)) {
    const s = index.scores(t.text);
    let best = -1;
    routable.forEach((r, i) => { if (t.accepted.has(r.id) && (best < 0 || s[i] > s[best])) best = i; });
    console.log(`test task ${[...t.accepted][0]} (word weight ${weightOf(t.text).toFixed(3)}, token weight ${glanceWeightOf(t.text).toFixed(3)}): gold rank by the lexical expert ${1 + s.reduce((n, x) => n + (x > s[best] ? 1 : 0), 0)}`);
  }
}
