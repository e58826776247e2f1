// The one errno table (src/util/errno.ts) and what reads it: the bank's permission and full-disk
// errors, the server's start, and the walk down an error's causes. Before it, each place kept its own
// list, and a read-only file system (EROFS) under a bank write reached the user untyped.
import { describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import { asPermissionError, permissionCause } from "../../src/bank/modes.js";
import { startupError } from "../../src/serve/listen.js";
import { ERRNO_REASONS, NO_SPACE_ERRNOS, PERMISSION_ERRNOS, errnoCause, errnoReason } from "../../src/util/errno.js";

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
