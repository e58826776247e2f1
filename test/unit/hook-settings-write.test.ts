// The hook installer's write of .claude/settings.json (src/cli/commands/hook-settings.ts,
// writeSettings). Its temporary file was named `<file>.<pid>.tmp` and opened exclusively, so one left
// by a crashed run whose pid this process now has made every install fail "cannot write
// …settings.json: a file is in the way (EEXIST)". It is now named as every durable write's is, fresh
// and random (util/durable-file.ts, which removes it when the write fails).
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { writeSettings } from "../../src/cli/commands/hook-settings.js";
import { tempDirs } from "../helpers/temp-dirs.js";

const fresh = tempDirs("gavel-hook-write-");

/** The next fsync of folder `dir` fails with `code` (EINVAL: some network and FUSE file systems refuse one). */
const fsState = vi.hoisted(() => ({ dir: "", code: "EINVAL" }));

vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>();
  const open = (async (...a: Parameters<typeof real.open>) => {
    const fh = await real.open(...a);
    if (a[0] === fsState.dir && (a[1] ?? "r") === "r") {
      fsState.dir = "";
      fh.sync = () => Promise.reject(Object.assign(new Error(`${fsState.code}: invalid argument, fsync`), { code: fsState.code, syscall: "fsync" }));
    }
    return fh;
  }) as typeof real.open;
  return { ...real, open, default: { ...real, open } };
});

describe("writeSettings", () => {
  it("writes beside a temporary file a crashed run of the same pid left, keeping the file's mode", async () => {
    const dir = fresh();
    const target = join(dir, "settings.json");
    writeFileSync(target, "{}");
    chmodSync(target, 0o640);
    const leftover = `${target}.${process.pid}.tmp`;
    writeFileSync(leftover, "torn");
    await writeSettings(target, '{"hooks": {}}\n');
    expect(readFileSync(target, "utf8")).toBe('{"hooks": {}}\n');
    expect(statSync(target).mode & 0o777).toBe(0o640);
    // not this run's file: left as it was, and nothing else beside it
    expect(readFileSync(leftover, "utf8")).toBe("torn");
    expect(readdirSync(dir).sort()).toEqual(["settings.json", `settings.json.${process.pid}.tmp`]);
  });

  it("stands when only its folder's fsync fails: the file is in place", async () => {
    const dir = fresh();
    const target = join(dir, "settings.json");
    writeFileSync(target, "{}");
    fsState.dir = dir;
    await writeSettings(target, '{"hooks": {}}\n');
    expect(fsState.dir).toBe(""); // the folder's fsync was made, and failed
    expect(readFileSync(target, "utf8")).toBe('{"hooks": {}}\n');
    expect(readdirSync(dir)).toEqual(["settings.json"]);
  });
});
