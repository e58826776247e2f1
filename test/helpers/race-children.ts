// Processes racing on one file (test/unit/bank-lock-break.test.ts, test/unit/mcp-endpoint-file-break.test.ts):
// a child script of test/helpers bundled for plain node, and a number of them run at once, each
// printing one JSON line.
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { repoRoot } from "./paths.js";

/** Bundles test/helpers/<name>.ts with esbuild into <dir>/<name>.mjs, so that plain node runs it (no vite-node start per child); its path. */
export function bundleChild(name: string, dir: string): string {
  const out = join(dir, `${name}.mjs`);
  execFileSync(join(repoRoot, "node_modules", ".bin", "esbuild"), [join(repoRoot, "test", "helpers", `${name}.ts`), "--bundle", "--platform=node", "--format=esm", `--outfile=${out}`, "--log-level=warning"], { cwd: repoRoot });
  return out;
}

/** Runs `n` copies of the bundled `script` with `args` at once; each one's JSON line, parsed, once all have exited. */
export function runChildren<T>(n: number, script: string, args: readonly string[]): Promise<T[]> {
  return Promise.all(
    Array.from({ length: n }, () => {
      const p = spawn(process.execPath, [script, ...args], { stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      p.stdout.on("data", (d) => (out += d));
      return once(p, "exit").then(() => JSON.parse(out) as T);
    }),
  );
}
