// `<bank>/mcp.http.json` (src/cli/mcp/endpoint-file.ts): a stale record is removed under
// `<file>.break`, one breaker at a time, as a stale bank lock is (bank/lock.ts). Before, a start renamed
// the record aside to check it and put it back when it had changed; a third start could link its own
// into that gap, and the put-back then failed: two processes believed they served the bank, one
// without its record on disk. Six processes race here on one stale record.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/paths.js";

const root = mkdtempSync(join(tmpdir(), "gavel-endpoint-break-"));
const child = join(root, "endpoint-race-child.mjs");
beforeAll(() => {
  execFileSync(join(repoRoot, "node_modules", ".bin", "esbuild"), [join(repoRoot, "test", "helpers", "endpoint-race-child.ts"), "--bundle", "--platform=node", "--format=esm", `--outfile=${child}`, "--log-level=warning"], { cwd: repoRoot });
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("gavel mcp --port's endpoint file: six starts over one stale record", () => {
  it("every start that claims it still holds it while it runs; the others are refused; no .break or .stale file is left", async () => {
    for (let round = 0; round < 6; round++) {
      const dir = mkdtempSync(join(root, `race-${round}-`));
      const file = join(dir, "mcp.http.json");
      writeFileSync(file, JSON.stringify({ url: "http://127.0.0.1:2/mcp", token: "stale", pid: spawnSync(process.execPath, ["-e", "0"]).pid }) + "\n");
      const startAt = Date.now() + 1500;
      const runs = Array.from({ length: 6 }, () => {
        const p = spawn(process.execPath, [child, file, String(startAt), String(startAt + 1500)], { stdio: ["ignore", "pipe", "inherit"] });
        let out = "";
        p.stdout.on("data", (d) => (out += d));
        return once(p, "exit").then(() => JSON.parse(out) as { claimed: boolean; kept?: boolean; code?: string });
      });
      const results = await Promise.all(runs);
      const claimed = results.filter((r) => r.claimed);
      expect(claimed.length).toBeGreaterThanOrEqual(1);
      expect(claimed.filter((r) => !r.kept)).toEqual([]);
      for (const r of results) if (!r.claimed) expect(r.code).toBe("BANK_LOCKED");
      expect(readdirSync(dir).filter((f) => f !== "mcp.http.json")).toEqual([]);
    }
  }, 120_000);
});
