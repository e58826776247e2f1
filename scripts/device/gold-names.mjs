// The benchmark golds' skill names, unique, comma-joined: what the recipes pass to `gavel train
// --exclude`, so that no skill named like a gold gives a training query.
// Usage: node scripts/device/gold-names.mjs <golds.jsonl>
import { readFileSync } from "node:fs";

const lines = readFileSync(process.argv[2], "utf8").split("\n").filter(Boolean);
console.log([...new Set(lines.map((l) => JSON.parse(l).name))].join(","));
