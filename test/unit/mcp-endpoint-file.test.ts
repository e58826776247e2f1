// `<bank>/mcp.http.json` (src/cli/mcp/endpoint-file.ts): one `gavel mcp --port` a bank. A start is refused
// while the file names another live process, a file left by a process that is gone is replaced, and a
// stop removes the file only while it is still this process's (two servers deleted each other's).
import { afterEach, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { claimEndpointFile, refuseIfServed, releaseEndpointFile } from "../../src/cli/mcp/endpoint-file.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function file(): string {
  const d = mkdtempSync(join(tmpdir(), "gavel-mcp-endpoint-"));
  dirs.push(d);
  return join(d, "mcp.http.json");
}
const read = (f: string) => JSON.parse(readFileSync(f, "utf8")) as { url: string; token: string; pid: number };
/** The pid of a process that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", ""]);
  return r.pid!;
}

describe("gavel mcp --port's endpoint file", () => {
  it("is written with this process's pid, mode 0600, and removed on release", async () => {
    const f = file();
    await claimEndpointFile(f, { url: "http://127.0.0.1:1/mcp", token: "mine" });
    expect(read(f)).toEqual({ url: "http://127.0.0.1:1/mcp", token: "mine", pid: process.pid });
    expect(statSync(f).mode & 0o777).toBe(0o600);
    await releaseEndpointFile(f, "mine");
    expect(existsSync(f)).toBe(false);
  });

  it("refuses a start while another live process serves the bank, leaving its file", async () => {
    const f = file();
    const other = JSON.stringify({ url: "http://127.0.0.1:2/mcp", token: "theirs", pid: process.ppid });
    writeFileSync(f, other);
    await expect(refuseIfServed(f)).rejects.toMatchObject({ code: "BANK_LOCKED", message: expect.stringMatching(new RegExp(`pid ${process.ppid}\\) already serves this bank at http://127\\.0\\.0\\.1:2/mcp`)) });
    await expect(claimEndpointFile(f, { url: "http://127.0.0.1:1/mcp", token: "mine" })).rejects.toMatchObject({ code: "BANK_LOCKED" });
    expect(readFileSync(f, "utf8")).toBe(other);
  });

  it("replaces a file left by a process that is gone", async () => {
    const f = file();
    writeFileSync(f, JSON.stringify({ url: "http://127.0.0.1:2/mcp", token: "stale", pid: deadPid() }));
    await expect(refuseIfServed(f)).resolves.toBeUndefined();
    await claimEndpointFile(f, { url: "http://127.0.0.1:1/mcp", token: "mine" });
    expect(read(f).token).toBe("mine");
    expect(readdirSync(dirname(f))).toEqual(["mcp.http.json"]); // nothing left aside
  });

  it("leaves another process's file in place on release", async () => {
    const f = file();
    await claimEndpointFile(f, { url: "http://127.0.0.1:1/mcp", token: "mine" });
    const theirs = JSON.stringify({ url: "http://127.0.0.1:2/mcp", token: "theirs", pid: process.ppid });
    writeFileSync(f, theirs);
    await releaseEndpointFile(f, "mine");
    expect(readFileSync(f, "utf8")).toBe(theirs);
  });
});
