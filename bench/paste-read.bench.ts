/**
 * What the lexical expert's reading of a long written task costs on the JavaScript thread, per KB,
 * by the shape of its lines: the paste split (src/lexical/paste.ts: each line through the machine-line
 * rules), then BM25's query words at their weights (src/lexical/postings.ts). Short lines cost the
 * most per KB (the rules run once a line); prose and long lines the least. Each shape is about `kb`
 * KB under a one-line request; each is read `reps` times and the fastest is kept.
 *
 *   npm run bench -- paste-read [kb = 1024] [reps = 3]
 */
import { cpus, loadavg } from "node:os";
import { taskPaste } from "../src/lexical/paste.js";
import { bm25Query, queryTerms, Vocabulary } from "../src/lexical/postings.js";

const kb = Number(process.argv[2] ?? 1024);
const reps = Number(process.argv[3] ?? 3);
const size = kb * 1024;
const fill = (unit: string) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
const head = "Why does this script fail on the second run? Here is the output:\n";
const shapes: Record<string, string> = {
  "numbers (42)": fill("42\n"),
  "two letters (ok)": fill("ok\n"),
  "csv (1,2,3)": fill("1,2,3\n"),
  "yaml (  key: value)": fill("  key: value\n"),
  "js stack frames": fill("    at foo (x.js:1:2)\n"),
  "service log lines": fill("2024-01-01T00:00:00Z INFO request ok id=1\n"),
  "prose lines": fill("Please fix the build so it runs on the second try.\n"),
  "15K-char lines of words": fill(`${"ab ".repeat(5000)}\n`),
};
const vocab = new Vocabulary();
for (let i = 0; i < 1000; i++) vocab.intern(`w${i}`);
console.log(`paste-read: ${cpus()[0]?.model} × ${cpus().length}, node ${process.version}, ${new Date().toISOString()}, load ${loadavg()[0].toFixed(1)}, ${kb} KB a shape, best of ${reps}`);
console.log("| lines | ms a KB | pasted lines |");
console.log("| --- | --- | --- |");
for (const [name, body] of Object.entries(shapes)) {
  const text = head + body;
  let best = Infinity;
  let pasted = 0;
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    const split = taskPaste(text);
    queryTerms(bm25Query(text, { split }), vocab);
    best = Math.min(best, performance.now() - t0);
    pasted = split?.pasteLines ?? 0;
  }
  console.log(`| ${name} | ${(best / (text.length / 1024)).toFixed(2)} | ${pasted} |`);
}
