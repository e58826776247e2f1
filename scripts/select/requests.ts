/**
 * Hand-written requests for the small-library scripts (small-library.ts, small-abstention.ts): a JSON
 * array of {task, expected} (expected null: no skill serves it), or JSONL of {text, gold_skill_ids}
 * (bench/data/short-requests-examples.jsonl), its first gold expected.
 */
import { readFileSync } from "node:fs";

export interface Request {
  task: string;
  expected: string | null;
}

export function readRequests(file: string): Request[] {
  if (!file.endsWith(".jsonl")) return JSON.parse(readFileSync(file, "utf8")) as Request[];
  return readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => {
    const r = JSON.parse(l) as { text: string; gold_skill_ids?: string[] };
    return { task: r.text, expected: r.gold_skill_ids?.[0] ?? null };
  });
}
