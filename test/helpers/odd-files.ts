// Things that can stand where a bank's file should be, for the tests of bounded, never-blocking
// reads: each replaces `path` (whatever it held) with one of them.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, symlinkSync } from "node:fs";

/** [what, make(path)]: a FIFO, a link to a device, a link loop, a directory. */
export const ODD_FILES: readonly (readonly [string, (path: string) => void])[] = [
  ["a FIFO", (p) => execFileSync("mkfifo", [p])],
  ["a device", (p) => symlinkSync("/dev/zero", p)],
  ["a link loop", (p) => symlinkSync(p, p)],
  ["a directory", (p) => mkdirSync(p)],
];

/** Replaces whatever is at `path` by `make`'s odd file. */
export function putOddFile(path: string, make: (path: string) => void): void {
  rmSync(path, { recursive: true, force: true });
  make(path);
}
