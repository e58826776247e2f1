// A sync of many skill folders at once (src/serve/watch.ts's syncFolders): their SKILL.md files are
// read several at a time and taken in the order the folders were given, and an installed skill is
// compared with the content hash its bank entry records (Router.installedState, the entry alone).
// Over a random mix of folders (edited, unchanged, emptied, broken, new, without a skill) in a random
// order, the sync's report names each in that order, and only what changed is written. The watcher
// keeps its list of installed folder skills until the router's list state changes: a skill installed
// or uninstalled by another caller of the router is seen at the watcher's next refresh.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import { SkillWatcher } from "../../src/serve/watch.js";
import { tinyLlamaPath } from "../fixtures/tiny-llama.js";

const skillText = (name: string, what: string) => `---\nname: ${name}\ndescription: ${JSON.stringify(`Use for ${name} tasks: ${what}.`)}\n---\n# ${name}\n\nSteps for ${what}.\n`;

/** A seeded generator of integers in [0, n). */
function rng(seed: number): (n: number) => number {
  let s = seed >>> 0;
  return (n) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
}

type Kind = "edited" | "same" | "emptied" | "broken" | "fresh" | "no-skill";
const KINDS: Kind[] = ["edited", "same", "emptied", "broken", "fresh", "no-skill"];

describe("a watcher's sync of many folders", () => {
  let root: string;
  let model: Model;
  let projections: Projections;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "gavel-watch-read-"));
    model = await Model.load(await tinyLlamaPath(), { contextSize: 512, threads: 1 });
    projections = await Projections.random(model, { seed: 7, dim: 16 });
  }, 120_000);

  afterAll(async () => {
    await model?.dispose();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it.each([1, 2])("reports every folder in the order given, over a random mix (seed %i)", async (seed) => {
    const next = rng(seed * 7919);
    const dir = join(root, `s${seed}`);
    const skills = join(dir, "skills");
    const kinds = Array.from({ length: 48 }, () => KINDS[next(KINDS.length)]!);
    const name = (i: number) => `skill-${seed}-${i}`;
    kinds.forEach((k, i) => {
      mkdirSync(join(skills, name(i)), { recursive: true });
      if (k !== "fresh" && k !== "no-skill") writeFileSync(join(skills, name(i), "SKILL.md"), skillText(name(i), `the work of part ${i}`));
    });
    const router = await Router.open(model, { projections, bankDir: join(dir, "bank"), skillBudget: 256 });
    const watcher = new SkillWatcher(router, { debounceMs: 600_000, maxWaitMs: 600_000, discover: { home: join(dir, "home"), projectDir: dir } });
    try {
      await router.install(skills);
      const before = new Map(router.list().map((s) => [s.id, s]));
      for (const [id] of before) expect(router.installedState(id)).toEqual({ contentHash: (await router.get(id)).contentHash, builtOtherwise: false });
      expect(router.installedState("no-such-skill")).toBeUndefined();
      kinds.forEach((k, i) => {
        const file = join(skills, name(i), "SKILL.md");
        if (k === "edited") writeFileSync(file, skillText(name(i), `the work of part ${i}, edited`));
        else if (k === "emptied") unlinkSync(file);
        else if (k === "broken") writeFileSync(file, "---\nname: [unclosed\n---\nbody\n");
        else if (k === "fresh") writeFileSync(file, skillText(name(i), `new work ${i}`));
      });
      const order = kinds.map((_, i) => i);
      for (let i = order.length - 1; i > 0; i--) {
        const j = next(i + 1);
        [order[i], order[j]] = [order[j]!, order[i]!];
      }
      const idsOf = (k: Kind) => order.filter((i) => kinds[i] === k).map(name);
      const done = await watcher.syncFolders(order.map((i) => join(skills, name(i))));
      expect(done.updated).toEqual(idsOf("edited"));
      expect(done.installed).toEqual(idsOf("fresh"));
      expect(done.uninstalled).toEqual(idsOf("emptied"));
      expect(done.kept.map((k) => k.id)).toEqual(idsOf("broken"));
      expect(done.failed).toEqual([]);
      const after = new Map(router.list().map((s) => [s.id, s]));
      expect([...after.keys()].sort()).toEqual([...idsOf("edited"), ...idsOf("same"), ...idsOf("broken"), ...idsOf("fresh")].sort());
      for (const id of idsOf("edited")) expect((await router.get(id)).body).toContain("edited");
      for (const id of idsOf("same")) expect(router.installedState(id)).toEqual({ contentHash: (await router.get(id)).contentHash, builtOtherwise: false });
    } finally {
      await watcher.close();
      await router.close();
    }
  }, 180_000);

  it("watches what another caller of the router installs or uninstalls at its next refresh", async () => {
    const dir = join(root, "others");
    const mine = join(dir, "mine"), theirs = join(dir, "theirs");
    for (const [at, n] of [[mine, "one"], [theirs, "two"]] as const) {
      mkdirSync(join(at, n), { recursive: true });
      writeFileSync(join(at, n, "SKILL.md"), skillText(n, `the ${n} work`));
    }
    const router = await Router.open(model, { projections, bankDir: join(dir, "bank"), skillBudget: 256 });
    await router.install(mine);
    const watcher = new SkillWatcher(router, { debounceMs: 600_000, maxWaitMs: 600_000, discover: { home: join(dir, "home"), projectDir: dir } });
    try {
      await watcher.started;
      expect(watcher.folders.sort()).toEqual([mine, join(mine, "one")].sort());
      await router.install(theirs); // not through the watcher
      watcher.refresh();
      expect(watcher.folders.sort()).toEqual([mine, join(mine, "one"), theirs, join(theirs, "two")].sort());
      await router.uninstall("one");
      watcher.refresh();
      // a root whose skills were uninstalled elsewhere is no root any more (the watcher did not uninstall them)
      expect(watcher.folders.sort()).toEqual([theirs, join(theirs, "two")].sort());
    } finally {
      await watcher.close();
      await router.close();
    }
  }, 120_000);
});
