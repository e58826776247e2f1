// The hand-written off-domain prompts of bench/data/off-domain-prompts.jsonl (batches offhw1-offhw10;
// 1-5 fit the abstention model and its reference, 6-10 are held out), as the tests read them.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "./paths.js";

/** The texts of the prompts in `batches` (e.g. ["offhw7", "offhw8"]), in file order. */
export function offDomainPrompts(batches: readonly string[]): string[] {
  return readFileSync(join(repoRoot, "bench", "data", "off-domain-prompts.jsonl"), "utf8").split("\n").filter(Boolean)
    .map((l) => JSON.parse(l) as { text: string; batch: string }).filter((p) => batches.includes(p.batch)).map((p) => p.text);
}
