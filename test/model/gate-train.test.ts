// The gate's features on a real model (stories260K, random projections, 20 gold skills): the batched
// every-position scores equal a router.live() context appended up to each position; a gate file
// loads against the router it was trained for and is refused by another; selectLive commits to the
// live shortlist's ruling winner, or to nothing when abstention says so.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import { loadTasks } from "../../lab/eval/tasks.js";
import { fitGate } from "../../lab/eval/gate-fit.js";
import { Gate, saveGate } from "../../src/route/gate.js";
import { collectGateFeatures, labelledRows, tokenizeTrajectory } from "../../lab/gate/gate-train.js";
import { selectLive } from "../../src/route/firing.js";
import { buildTrajectories } from "../../lab/gate/trajectories.js";
import { sharedDir, storiesPath, needsShared, SHARED } from "../helpers/paths.js";
import { freshSeed } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";

const NO_SHARED = needsShared("stories260K and SWE-Skills-Bench's tasks for gate trajectories", SHARED.stories, SHARED.bench);

const bench = join(sharedDir, "data", "swe-skills-bench");

describe.skipIf(NO_SHARED)("gate features over router.live() (stories260K, random projections)", () => {
  let model: Model;
  let router: Router;
  let dir: string;
  const seed = freshSeed();
  beforeAll(async () => {
    model = await Model.load(storiesPath, { contextSize: 2048, threads: 1 });
    const projections = await Projections.random(model, { seed, dim: 64 });
    dir = mkdtempSync(join(tmpdir(), "gavel-gate-train-"));
    router = await Router.open(model, { projections, bankDir: join(dir, "bank"), skillBudget: 96 });
    await router.install(join(bench, "skills.jsonl"), { limit: 20 });
  }, 600_000);
  afterAll(async () => {
    await router?.close();
    await model?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const trajectories = async () => buildTrajectories(await loadTasks(join(bench, "tasks.jsonl")), { batches: [1], seed: 3, maxTasks: 2, negatives: 1, maxTaskChars: 120, noise: [1, 1] });

  it("batched every-position scores equal a live context appended up to each position", async () => {
    const ts = await trajectories();
    for (const t of ts) expect(tokenizeTrajectory(model, t).tokens.length).toBeLessThanOrEqual(2048);
    const a = await collectGateFeatures(router, ts, { method: "batched", allPositions: (t) => t.needsSkill === false, seed: 5 });
    const b = await collectGateFeatures(router, ts, { method: "live", allPositions: (t) => t.needsSkill === false, seed: 5 });
    expect(a.skipped).toEqual([]);
    for (const [i, fa] of a.features.entries()) {
      const fb = b.features[i];
      expect(Array.from(fa.positions)).toEqual(Array.from(fb.positions));
      expect(Array.from(fa.labels)).toEqual(Array.from(fb.labels));
      for (let k = 0; k < fa.rows.length; k++) expect(Math.abs(fa.rows[k] - fb.rows[k]), `seed ${seed} ${fa.id} ${k}`).toBeLessThanOrEqual(1e-4 * Math.max(1, Math.abs(fb.rows[k])));
    }
    // positives carry 1s at the end of the decision point, negatives none
    const pos = a.features.find((f) => f.needsSkill)!;
    expect(pos.labels[pos.labels.length - 1]).toBe(1);
    expect(a.features.filter((f) => !f.needsSkill).every((f) => f.labels.every((y) => y === 0))).toBe(true);
  });

  it("a trained gate file loads for its router and is refused by another projections", async () => {
    const { features } = await collectGateFeatures(router, await trajectories(), { seed: 2 });
    const { rows, labels } = labelledRows(features);
    const fit = fitGate(rows, labels, { lambda: 1 });
    const path = join(dir, "gate.json");
    await saveGate(path, fit.model, { stateLayer: router.projections.layer, glanceLayer: router.projections.layer, model: router.projections.model, projections: router.projections.hash, librarySize: 20 });
    const gate = await Gate.load(path, { router });
    expect(gate.stateDim).toBe(model.info.nEmbd);
    expect(Array.from(gate.model.weights)).toEqual(Array.from(fit.model.weights));
    const other = await Projections.random(model, { seed: seed + 1, dim: 64 });
    await expectCode(Gate.load(path, { router: { model, projections: other } }), "PROJECTIONS_MISMATCH");
  });

  it("selectLive: the ruling's winner of the live shortlist, or nothing when the winner's V < 0", async () => {
    const [t] = (await trajectories()).filter((x) => x.needsSkill);
    const tt = tokenizeTrajectory(model, t);
    const live = router.live();
    await live.append(await model.hiddenStates(tt.tokens, live.layer));
    const on = await selectLive(live, t.messages);
    const off = await selectLive(live, t.messages, { abstain: false });
    // without abstention: the first of the ruled live shortlist, which starts at the live leader
    expect(off.skill).toBe(off.shortlist[0].skill);
    expect(off.shortlist.map((c) => c.skill)).toContain(live.top(1)[0].skill);
    expect(off.record?.body.length).toBeGreaterThan(0);
    expect(off.load?.id).toBe(off.skill);
    // with it (no calibrated model in random projections): nothing exactly when V < 0
    expect(on.shortlist[0].skill).toBe(off.shortlist[0].skill);
    expect(on.abstained).toBe(on.shortlist[0].V < 0);
    expect(on.skill).toBe(on.shortlist[0].V < 0 ? null : on.shortlist[0].skill);
    expect(on.record === null).toBe(on.skill === null);
    await expectCode(selectLive(router.live(), t.messages), "INVALID_ARGUMENT");
  });
});
