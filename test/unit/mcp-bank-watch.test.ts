// src/cli/mcp/bank-watch.ts: `gavel mcp` over stdio looks at the bank's manifest when a frame comes,
// by an asynchronous stat (a frame never waits on the disk), one at a time: checks asked for while
// one is in flight make one more after it, so a commit made meanwhile is still seen, once.
// node:fs's stat is wrapped to count the calls and, when asked, to hold a stat's answer back.
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";

const probe: { calls: number; answered: number; hold: boolean; held: (() => void)[] } = { calls: 0, answered: 0, hold: false, held: [] };
vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  const stat = ((path: string, options: object, cb: (...a: unknown[]) => void) => {
    probe.calls++;
    const hold = probe.hold;
    const answer = (a: unknown[]) => (probe.answered++, cb(...a));
    fs.stat(path, options as { bigint: true }, (...a: unknown[]) => (hold ? probe.held.push(() => answer(a)) : answer(a)));
  }) as unknown as typeof fs.stat;
  return { ...fs, stat, default: { ...fs, stat } };
});

const { watchBank } = await import("../../src/cli/mcp/bank-watch.js");

const dirs: string[] = [];
afterEach(() => {
  Object.assign(probe, { calls: 0, answered: 0, hold: false, held: [] });
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function bank(): { dir: string; commit: (n: number) => void } {
  const dir = mkdtempSync(join(tmpdir(), "gavel-bank-watch-"));
  dirs.push(dir);
  const commit = (n: number) => {
    writeFileSync(join(dir, "manifest.json.tmp"), JSON.stringify({ commit: n }));
    renameSync(join(dir, "manifest.json.tmp"), join(dir, "manifest.json")); // as a bank commit replaces it
  };
  commit(1);
  return { dir, commit };
}
/** A watch whose timer never fires in a test, and a promise of each `changed` call. */
function watch(dir: string) {
  let seen = 0;
  let waiter: (() => void) | null = null;
  const w = watchBank(dir, () => (seen++, waiter?.()), 2 ** 31 - 1);
  const next = () => new Promise<void>((resolve) => (waiter = resolve));
  return { w, seen: () => seen, next };
}
/** Until `cond` holds, yielding to the event loop. */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setImmediate(r));
}

describe("the bank watch of gavel mcp over stdio", () => {
  it("looks at the manifest asynchronously: check() returns before the commit is told, then tells it once", async () => {
    const b = bank();
    const { w, seen, next } = watch(b.dir);
    try {
      b.commit(2);
      const told = next();
      w.check();
      expect(seen()).toBe(0); // no stat ran inside check()
      await told;
      expect(seen()).toBe(1);
      w.check();
      await until(() => probe.answered === 2);
      expect(seen()).toBe(1); // the same commit is not told again
    } finally {
      w.stop();
    }
  });

  it("runs one stat at a time, and one more after it when checks came meanwhile, so a commit made during a stat is seen", async () => {
    const b = bank();
    const { w, seen, next } = watch(b.dir);
    try {
      probe.hold = true;
      w.check(); // stats the old manifest; its answer is held back
      await until(() => probe.held.length === 1);
      b.commit(2);
      for (let i = 0; i < 20; i++) w.check(); // frames while the stat is in flight
      expect(probe.calls).toBe(1);
      probe.hold = false;
      const told = next();
      probe.held.shift()!(); // the old manifest: no change; then the one more look sees the commit
      await told;
      expect(probe.calls).toBe(2);
      expect(seen()).toBe(1);
    } finally {
      w.stop();
    }
  });

  it("tells nothing after stop(), even of a stat in flight that saw a commit", async () => {
    const b = bank();
    const { w, seen } = watch(b.dir);
    b.commit(2);
    probe.hold = true;
    w.check(); // sees the commit; its answer is held back
    await until(() => probe.held.length === 1);
    w.stop();
    probe.held.shift()!();
    w.check();
    expect(probe.answered).toBe(1);
    expect(probe.calls).toBe(1);
    expect(seen()).toBe(0);
  });
});
