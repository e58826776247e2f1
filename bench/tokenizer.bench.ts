/**
 * The lexical tokenizer's speed (src/lexical/tokens.ts, bm25Tokens) beside version 2's (the runs of
 * letters, marks and digits, kept here as it was: one regular expression over the NFC, lower-cased
 * text), on two inputs: ~1 MB of public skills in library order (name, description and body; mixed
 * English and CJK as the library is), and SWE-Skills-Bench's 490 English task statements.
 *
 *   npm run bench -- tokenizer [reps=7]
 *
 * Each input is tokenized once before timing, then `reps` rounds each of version 2 and the current
 * tokenizer, alternated. Prints the median ms per round, MB/s, and the tokens each gives.
 */
import { join } from "node:path";
import { loadLibrary } from "../lab/eval/io.js";
import { loadTasks } from "../lab/eval/tasks.js";
import { bm25Tokens, TOKENIZER_VERSION } from "../src/lexical/postings.js";
import { median } from "./data.js";

const reps = Number(process.argv[2] ?? 7);
if (!Number.isInteger(reps) || reps < 1) throw new Error(`reps must be a positive integer, got ${process.argv[2]}`);
const shared = join(process.cwd(), "..", "shared", "data");

const V2 = /[\p{L}\p{M}\p{N}]+/gu;
const v2Tokens = (text: string): string[] => text.normalize("NFC").toLowerCase().match(V2) ?? [];

const { skills } = await loadLibrary([join(shared, "skills-mit.jsonl.gz")]);
const parts: string[] = [];
let size = 0;
for (const s of skills) {
  if (size >= 1_000_000) break;
  const t = `${s.name}\n${s.description}\n${s.body ?? ""}`;
  parts.push(t);
  size += t.length;
}
const mixed = [parts.join("\n")];
const cjk = (mixed[0].match(/[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}\p{sc=Hangul}]/gu) ?? []).length;
const tasks = (await loadTasks(join(shared, "swe-skills-bench", "tasks.jsonl"))).map((t) => t.text);

function run(name: string, texts: readonly string[]): void {
  const chars = texts.reduce((a, t) => a + t.length, 0);
  const count = (f: (t: string) => string[]) => texts.reduce((a, t) => a + f(t).length, 0);
  const tokens = [count(v2Tokens), count(bm25Tokens)];
  const times: [number[], number[]] = [[], []];
  for (let r = 0; r < reps; r++) {
    for (const [i, f] of [v2Tokens, bm25Tokens].entries()) {
      const t0 = performance.now();
      for (const t of texts) f(t);
      times[i].push(performance.now() - t0);
    }
  }
  const row = (label: string, i: number) => {
    const ms = median(times[i]);
    return `${label}: ${ms.toFixed(1)} ms (${(chars / 1e6 / (ms / 1000)).toFixed(1)} M chars/s), ${tokens[i]} tokens`;
  };
  console.log(`${name} (${texts.length} texts, ${(chars / 1e6).toFixed(2)} M chars): ${row("v2", 0)}; ${row(`v${TOKENIZER_VERSION}`, 1)}`);
}

console.log(`median of ${reps} rounds; the mixed text: ${parts.length} skills, ${cjk} CJK characters (${((cjk / mixed[0].length) * 100).toFixed(1)}%)`);
run("1 MB of public skills", mixed);
run("SWE-Skills-Bench tasks", tasks);
