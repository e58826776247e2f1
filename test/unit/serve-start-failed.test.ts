// startServer (src/serve/start.ts), the on-demand start of `gavel hook claude-code --start-server` and
// serverRouter({ start }): a server it started that exited without listening (a corrupt bank, a
// missing model) left its start marker naming a process that is gone; the next start says why (the
// last line of its log), where every prompt read "started one" and the reason stayed in the log.
import { afterEach, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "../../src/serve/start.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A bank folder, its socket path, and a CLI that exits at once (the stand-in for `gavel serve`). */
function setUp() {
  const bank = mkdtempSync(join(tmpdir(), "gavel-start-failed-"));
  dirs.push(bank);
  const cli = join(bank, "exit.cjs");
  writeFileSync(cli, "process.exit(0);\n");
  return { bank, socket: join(bank, "serve.sock"), cli };
}

describe("startServer after a start that failed", () => {
  it("names the last line of the log when the marker's process is gone", () => {
    const { bank, socket, cli } = setUp();
    const gone = spawnSync(process.execPath, ["-e", "0"]).pid; // a process that has exited
    writeFileSync(`${socket}.starting`, `${gone}\n`);
    writeFileSync(`${socket}.log`, `gavel serve: loading\ngavel: ${bank}/manifest.json is not valid JSON [CORRUPT_FILE]\n\n`);
    const r = startServer(bank, { socket, idleExitMs: 1000, cwd: bank, cli });
    expect(r).toMatchObject({ started: expect.any(Number), log: `${socket}.log`, failed: `gavel: ${bank}/manifest.json is not valid JSON [CORRUPT_FILE]` });
  });

  it("says nothing of a failure on a first start (no marker)", () => {
    const { bank, socket, cli } = setUp();
    const r = startServer(bank, { socket, idleExitMs: 1000, cwd: bank, cli });
    expect(r).toEqual({ started: expect.any(Number), log: `${socket}.log` });
  });
});
