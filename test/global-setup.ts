// Runs once before the test files: points every temporary folder of the run (the test files', their
// child processes', the generated fixtures) into one folder that the run removes when it ends, then
// writes the generated fixtures that test files and their child processes read by a fixed path.
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export default async function setup(): Promise<() => void> {
  // os.tmpdir() reads TMPDIR on each call, and the test processes start after this with this
  // environment; a suite running beside this one has its own folder
  const root = mkdtempSync(join(tmpdir(), "gavel-test-run-"));
  // as the system's tmp: sticky and open to all (the permission tests run a child as another user,
  // whose tools write their own temporary files); each folder made in it is mkdtemp's, its owner's only
  chmodSync(root, 0o1777);
  process.env.TMPDIR = root;
  const { tinyLlamaPath } = await import("./fixtures/tiny-llama.js");
  await tinyLlamaPath();
  return () => rmSync(root, { recursive: true, force: true });
}
