/**
 * Probe: how well the backbone's own log-probability of a request (no skill in front of it) tells
 * requests a skill serves from off-domain prompts. Prints, per set, the mean token log-prob of each
 * text read as a chat's user message (`<|user|>\n{text}\n`, BOS first), and writes them as JSONL.
 *
 *   npx vite-node scripts/experiments/task-lp.ts -- OUT.jsonl SET=FILE[,…] …
 *   (FILE: JSONL of {text, off_domain?} or a JSON array of {task, expected})
 */
import { readFileSync, writeFileSync } from "node:fs";
import { Model } from "../../src/index.js";
import { DEFAULT_MODEL } from "../../src/defaults.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const out = argv.shift()!;
const maxTokens = Number(process.env.LP_MAX ?? 256);
const model = await Model.load(DEFAULT_MODEL, { contextSize: 2048 });
const rows: string[] = [];
for (const spec of argv) {
  const [set, files] = spec.split("=");
  for (const f of files.split(",")) {
    const texts: { text: string; off: boolean; batch?: string; id?: string }[] = f.endsWith(".json")
      ? (JSON.parse(readFileSync(f, "utf8")) as { task: string; expected: string | null }[]).map((r) => ({ text: r.task, off: r.expected === null }))
      : readFileSync(f, "utf8").split("\n").filter(Boolean).map((l) => { const r = JSON.parse(l); return { text: r.text as string, off: !!r.off_domain, batch: r.batch as string | undefined, id: r.id as string | undefined }; });
    for (const t of texts) {
      const prefix = model.tokenize("<|user|>\n", { addBos: true });
      let body = model.tokenize(t.text, { addBos: false });
      const whole = body.length;
      if (body.length > maxTokens) body = body.subarray(0, maxTokens);
      const { logprobs } = await model.score(prefix, body);
      const lp = logprobs.reduce((a, b) => a + b, 0) / logprobs.length;
      rows.push(JSON.stringify({ set, file: f, id: t.id, batch: t.batch, off: t.off, tokens: whole, lp, text: t.text.slice(0, 80) }));
    }
  }
}
writeFileSync(out, rows.join("\n") + "\n");
await model.dispose();
