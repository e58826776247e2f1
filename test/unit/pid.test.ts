// src/util/pid.ts: one answer to "is this pid alive", by signal 0 on real processes. Only an integer
// from 1 to 2^31 − 1 is probed: kill(0, 0) and kill(-1, 0) reach process groups and succeed, and a
// string such as "12" would be taken as pid 12 by process.kill.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { isProbeablePid, pidAlive, pidState } from "../../src/util/pid.js";

/** The pid of a child that has exited (and been reaped). */
function exitedPid(): number {
  const r = spawnSync(process.execPath, ["-e", ""]);
  expect(r.status).toBe(0);
  return r.pid!;
}

describe("pidState", () => {
  it("calls this process and its parent alive", () => {
    expect(pidState(process.pid)).toBe("alive");
    expect(pidAlive(process.pid)).toBe(true);
    expect(pidState(process.ppid)).toBe("alive");
  });

  it("calls a child that has exited gone", () => {
    const pid = exitedPid();
    expect(pidState(pid)).toBe("gone");
    expect(pidAlive(pid)).toBe(false);
  });

  it("never probes what is not a pid: 0, negatives (process groups), fractions, NaN, strings, past 2^31 − 1", () => {
    for (const v of [0, -1, -process.pid, 1.5, NaN, Infinity, -Infinity, "12", String(process.pid), 2 ** 31, 2 ** 53, null, undefined, {}, [process.pid], 1n]) {
      expect(isProbeablePid(v), String(v)).toBe(false);
      expect(pidState(v), String(v)).toBe("invalid");
      expect(pidAlive(v), String(v)).toBe(false);
    }
    // the bounds themselves are pids (2^31 − 1 exists nowhere: gone, not invalid)
    expect(isProbeablePid(1)).toBe(true);
    expect(isProbeablePid(2 ** 31 - 1)).toBe(true);
    expect(pidState(2 ** 31 - 1)).toBe("gone");
  });
});
