// `gavel serve` and `gavel mcp` check the shared flags before the model loads, and serve applies them:
// before, `--truncate bogus` started both, a server started with `--truncate start` still kept a long
// task's end, `--port 70000` printed a RangeError stack after the model loaded, a socket in a missing
// folder read as "permission denied", and `serve --json` printed text.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "../../src/serve/client.js";
import { runNode } from "../helpers/run.js";
import { cli, startServe, type ServeChild } from "../helpers/serve-process.js";

const env = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" };

describe("gavel serve and gavel mcp: the shared flags", () => {
  let dir: string;
  let bank: string;
  let server: ServeChild | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-serve-flags-"));
    bank = join(dir, "bank");
    for (const [name, what] of [["csv-dedupe", "Remove duplicate rows from CSV files."], ["image-resize", "Resize and convert images."]]) {
      mkdirSync(join(dir, "skills", name), { recursive: true });
      writeFileSync(join(dir, "skills", name, "SKILL.md"), `---\nname: ${name}\ndescription: ${what}\n---\n# ${name}\n${what}\n`);
    }
    const r = await runNode([cli, "install", join(dir, "skills"), "--bank", bank, "--context", "2048"], { env });
    expect(r.code, r.err).toBe(0);
  }, 300_000);
  afterAll(() => {
    server?.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a bad --truncate, an out-of-range --port and a socket in a missing folder before loading anything", async () => {
    for (const [args, code] of [
      [["serve", "--truncate", "bogus"], "INVALID_ARGUMENT"],
      [["mcp", "--truncate", "bogus"], "INVALID_ARGUMENT"],
      [["serve", "--port", "70000"], "INVALID_ARGUMENT"],
      [["serve", "--port=-1"], "INVALID_ARGUMENT"],
      [["serve", "--socket", join(dir, "no-such-folder", "x.sock")], "FILE_NOT_FOUND"],
    ] as const) {
      const r = await runNode([cli, ...args, "--bank", bank, "--json"], { env });
      expect(r.code, `${args.join(" ")}: ${r.out}${r.err}`).not.toBe(0);
      expect(r.err, args.join(" ")).toContain(code);
      expect(r.err, args.join(" ")).not.toMatch(/\n\s+at /); // no stack
    }
  });

  it("a server started with --truncate start keeps a long task's start", async () => {
    server = await startServe(["--bank", bank, "--truncate", "start"], { env });
    const c = await connect({ bank });
    try {
      const task = `Remove the duplicate rows from orders.csv. ${"Then some unrelated chatter about the weather. ".repeat(400)}`;
      const r = await c.request<{ truncation?: { kept: string } }>("route", { task });
      expect(r.truncation?.kept).toBe("start");
    } finally {
      c.close();
      server.child.kill("SIGTERM");
      await server.exited;
      server = undefined;
    }
  });
});
