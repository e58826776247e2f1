// The glance's idf row weights (the projections' glanceRowWeights, GAVEL_GLANCE_ROW_WEIGHTS over
// them; src/route/context.ts rowWeights, Library.tokenIdf) over the 24 example skills with the
// embedded pair: each token's weight is ln((N + 1) / (df + 0.5)) over the routable skills' key
// tokens, as a plain count over the bank's manifest gives it (a token no skill keeps: df 0), the
// table follows an uninstall, a route's glance under them differs from the uniform one while ranking
// every skill with finite scores, and the projections' setting is what a route uses unless the
// environment overrides it. A live route's rows and vote follow GAVEL_LIVE_ROW_WEIGHTS and
// GAVEL_LIVE_VOTE_SHARE (against a plain reference on fresh random tokens); under the decay a live
// route reads the rendering's last 768 tokens, whose rows carry all but 2^-12 of the vote.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Router } from "../../src/index.js";
import { DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { Library } from "../../src/bank/library.js";
import { Projections } from "../../src/projections/projections.js";
import { encodeQueries, LIVE_DECAY_WINDOW, liveRowWeights, rowWeights } from "../../src/route/context.js";
import { decayWeights } from "../../src/kernels/kernels.js";
import { renderChat } from "../../src/render/index.js";
import type { RouterParts } from "../../src/route/parts.js";
import { repoRoot } from "../helpers/paths.js";
import { withEnv } from "../helpers/env.js";
import { suiteRouter } from "../helpers/model-suite.js";

const tasks = (JSON.parse(readFileSync(join(repoRoot, "examples", "demo-tasks.json"), "utf8")) as { task: string }[]).map((t) => t.task);

/** The plain reference: df of each token over the manifest's routable entries. */
function referenceIdf(bankDir: string): { n: number; df: Map<number, number> } {
  const m = JSON.parse(readFileSync(join(bankDir, "manifest.json"), "utf8")) as { entries: { keyTokens: number[]; disableModelInvocation?: boolean }[] };
  const df = new Map<number, number>();
  let n = 0;
  for (const e of m.entries) {
    if (e.disableModelInvocation) continue;
    n++;
    for (const t of new Set(e.keyTokens)) df.set(t, (df.get(t) ?? 0) + 1);
  }
  return { n, df };
}

describe("the glance's idf row weights", () => {
  const fx = suiteRouter("gavel-row-weights-", async () => {
    expect((await fx.router.install(join(repoRoot, "examples", "skills"))).failed).toEqual([]);
  });

  it("weighs each token ln((N + 1) / (df + 0.5)) over the routable skills' key tokens, following an uninstall", async () => {
    const projections = await Projections.load(DEFAULT_PROJECTIONS);
    for (const round of [0, 1]) {
      if (round === 1) expect(await fx.router.uninstall((await fx.router.list())[3].id)).toBe(true);
      const library = await Library.openSnapshot(fx.bankDir, projections);
      const { n, df } = referenceIdf(fx.bankDir);
      expect(n).toBe(round === 0 ? 24 : 23);
      const parts = { library } as unknown as RouterParts;
      const tokens = [...df.keys(), 0, 1, 31_999, 1 << 20]; // some ids no skill keeps, one past every table
      const w = rowWeights(parts, tokens, "idf");
      tokens.forEach((t, i) => expect(w[i]).toBeCloseTo(Math.log((n + 1) / ((df.get(t) ?? 0) + 0.5)), 5));
      expect(Math.min(...w)).toBeGreaterThan(0);
      expect(Array.from(rowWeights(parts, tokens, "uniform"))).toEqual(tokens.map(() => 1));
      // the table is kept while the library does not change
      expect(library.tokenIdf()).toBe(library.tokenIdf());
      await library.close();
    }
  });

  it("a route's glance under them ranks every skill with finite scores, in another order than the uniform vote's", async () => {
    let differ = 0;
    for (const t of tasks) {
      const uniform = await withEnv({ GAVEL_GLANCE_ROW_WEIGHTS: "uniform" }, () => fx.router.glance(t, { topK: 50 }));
      const idf = await withEnv({ GAVEL_GLANCE_ROW_WEIGHTS: "idf" }, () => fx.router.glance(t, { topK: 50 }));
      expect(idf.map((h) => h.skill).sort()).toEqual(uniform.map((h) => h.skill).sort());
      for (const h of idf) expect(Number.isFinite(h.g)).toBe(true);
      if (idf.map((h) => h.skill).join() !== uniform.map((h) => h.skill).join()) differ++;
    }
    expect(differ).toBeGreaterThan(0);
  });

  it("follows the projections' glanceRowWeights, and the environment over them", async () => {
    const shipped = await Projections.load(DEFAULT_PROJECTIONS);
    const t = tasks[0];
    const byEnv = new Map<string, string>();
    for (const mode of ["uniform", "idf"] as const) {
      byEnv.set(mode, JSON.stringify(await withEnv({ GAVEL_GLANCE_ROW_WEIGHTS: mode }, () => fx.router.glance(t, { topK: 24 }))));
    }
    expect(byEnv.get("idf")).not.toBe(byEnv.get("uniform"));
    // the shipped router with no override: the shipped file's own setting
    expect(JSON.stringify(await withEnv({ GAVEL_GLANCE_ROW_WEIGHTS: undefined }, () => fx.router.glance(t, { topK: 24 })))).toBe(byEnv.get(shipped.glanceRowWeights));
    for (const mode of ["uniform", "idf"] as const) {
      const other = await Router.open(fx.model, { projections: shipped.withCalibration({ glanceRowWeights: mode }), bankDir: fx.bankDir, readOnly: true, skillBudget: 512 });
      try {
        expect(JSON.stringify(await withEnv({ GAVEL_GLANCE_ROW_WEIGHTS: undefined }, () => other.glance(t, { topK: 24 }))), mode).toBe(byEnv.get(mode));
        // the environment overrides the file
        const flip = mode === "idf" ? "uniform" : "idf";
        expect(JSON.stringify(await withEnv({ GAVEL_GLANCE_ROW_WEIGHTS: flip }, () => other.glance(t, { topK: 24 }))), flip).toBe(byEnv.get(flip));
      } finally {
        await other.close();
      }
    }
  });

  it("a live route's rows weigh as GAVEL_LIVE_ROW_WEIGHTS says (the decay, times idf, or idf), its vote as GAVEL_LIVE_VOTE_SHARE; a written task's are unchanged", async () => {
    const projections = await Projections.load(DEFAULT_PROJECTIONS);
    const library = await Library.openSnapshot(fx.bankDir, projections);
    try {
      const { n, df } = referenceIdf(fx.bankDir);
      const parts = { library } as unknown as RouterParts;
      // fresh random token ids, some no skill keeps
      const keyed = [...df.keys()];
      let seed = 12345;
      const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
      const tokens = Array.from({ length: 300 }, () => (rand() < 0.8 ? keyed[Math.floor(rand() * keyed.length)] : Math.floor(rand() * 32_000)));
      const idf = (t: number) => Math.log((n + 1) / ((df.get(t) ?? 0) + 0.5));
      const decay = (i: number) => Math.max(2 ** (-(tokens.length - 1 - i) / 64), 2 ** -149);
      const reference = { decay, "idf-decay": (i: number) => decay(i) * idf(tokens[i]), idf: (i: number) => idf(tokens[i]) };
      for (const mode of ["decay", "idf-decay", "idf"] as const) {
        const w = liveRowWeights(parts, tokens, mode);
        tokens.forEach((_, i) => expect(Math.abs(w[i] - reference[mode](i)), `${mode} ${i}`).toBeLessThanOrEqual(1e-5 * Math.max(1, reference[mode](i))));
        // the environment's choice is the default
        expect(Array.from(await withEnv({ GAVEL_LIVE_ROW_WEIGHTS: mode }, async () => liveRowWeights(parts, tokens)))).toEqual(Array.from(w));
      }
    } finally {
      await library.close();
    }
    // through a route: a chat's voting rows weigh the decay times idf of their tokens, the system rows 0; a written task is untouched
    const probe = fx.router.live();
    const routerParts = probe.routerParts;
    probe.dispose();
    const chat = [{ role: "system" as const, content: "Keep changes small." }, { role: "user" as const, content: tasks[1] }];
    const dq = await withEnv({ GAVEL_LIVE_ROW_WEIGHTS: "decay" }, () => encodeQueries(routerParts, chat, true));
    const iq = await withEnv({ GAVEL_LIVE_ROW_WEIGHTS: "idf-decay" }, () => encodeQueries(routerParts, chat, true));
    const idfRows = rowWeights(routerParts, iq.tokens, "idf");
    expect(iq.weights.length).toBe(dq.weights.length);
    let voting = 0;
    dq.weights.forEach((w, i) => {
      expect(Math.abs(iq.weights[i] - w * idfRows[i])).toBeLessThanOrEqual(1e-6 * Math.max(1, w * idfRows[i]));
      if (w > 0) voting++;
    });
    expect(voting).toBeGreaterThan(5);
    expect(voting).toBeLessThan(dq.weights.length);
    const written = await withEnv({ GAVEL_LIVE_ROW_WEIGHTS: "decay", GAVEL_LIVE_VOTE_SHARE: "off" }, () => fx.router.glance(tasks[1], { topK: 24 }));
    expect(JSON.stringify(await withEnv({ GAVEL_LIVE_ROW_WEIGHTS: "idf", GAVEL_LIVE_VOTE_SHARE: "on" }, () => fx.router.glance(tasks[1], { topK: 24 })))).toBe(JSON.stringify(written));
  });

  it("a live route under the decay reads the rendering's last 768 tokens, the rows further back weighing at most 2^-12 of the vote; under idf the task budget", async () => {
    expect(LIVE_DECAY_WINDOW).toBe(768);
    // the geometric tail, summed plainly over the kernel's weights: rows 768 or more back
    for (const n of [769, 1000, 2500, 9000]) {
      const w = decayWeights(n);
      let all = 0, tail = 0;
      w.forEach((x, i) => ((all += x), n - 1 - i >= LIVE_DECAY_WINDOW && (tail += x)));
      expect(tail / all).toBeGreaterThan(0);
      expect(tail / all).toBeLessThanOrEqual(2 ** -12 * (1 + 1e-6));
    }
    const probe = fx.router.live();
    const parts = probe.routerParts;
    probe.dispose();
    const chat = [
      { role: "system" as const, content: "Keep changes small." },
      ...Array.from({ length: 150 }, (_, i) => ({ role: (i % 2 ? "assistant" : "user") as "user", content: tasks[i % tasks.length] })),
      { role: "user" as const, content: tasks[1] },
    ];
    const whole = fx.model.tokenize(renderChat(fx.model.info.chatTemplate ?? null, chat), { special: true, addBos: fx.model.info.addBos });
    expect(whole.length).toBeGreaterThan(parts.taskBudget);
    expect(parts.taskBudget).toBeGreaterThan(LIVE_DECAY_WINDOW);
    const decayed = await withEnv({ GAVEL_LIVE_ROW_WEIGHTS: "decay" }, () => encodeQueries(parts, chat, true));
    expect(Array.from(decayed.tokens)).toEqual(Array.from(whole.subarray(whole.length - LIVE_DECAY_WINDOW)));
    expect(decayed.truncation).toEqual({ totalTokens: whole.length, keptTokens: LIVE_DECAY_WINDOW, droppedTokens: whole.length - LIVE_DECAY_WINDOW, kept: "end" });
    for (const mode of ["idf", "idf-decay"]) {
      const q = await withEnv({ GAVEL_LIVE_ROW_WEIGHTS: mode }, () => encodeQueries(parts, chat, true));
      expect(Array.from(q.tokens)).toEqual(Array.from(whole.subarray(whole.length - parts.taskBudget)));
    }
    // what a route reports; a chat within the window is read whole
    expect((await fx.router.route(chat, { abstain: false })).truncation).toMatchObject({ keptTokens: LIVE_DECAY_WINDOW, kept: "end" });
    expect((await fx.router.route(chat.slice(-3), { abstain: false })).truncation).toBeUndefined();
  });

  it("a vote share widens each written task token's vote (the projections', or GAVEL_GLANCE_VOTE_SHARE over them); live contexts keep the paper's k", async () => {
    const shipped = await Projections.load(DEFAULT_PROJECTIONS);
    const off = { GAVEL_GLANCE_VOTE_SHARE: undefined, GAVEL_GLANCE_ROW_WEIGHTS: "idf" };
    const paper = await Router.open(fx.model, { projections: shipped.withCalibration({ glanceVoteShare: 0 }), bankDir: fx.bankDir, readOnly: true, skillBudget: 512 });
    const wide = await Router.open(fx.model, { projections: shipped.withCalibration({ glanceVoteShare: 0.5 }), bankDir: fx.bankDir, readOnly: true, skillBudget: 512 });
    try {
      const n = (await paper.list()).length;
      let differ = 0, liveDiffer = 0;
      for (const t of tasks.slice(0, 4)) {
        const a = JSON.stringify(await withEnv(off, () => paper.glance(t, { topK: n })));
        const b = JSON.stringify(await withEnv(off, () => wide.glance(t, { topK: n })));
        if (a !== b) differ++;
        // the environment's share over the file's: the paper's router at 0.5 is the wide one, the wide one at 0 the paper's
        expect(JSON.stringify(await withEnv({ ...off, GAVEL_GLANCE_VOTE_SHARE: "0.5" }, () => paper.glance(t, { topK: n })))).toBe(b);
        expect(JSON.stringify(await withEnv({ ...off, GAVEL_GLANCE_VOTE_SHARE: "0" }, () => wide.glance(t, { topK: n })))).toBe(a);
        // each token now votes for round(0.5·N) skills, so more skills hold a vote (g > 0)
        const voted = (x: string) => (JSON.parse(x) as { g: number }[]).filter((h) => h.g > 0).length;
        expect(voted(b)).toBeGreaterThanOrEqual(voted(a));
        // a live rollout (chat messages) keeps the paper's vote size whatever the share, unless GAVEL_LIVE_VOTE_SHARE=on
        const chat = [{ role: "user" as const, content: t }];
        expect(JSON.stringify(await withEnv(off, () => wide.glance(chat, { topK: n, live: true })))).toBe(JSON.stringify(await withEnv(off, () => paper.glance(chat, { topK: n, live: true }))));
        const liveShare = { ...off, GAVEL_LIVE_VOTE_SHARE: "on" };
        const [lp, lw] = [await withEnv(liveShare, () => paper.glance(chat, { topK: n, live: true })), await withEnv(liveShare, () => wide.glance(chat, { topK: n, live: true }))];
        expect(JSON.stringify(lp)).toBe(JSON.stringify(await withEnv(off, () => paper.glance(chat, { topK: n, live: true }))));
        if (JSON.stringify(lw) !== JSON.stringify(lp)) liveDiffer++;
        expect(voted(JSON.stringify(lw))).toBeGreaterThanOrEqual(voted(JSON.stringify(lp)));
      }
      expect(differ).toBeGreaterThan(0);
      expect(liveDiffer).toBeGreaterThan(0);
    } finally {
      await paper.close();
      await wide.close();
    }
  });
});
