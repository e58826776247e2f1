// A process for the lock-break test (test/unit/bank-lock-break.test.ts): takes the DirLock at <lock>
// (src/bank/lock.ts), and while it holds it creates <holder> exclusively (a second holder at the same
// time finds it there), waits <holdMs>, removes it and releases the lock. Prints one JSON line:
// { took, overlap, code }. Bundled with esbuild by the test and run with node.
import { openSync, closeSync, unlinkSync } from "node:fs";
import { DirLock } from "../../src/bank/lock.js";

const [lockPath, holder, holdMs, startAt] = process.argv.slice(2);
// all children start their take at the same moment
await new Promise((r) => setTimeout(r, Math.max(0, Number(startAt) - Date.now())));
let out: { took: boolean; overlap: boolean; code?: string };
try {
  const lock = await DirLock.acquire(lockPath, "the test bank");
  let overlap = false;
  try {
    closeSync(openSync(holder, "wx"));
  } catch {
    overlap = true;
  }
  await new Promise((r) => setTimeout(r, Number(holdMs)));
  if (!overlap) unlinkSync(holder);
  await lock.release();
  out = { took: true, overlap };
} catch (err) {
  out = { took: false, overlap: false, code: (err as { code?: string }).code ?? String(err) };
}
process.stdout.write(JSON.stringify(out) + "\n");
