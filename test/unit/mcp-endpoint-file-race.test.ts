// `<bank>/mcp.http.json` (src/cli/mcp/endpoint-file.ts): a start that finds a stale record (its pid
// gone) breaks it only while it is still that record. Two starts that read the same stale record used
// to both remove "it" with a plain rm: the slower one then removed the file the faster had just linked,
// and both served the bank. Here the faster start is simulated: right after this start reads the stale
// record, a live server's record takes its place (node:fs/promises' readFile of the file is wrapped).
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";

/** Called once after the next readFile of `target` (then cleared). */
const hook: { target?: string; after?: () => void } = {};
vi.mock("node:fs/promises", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs/promises")>();
  const readFile = (async (...args: Parameters<typeof fs.readFile>) => {
    const text = await fs.readFile(...args);
    if (hook.target !== undefined && args[0] === hook.target) {
      const after = hook.after;
      hook.target = hook.after = undefined;
      after?.();
    }
    return text;
  }) as typeof fs.readFile;
  return { ...fs, readFile, default: { ...fs, readFile } };
});

const { claimEndpointFile } = await import("../../src/cli/mcp/endpoint-file.js");

const dirs: string[] = [];
afterEach(() => {
  hook.target = hook.after = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function bank(): string {
  const d = mkdtempSync(join(tmpdir(), "gavel-mcp-endpoint-race-"));
  dirs.push(d);
  return d;
}
function deadPid(): number {
  return spawnSync(process.execPath, ["-e", ""]).pid!;
}

describe("gavel mcp --port's endpoint file: breaking a stale record", () => {
  it("leaves a live server's record that replaced the stale one after it was read, and refuses the start", async () => {
    const d = bank();
    const f = join(d, "mcp.http.json");
    writeFileSync(f, JSON.stringify({ url: "http://127.0.0.1:2/mcp", token: "stale", pid: deadPid() }));
    const live = JSON.stringify({ url: "http://127.0.0.1:3/mcp", token: "live", pid: process.ppid }) + "\n";
    hook.target = f;
    hook.after = () => {
      // another start broke the stale record and linked its own, as claimEndpointFile does
      writeFileSync(join(d, "live.tmp"), live, { mode: 0o600 });
      renameSync(join(d, "live.tmp"), f);
    };
    await expect(claimEndpointFile(f, { url: "http://127.0.0.1:1/mcp", token: "mine" })).rejects.toMatchObject({
      code: "BANK_LOCKED",
      message: expect.stringContaining(`pid ${process.ppid}) already serves this bank at http://127.0.0.1:3/mcp`),
    });
    expect(hook.after).toBeUndefined(); // the read was seen
    expect(readFileSync(f, "utf8")).toBe(live);
    expect(readdirSync(d).sort()).toEqual(["mcp.http.json"]); // nothing left aside
  });

  it("is CORRUPT_FILE when what stands there cannot be read (a directory), and leaves it", async () => {
    const d = bank();
    const f = join(d, "mcp.http.json");
    mkdirSync(f);
    await expect(claimEndpointFile(f, { url: "http://127.0.0.1:1/mcp", token: "mine" })).rejects.toMatchObject({ code: "CORRUPT_FILE", message: expect.stringMatching(/mcp\.http\.json cannot be read \(EISDIR\); move it aside/) });
    expect(readdirSync(d)).toEqual(["mcp.http.json"]);
    expect(readdirSync(f)).toEqual([]);
  });
});
