// `<bank>/mcp.http.json` (src/cli/mcp/endpoint-file.ts): a stale record is removed under
// `<file>.break`, one breaker at a time, as a stale bank lock is (bank/lock.ts). Before, a start renamed
// the record aside to check it and put it back when it had changed; a third start could link its own
// into that gap, and the put-back then failed: two processes believed they served the bank, one
// without its record on disk. Six processes race here on one stale record.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleChild, runChildren } from "../helpers/race-children.js";

const root = mkdtempSync(join(tmpdir(), "gavel-endpoint-break-"));
let child: string;
beforeAll(() => {
  child = bundleChild("endpoint-race-child", root);
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("gavel mcp --port's endpoint file: six starts over one stale record", () => {
  it("every start that claims it still holds it while it runs; the others are refused; no .break or .stale file is left", async () => {
    for (let round = 0; round < 6; round++) {
      const dir = mkdtempSync(join(root, `race-${round}-`));
      const file = join(dir, "mcp.http.json");
      writeFileSync(file, JSON.stringify({ url: "http://127.0.0.1:2/mcp", token: "stale", pid: spawnSync(process.execPath, ["-e", "0"]).pid }) + "\n");
      const startAt = Date.now() + 1500;
      const results = await runChildren<{ claimed: boolean; kept?: boolean; code?: string }>(6, child, [file, String(startAt), String(startAt + 1500)]);
      const claimed = results.filter((r) => r.claimed);
      expect(claimed.length).toBeGreaterThanOrEqual(1);
      expect(claimed.filter((r) => !r.kept)).toEqual([]);
      for (const r of results) if (!r.claimed) expect(r.code).toBe("BANK_LOCKED");
      expect(readdirSync(dir).filter((f) => f !== "mcp.http.json")).toEqual([]);
    }
  }, 120_000);
});
