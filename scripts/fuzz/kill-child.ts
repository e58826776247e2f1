/**
 * A kill trial's child (kill-trials.ts): opens a Router on stories260K with seeded random projections
 * and installs seeded random skills in batches (commitEvery 1, two at a time), uninstalling one now
 * and then, until it is killed. It prints `start <skill json>` before a batch, `committed <id> <hash>`
 * for each skill once the install call that staged it has resolved (so it is durable), and
 * `uninstalling <id>` before an uninstall and `uninstalled <id>` once it has resolved.
 *
 * With a mode other than `timer`, it kills itself with SIGKILL at a syscall boundary: right before or
 * right after the Nth fsync (FileHandle.sync) or rename, counted from the router's open.
 *   vite-node scripts/fuzz/kill-child.ts <bank> <projections seed> <skills seed> <timer|before-sync|after-sync|before-rename|after-rename> <N>
 */
import fsp from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";

const [dir, projSeed, skillSeed, mode, nth] = process.argv.slice(2);
let armed = false;
let count = 0;
const boundary = (when: "before" | "after", what: "sync" | "rename") => {
  if (armed && mode === `${when}-${what}` && ++count === Number(nth)) process.kill(process.pid, "SIGKILL");
};
if (mode !== "timer") {
  // Patch fsync and rename before the package is imported (its named imports bind to these).
  const probe = await fsp.open(process.execPath, "r");
  const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
  await probe.close();
  const sync = proto.sync;
  proto.sync = async function (this: unknown) {
    boundary("before", "sync");
    await sync.call(this);
    boundary("after", "sync");
  };
  const rename = fsp.rename;
  (fsp as { rename: typeof fsp.rename }).rename = async (a, b) => {
    boundary("before", "rename");
    await rename(a, b);
    boundary("after", "rename");
  };
  syncBuiltinESMExports();
}
const { Model, Projections, Router } = await import("../../src/index.js");
const { mulberry32 } = await import("../../src/util/prng.js");
const { randomSkill } = await import("../../test/helpers/lexicon-bank.js");
const { STORIES } = await import("./targets.js");

const model = await Model.load(STORIES, { contextSize: 1024, sequences: 4, threads: 1 });
const projections = await Projections.random(model, { seed: Number(projSeed), dim: 32 });
const router = await Router.open(model, { projections, bankDir: dir, skillBudget: 128, create: true });
const r = mulberry32(Number(skillSeed));
armed = true;
process.stdout.write("ready\n");
for (let round = 0; ; round++) {
  const have = router.list().map((s) => s.id);
  const batch = Array.from({ length: 1 + Math.floor(r() * 4) }, (_, i) => randomSkill(r, have.length > 0 && r() < 0.3 ? have[Math.floor(r() * have.length)] : `k${skillSeed}-${round}-${i}`));
  const unique = [...new Map(batch.map((s) => [s.id, s])).values()];
  for (const s of unique) process.stdout.write(`start ${JSON.stringify(s)}\n`);
  const rep = await router.install(unique, { commitEvery: 1, concurrency: 2 });
  const done = new Set([...rep.installed, ...rep.unchanged]);
  for (const s of unique) process.stdout.write(done.has(s.id) ? `committed ${s.id} ${s.contentHash}\n` : `refused ${s.id}\n`);
  if (have.length > 3 && r() < 0.4) {
    const id = have[Math.floor(r() * have.length)];
    process.stdout.write(`uninstalling ${id}\n`);
    await router.uninstall(id);
    process.stdout.write(`uninstalled ${id}\n`);
  }
}
