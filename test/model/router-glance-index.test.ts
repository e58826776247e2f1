// The route's glance through the bank's glance index (GAVEL_GLANCE_INDEX, src/route/glance-index-use.ts)
// over the 24 example skills with the embedded pair: the index is trained at install and written into
// the bank folder; every skill the pruned glance scores has the exact glance's g bit for bit, and
// a skill it leaves out reads g = 0; the index is reopened from its file by a second router, and
// follows an uninstall.
import { describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { GLANCE_INDEX_FILE } from "../../src/route/glance-index-use.js";
import { repoRoot } from "../helpers/paths.js";
import { withEnv } from "../helpers/env.js";
import { suiteRouter } from "../helpers/model-suite.js";

const tasks = (JSON.parse(readFileSync(join(repoRoot, "examples", "everyday-tasks.json"), "utf8")) as { task: string }[]).map((t) => t.task).slice(0, 5);

function withIndex<T>(mode: "on" | "off", f: () => Promise<T>): Promise<T> {
  return withEnv({ GAVEL_GLANCE_INDEX: mode }, f);
}

describe("the glance index in the route", () => {
  const fx = suiteRouter("gavel-glance-index-", async () => {
    await withIndex("on", async () => expect((await fx.router.install(join(repoRoot, "examples", "skills"))).failed).toEqual([]));
  });

  it("is trained at install and written into the bank folder", () => {
    expect(existsSync(join(fx.bankDir, GLANCE_INDEX_FILE))).toBe(true);
  });

  it("gives every skill it scores the exact glance's g, and the others 0", async () => {
    let scored = 0;
    for (const t of tasks) {
      const exact = await withIndex("off", () => fx.router.glance(t, { topK: 24 }));
      const pruned = await withIndex("on", () => fx.router.glance(t, { topK: 24 }));
      expect(pruned.map((h) => h.skill).sort()).toEqual(exact.map((h) => h.skill).sort());
      const g = new Map(exact.map((h) => [h.skill, h.g]));
      for (const h of pruned) {
        if (h.g !== 0) {
          expect(h.g, `${t}: ${h.skill}`).toBe(g.get(h.skill));
          scored++;
        }
      }
      // the route's choice reads the same first stage
      const a = await withIndex("off", () => fx.router.route(t, { verdict: false, abstain: false }));
      const b = await withIndex("on", () => fx.router.route(t, { verdict: false, abstain: false }));
      if (pruned[0].g === exact[0].g) expect(b.skill).toBe(a.skill);
    }
    expect(scored).toBeGreaterThan(0);
  });

  it("is read back from its file by another router, and follows an uninstall", async () => {
    await fx.router.close();
    fx.router = await fx.open();
    const first = await withIndex("on", () => fx.router.glance(tasks[0], { topK: 24 }));
    expect(await fx.router.uninstall(first[0].skill)).toBe(true);
    const after = await withIndex("on", () => fx.router.glance(tasks[0], { topK: 24 }));
    expect(after.map((h) => h.skill)).not.toContain(first[0].skill);
    expect(after.length).toBe(23);
  });
});
