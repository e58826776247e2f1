// Writes the validation tasks the device scripts use: the first N tasks (file order) of each of
// SWE-Skills-Bench's batches 1-5. Batches 6-10, the test split, are never written.
// Usage: node scripts/device/val-tasks.mjs <tasks.jsonl> <out.jsonl> <N>
import { readFileSync, writeFileSync } from "node:fs";

const [src, out, perArg] = process.argv.slice(2);
const per = Number(perArg);
const seen = {};
const kept = readFileSync(src, "utf8").split("\n").filter(Boolean).filter((line) => {
  const b = Number(String(JSON.parse(line).batch).replace(/\D/g, ""));
  if (!(b >= 1 && b <= 5)) return false;
  seen[b] = (seen[b] ?? 0) + 1;
  return seen[b] <= per;
});
writeFileSync(out, kept.join("\n") + "\n");
