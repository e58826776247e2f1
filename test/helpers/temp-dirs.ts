// Fresh temporary folders for a test file, all removed after its last test (passed or failed).
import { afterAll } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A maker of fresh folders named `<prefix>XXXXXX` under the system's temporary folder; call at a file's top level. */
export function tempDirs(prefix: string): () => string {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return () => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };
}

/** One temporary folder for a test file, and fresh paths inside it. */
export interface TempRoot {
  /** The folder, `<prefix>XXXXXX` under the system's temporary folder, made on first use. */
  readonly root: string;
  /** A path in the folder, `<name>-<n>` with n counting up across the file, that nothing has made yet. */
  fresh(name?: string): string;
}

/**
 * One folder for a test file (mkdtemp's, so files running beside it in other workers never share it),
 * removed with all in it after the file's last test; call at a file's top level. Its `fresh()` paths
 * are not made: for what creates its own folder (a bank opened with `create: true`) or a copy's target.
 */
export function tempRoot(prefix: string): TempRoot {
  let root: string | undefined;
  let n = 0;
  afterAll(() => {
    if (root !== undefined) rmSync(root, { recursive: true, force: true });
  });
  const made = (): string => (root ??= mkdtempSync(join(tmpdir(), prefix)));
  return {
    get root() {
      return made();
    },
    fresh: (name = "bank") => join(made(), `${name}-${n++}`),
  };
}
