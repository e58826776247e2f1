// Runs a benchmark script of bench/: bundles it with esbuild (which tsup brings) into .cache/bench and
// runs it with node. Usage: npm run bench -- <name> [args…]   e.g. npm run bench -- install 300
import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const [name, ...args] = process.argv.slice(2);
if (!name) {
  // every bench/<name>.bench.ts is a name
  const names = readdirSync(join(root, "bench")).filter((f) => f.endsWith(".bench.ts")).map((f) => f.slice(0, -".bench.ts".length));
  console.error(`usage: npm run bench -- <${names.sort().join("|")}> [args…]`);
  process.exit(2);
}
const out = join(root, ".cache", "bench", `${name}.bench.mjs`);
execFileSync("npx", ["esbuild", join(root, "bench", `${name}.bench.ts`), "--bundle", "--platform=node", "--format=esm", "--packages=external", `--outfile=${out}`, "--log-level=warning"], { cwd: root, stdio: "inherit" });
execFileSync(process.execPath, [out, ...args], { cwd: root, stdio: "inherit" });
