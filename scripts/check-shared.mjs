#!/usr/bin/env node
// `npm run test:full` runs every test, those that read the shared data beside the checkout
// (../shared, or GAVEL_TEST_SHARED) included: this fails first, naming what is missing, where
// `npm test` would skip those tests.
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const shared = process.env.GAVEL_TEST_SHARED || join(repo, "..", "shared");
const needed = ["models/stories260Ktok512.gguf", "data/skills-mit.jsonl.gz", "data/swe-skills-bench/skills.jsonl", "data/swe-skills-bench/tasks.jsonl"];
const missing = needed.filter((p) => !existsSync(join(shared, p)));
if (missing.length > 0) {
  console.error(`test:full needs the shared data in ${shared} (or GAVEL_TEST_SHARED); missing: ${missing.join(", ")}`);
  process.exit(1);
}
console.log(`test:full: shared data from ${shared}`);
