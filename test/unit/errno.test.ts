// The one errno table (src/util/errno.ts) and what reads it: the bank's permission and full-disk
// errors, the server's start, and the walk down an error's causes. Before it, each place kept its own
// list, and a read-only file system (EROFS) under a bank write reached the user untyped.
import { describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import { asPermissionError, permissionCause } from "../../src/bank/modes.js";
import { fsError } from "../../src/cli/commands/hook-settings.js";
import { startupError } from "../../src/serve/listen.js";
import { DirSyncError } from "../../src/util/durable-file.js";
import { ERRNO_REASONS, NO_SPACE_ERRNOS, PERMISSION_ERRNOS, errnoCause, errnoError, errnoReason } from "../../src/util/errno.js";

function errno(code: string, path = "/x/bank/keys.f16"): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: something, open '${path}'`), { code, path });
}

/** `inner` wrapped `depth` times as the cause of a plain Error. */
function wrapped(inner: Error, depth: number): Error {
  let e = inner;
  for (let i = 0; i < depth; i++) e = new Error(`layer ${i}`, { cause: e });
  return e;
}

describe("the errno table", () => {
  it("names the permission and full-disk errnos exactly", () => {
    expect([...PERMISSION_ERRNOS].sort()).toEqual(["EACCES", "EPERM", "EROFS"]);
    expect([...NO_SPACE_ERRNOS].sort()).toEqual(["EDQUOT", "ENOSPC"]);
  });

  it("reads only its own keys, never an object's inherited names", () => {
    for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty"]) expect(errnoReason(name)).toBeUndefined();
    expect(errnoReason(undefined)).toBeUndefined();
    expect(errnoReason("ENOSPC")).toEqual(ERRNO_REASONS.ENOSPC);
    // the server's start gives such a code INTERNAL with the message, never "undefined"
    const e = startupError(errno("constructor"), "listen on /x");
    expect(e.code).toBe("INTERNAL");
    expect(e.message).not.toContain("undefined");
  });

  it("finds an errno down the chain of causes, eight errors deep at most", () => {
    const inner = errno("EACCES");
    for (let depth = 0; depth < 8; depth++) expect(errnoCause(wrapped(inner, depth), PERMISSION_ERRNOS)).toBe(inner);
    expect(errnoCause(wrapped(inner, 8), PERMISSION_ERRNOS)).toBeUndefined();
    expect(errnoCause(wrapped(errno("ENOENT"), 2), PERMISSION_ERRNOS)).toBeUndefined();
    expect(errnoCause("EACCES", PERMISSION_ERRNOS)).toBeUndefined();
    expect(errnoCause(null, PERMISSION_ERRNOS)).toBeUndefined();
  });
});

describe("a bank's file-system errors", () => {
  it("a read-only file system under a bank write is PERMISSION_DENIED naming the bank and the file", () => {
    const cause = errno("EROFS", "/ro/bank/manifest.json.tmp");
    expect(permissionCause(wrapped(cause, 1))).toBe(cause);
    const e = asPermissionError(wrapped(cause, 1), "/ro/bank", "writing") as GavelError;
    expect(e).toBeInstanceOf(GavelError);
    expect(e.code).toBe("PERMISSION_DENIED");
    expect(e.message).toContain("/ro/bank");
    expect(e.message).toContain("EROFS on /ro/bank/manifest.json.tmp");
  });

  it("a full disk is NO_SPACE and wins over a permission error further down", () => {
    const e = asPermissionError(new Error("write failed", { cause: errno("EDQUOT") }), "/b", "writing") as GavelError;
    expect(e.code).toBe("NO_SPACE");
    expect((asPermissionError(errno("ENOSPC"), "/b", "writing") as GavelError).code).toBe("NO_SPACE");
  });

  it("anything else is given back as it is", () => {
    const other = errno("EIO");
    expect(asPermissionError(other, "/b", "reading")).toBe(other);
  });

  it("the server's start and the bank agree on every permission and full-disk errno", () => {
    for (const code of PERMISSION_ERRNOS) {
      expect(startupError(errno(code), "write x").code).toBe("PERMISSION_DENIED");
      expect((asPermissionError(errno(code), "/b", "writing") as GavelError).code).toBe("PERMISSION_DENIED");
    }
    for (const code of NO_SPACE_ERRNOS) {
      expect(startupError(errno(code), "write x").code).toBe("NO_SPACE");
      expect((asPermissionError(errno(code), "/b", "writing") as GavelError).code).toBe("NO_SPACE");
    }
  });
});

// One errnoError behind the server's start, the hook installer, the bank's folder and the gate file,
// the layer choice and --save-trajectories. Before, the hook installer's copy read only the error's own
// errno (a wrapped EACCES was INTERNAL), and a DirSyncError (the file renamed into place, only the
// folder's fsync failed) read as "cannot write …: a read-only file system (EROFS)" though the file was
// written.
describe("errnoError", () => {
  it("reads an errno down the chain of causes for every caller, each with its own prefix and fallback", () => {
    const cause = wrapped(errno("EACCES"), 2);
    expect(errnoError(cause, "cannot write x")).toMatchObject({ code: "PERMISSION_DENIED", message: "cannot write x: permission denied (EACCES)" });
    expect(fsError(cause, "write x")).toMatchObject({ code: "PERMISSION_DENIED", message: "cannot write x: permission denied (EACCES)" });
    expect(startupError(cause, "write x")).toMatchObject({ code: "PERMISSION_DENIED", message: "gavel serve could not write x: permission denied (EACCES)" });
    const other = new TypeError("boom");
    expect(errnoError(other, "cannot write x")).toBe(other);
    expect(errnoError(other, "cannot write x", { fallback: "internal" })).toMatchObject({ code: "INTERNAL", message: "cannot write x: boom" });
    expect(fsError(other, "write x")).toMatchObject({ code: "INTERNAL", message: "cannot write x: boom" });
    const typed = new GavelError("typed", "NO_SPACE");
    expect(errnoError(typed, "cannot write x", { fallback: "internal" })).toBe(typed);
    expect(errnoError(errno("ENOTDIR"), (code) => `${code} at x`)).toMatchObject({ code: "FILE_NOT_FOUND", message: "FILE_NOT_FOUND at x: a part of the path is not a folder (ENOTDIR)" });
  });

  it("words a failed folder sync after the rename as a file written, typed by the fsync's errno", () => {
    const path = "/ro/out/gate.json";
    for (const [code, want, words] of [
      ["EROFS", "PERMISSION_DENIED", "a read-only file system, EROFS"],
      ["ENOSPC", "NO_SPACE", "no space left on the device, ENOSPC"],
      ["EIO", "CORRUPT_FILE", "an I/O error; the disk may be failing, EIO"],
    ] as const) {
      const sync = new DirSyncError(path, errno(code, "/ro/out"));
      for (const err of [sync, wrapped(sync, 2)]) {
        for (const e of [errnoError(err, `cannot write the gate file ${path}`), fsError(err, `write ${path}`), startupError(err, `write ${path}`)]) {
          expect(e).toBeInstanceOf(GavelError);
          expect(e).toMatchObject({ code: want });
          expect((e as GavelError).message).toBe(`${path} was written, but its folder could not be synced (${words}), so it may not survive a power cut; check the disk`);
        }
      }
    }
  });
});
