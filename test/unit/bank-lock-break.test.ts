// A stale bank lock is broken under a second lock, <lock>.break (src/bank/lock.ts), so breakers take
// turns: the stale lock is never renamed aside while another process may link its own in. Before,
// of three processes one could rename a live lock aside to check it, a second link its lock into the
// gap, and the first's put-back fail: two writers on one bank.
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DirLock } from "../../src/bank/lock.js";
import { bundleChild, runChildren } from "../helpers/race-children.js";

const root = mkdtempSync(join(tmpdir(), "gavel-lock-break-"));
let child: string;
beforeAll(() => {
  child = bundleChild("lock-race-child", root);
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A pid no process has any more. */
const deadPid = () => spawnSync(process.execPath, ["-e", "0"]).pid!;
const staleLock = (path: string) => writeFileSync(path, JSON.stringify({ pid: deadPid(), host: hostname(), createdAt: "then" }) + "\n");

describe("breaking a stale bank lock", () => {
  it("waits while another process holds <lock>.break, leaves the stale lock where it is meanwhile, and breaks a .break whose owner died", async () => {
    const dir = mkdtempSync(join(root, "one-"));
    const lock = join(dir, "lock");
    staleLock(lock);
    const stale = readFileSync(lock, "utf8");
    const breaker = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
    try {
      writeFileSync(`${lock}.break`, JSON.stringify({ pid: breaker.pid, host: hostname(), createdAt: "now" }) + "\n");
      let settled = false;
      const taking = DirLock.acquire(lock, "the test bank").finally(() => (settled = true));
      await new Promise((r) => setTimeout(r, 300));
      expect(settled).toBe(false);
      expect(readFileSync(lock, "utf8")).toBe(stale); // judged stale, but not touched while .break is held
      breaker.kill("SIGKILL");
      await once(breaker, "exit");
      const held = await taking;
      expect(JSON.parse(readFileSync(lock, "utf8")).pid).toBe(process.pid);
      expect(readdirSync(dir)).toEqual(["lock"]); // no .break, .stale or .new file left
      await held.release();
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      breaker.kill("SIGKILL");
    }
  }, 60_000);

  it("six processes breaking one stale lock at once: never two holders, and nothing left behind", async () => {
    for (let round = 0; round < 4; round++) {
      const dir = mkdtempSync(join(root, `race-${round}-`));
      const lock = join(dir, "lock");
      staleLock(lock);
      const startAt = Date.now() + 1500;
      const results = await runChildren<{ took: boolean; overlap: boolean; code?: string }>(6, child, [lock, join(dir, "holder"), "40", String(startAt)]);
      expect(results.filter((r) => r.overlap)).toEqual([]);
      expect(results.some((r) => r.took)).toBe(true);
      for (const r of results) if (!r.took) expect(r.code).toBe("BANK_LOCKED");
      expect(readdirSync(dir)).toEqual([]);
    }
  }, 120_000);
});
