/**
 * What `gavel serve --watch`'s start sync costs (src/serve/watch.ts: every watched root is synced once
 * when the watcher starts). n skill folders in one root, each a short SKILL.md, are installed with the
 * embedded default pair (skill budget 128), then a watcher starts over them three times: with nothing
 * changed, with 1% of the SKILL.md files edited, and with nothing changed again. Per start: the time
 * until the start sync ends (the default 500 ms debounce included), the longest gap between ticks of a
 * 10 ms interval timer after the watcher's construction (how long the event loop was held, which is
 * what a server's requests wait for), the construction's own time (since the watches are set up off
 * the construction, a slice at a time, near 0; before, all of them), the time until the folders are
 * watched (`started`), and what the sync did.
 *
 *   npm run bench -- watch-start [n = 1000,5000]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model } from "../src/model/Model.js";
import { Router } from "../src/route/Router.js";
import { printHeader, skillText, writeSkillFolders } from "./skill-folders.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../src/defaults.js";
import { SkillWatcher, type WatchSync } from "../src/serve/watch.js";
import { loopHold } from "./loop-hold.js";

const sizes = (process.argv[2] ?? "1000,5000").split(",").map(Number);
const model = await Model.load(DEFAULT_MODEL, { contextSize: 512 });
printHeader("watch-start", ["skills", "install", "start", "the watcher's construction", "watching after", "start sync ends", "longest event-loop hold after the construction", "the sync did"]);

async function start(router: Router, root: string): Promise<{ ctor: number; watched: number; ms: number; hold: number; did: string }> {
  const loop = loopHold();
  const syncs: WatchSync[] = [];
  const t0 = performance.now();
  const w = new SkillWatcher(router, { report: (s) => syncs.push(s), discover: { home: join(root, "home"), projectDir: root } });
  const ctor = performance.now() - t0;
  loop.restart(); // the construction is timed apart
  await w.started;
  const watched = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 20)); // the start sync is scheduled, not yet run
  await w.idle();
  const ms = performance.now() - t0;
  const hold = loop.stop();
  await w.close();
  const n = (k: keyof WatchSync) => syncs.reduce((a, s) => a + s[k].length, 0);
  return { ctor, watched, ms, hold, did: `${n("updated")} updated, ${n("installed")} installed, ${n("uninstalled")} uninstalled, ${n("kept")} kept` };
}

for (const n of sizes) {
  const root = mkdtempSync(join(tmpdir(), "gavel-watch-start-"));
  try {
    const skills = join(root, "skills");
    mkdirSync(join(root, "home"));
    writeSkillFolders(skills, n);
    const router = await Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: join(root, "bank"), skillBudget: 128 });
    const t0 = performance.now();
    await router.install(skills);
    const install = performance.now() - t0;
    const row = (what: string, r: { ctor: number; watched: number; ms: number; hold: number; did: string }) =>
      console.log(`| ${n} | ${(install / 1000).toFixed(1)} s | ${what} | ${r.ctor.toFixed(0)} ms | ${r.watched.toFixed(0)} ms | ${r.ms.toFixed(0)} ms | ${r.hold.toFixed(1)} ms | ${r.did} |`);
    row("nothing changed", await start(router, root));
    const edits = Math.max(1, Math.round(n / 100));
    for (let i = 0; i < edits; i++) writeFileSync(join(skills, `skill-${i * 100}`, "SKILL.md"), skillText(i * 100, ", edited"));
    row(`${edits} edited`, await start(router, root));
    row("nothing changed, again", await start(router, root));
    // the pass each sync ends with (the folders to watch, worked out again over every installed skill)
    const w = new SkillWatcher(router, { discover: { home: join(root, "home"), projectDir: root } });
    await w.idle();
    const t1 = performance.now();
    w.refresh();
    console.log(`| ${n} | | one refresh (the pass each sync ends with), on the thread | ${(performance.now() - t1).toFixed(0)} ms | | | | |`);
    // the same as a server runs it after a write: the file system read off the thread first; with no
    // skill installed since the last pass (the watcher's list of installed skills kept), and after one
    // skill was edited and installed again (the list worked out anew)
    const ahead = async (what: string) => {
      const loop = loopHold();
      const t2 = performance.now();
      await w.refreshAhead();
      const ms = performance.now() - t2;
      console.log(`| ${n} | | one refreshAhead (a server's, after a write), its reads off the thread, ${what} | ${ms.toFixed(0)} ms | | | ${loop.stop().toFixed(1)} ms | |`);
    };
    await ahead("nothing installed since");
    writeFileSync(join(skills, "skill-1", "SKILL.md"), skillText(1, ", edited again"));
    await router.install(join(skills, "skill-1"));
    await ahead("a skill installed again first");
    await w.close();
    await router.close();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
await model.dispose();
