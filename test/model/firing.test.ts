// A firing on gavel-mini (a real instruction model, with yes/no tokens for V): selectLive over a live
// context loads the ruling's winner when its V ≥ 0 and nothing when V < 0, V being the verdict's own
// read-out for (context, winner), recomputed independently by router.rank. The two cases are built:
// the context asks for the one installed skill's own job (V ≥ 0), or chats about something no skill
// serves (V < 0).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import type { ChatMessage } from "../../src/render/index.js";
import { selectLive, skillInjection } from "../../src/route/firing.js";
import { chatAsTask, encodeQueries } from "../../src/route/context.js";
import { renderChat } from "../../src/render/index.js";
import { repoRoot } from "../helpers/paths.js";

const miniModel = join(repoRoot, "models", "gavel-mini.gguf");
const miniProjections = join(repoRoot, "models", "gavel-mini.projections.gguf");

const skill = { name: "csv-dedupe", description: "Remove duplicate rows from CSV files.", body: "# CSV dedupe\nRemove duplicate rows from a CSV file." };

describe.skipIf(!existsSync(miniModel))("selectLive on gavel-mini: the winner, or nothing when V < 0", () => {
  let model: Model;
  let router: Router;
  let dir: string;
  beforeAll(async () => {
    model = await Model.load(miniModel, { contextSize: 2048, threads: 1 });
    dir = mkdtempSync(join(tmpdir(), "gavel-firing-"));
    // without the committed calibrated abstention model (and its re-ranker, which decides without V):
    // the rule under test is "nothing when V < 0"
    const projections = (await Projections.load(miniProjections)).withCalibration({ abstention: null, rerank: null });
    router = await Router.open(model, { projections, bankDir: join(dir, "bank"), skillBudget: 256 });
    await router.install([skill]);
  }, 600_000);
  afterAll(async () => {
    await router?.close();
    await model?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const fire = async (messages: ChatMessage[]) => {
    const live = router.live();
    const tokens = model.tokenize(messages.map((m) => `<|${m.role}|>\n${m.content}\n`).join(""), { special: true, addBos: true });
    await live.append(await model.hiddenStates(tokens, live.layer));
    const pick = await selectLive(live, messages);
    const ranked = await router.rank(chatAsTask(messages.filter((m) => m.role !== "system")), { verdictTop: 1 });
    return { pick, V: ranked.verdict[0].V, skill: ranked.verdict[0].skill };
  };

  it("an aborted signal rejects with ABORTED, even where no model call is needed; a non-context is INVALID_ARGUMENT", async () => {
    const messages: ChatMessage[] = [{ role: "user", content: "Remove duplicate rows from a CSV file." }];
    const live = router.live();
    await live.append(await model.hiddenStates(model.tokenize("<|user|>\nRemove duplicate rows from a CSV file.\n", { special: true, addBos: true }), live.layer));
    const ac = new AbortController();
    ac.abort();
    for (const o of [{ signal: ac.signal }, { signal: ac.signal, verdict: false, abstain: false }]) {
      await expect(selectLive(live, messages, o)).rejects.toMatchObject({ name: "GavelError", code: "ABORTED" });
    }
    expect(await selectLive(live, messages, { verdict: false, abstain: false })).toMatchObject({ skill: expect.any(String) });
    for (const bad of [null, {}, 42]) await expect(selectLive(bad as never, messages)).rejects.toMatchObject({ name: "GavelError", code: "INVALID_ARGUMENT" });
    // objects that only look like one: a copy whose private fields are not there, a stand-in with the names
    const lookalikes = [Object.create(live), { routerParts: {}, checkOpen: () => undefined }, { routerParts: 1 }];
    for (const bad of lookalikes) await expect(selectLive(bad as never, messages)).rejects.toMatchObject({ name: "GavelError", code: "INVALID_ARGUMENT", message: expect.stringMatching(/live must be a LiveContext/) });
  });

  it("constructed cases: the skill's own job loads it (V ≥ 0); an unrelated chat loads nothing (V < 0)", async () => {
    const sys: ChatMessage = { role: "system", content: "You are a helpful assistant that can run shell commands." };
    const need = await fire([sys, { role: "user", content: "Remove duplicate rows from a CSV file." }]);
    const none = await fire([sys, { role: "user", content: "Write a bedtime story about a dragon." }]);
    for (const c of [need, none]) {
      // the firing's V is the verdict's V for (context, winner), whatever computed it
      expect(c.pick.shortlist[0].skill).toBe(c.skill);
      expect(Math.abs(c.pick.shortlist[0].V - c.V)).toBeLessThanOrEqual(1e-4);
      expect(c.pick.verdict).toBe("ran");
      expect(c.pick.abstained).toBe(c.V < 0);
    }
    console.log(`V(need) = ${need.V.toFixed(3)}, V(unrelated) = ${none.V.toFixed(3)}`);
    expect(need.V).toBeGreaterThanOrEqual(0);
    expect(need.pick.skill).toBe(need.skill);
    expect(need.pick.record?.body).toBe(skill.body);
    expect(skillInjection(need.pick.record!)).toContain(skill.body);
    expect(none.V).toBeLessThan(0);
    expect(none.pick.skill).toBeNull();
    expect(none.pick.load).toBeNull();
    expect(none.pick.record).toBeNull();
  });

  it("route, rank, verdictInputs and selectLive give the verdict the same text of chat messages: without the system prompt", async () => {
    const sys: ChatMessage = { role: "system", content: "You are a careful agent. Never rewrite history or commit credentials; run the tests after each change." };
    const user: ChatMessage = { role: "user", content: "Remove duplicate rows from a CSV file." };
    const asLines = chatAsTask([sys, user]); // what the verdict would read with the system prompt kept
    const inputs = await router.verdictInputs([sys, user], skill.name);
    expect(inputs).toEqual(await router.verdictInputs([user], skill.name));
    expect(inputs.continuation).not.toEqual((await router.verdictInputs(asLines, skill.name)).continuation);
    const reference = (await router.rank(chatAsTask([user]), { verdictTop: 1 })).verdict[0];
    const withSystem = (await router.rank(asLines, { verdictTop: 1 })).verdict[0];
    expect(Math.abs(withSystem.V - reference.V)).toBeGreaterThan(1e-4); // the system prompt's lines would move V
    const ranked = (await router.rank([sys, user], { verdictTop: 1 })).verdict[0];
    // abstention on (a route's default only with a calibrated model): its rule then reads V, so the
    // verdict runs on the one candidate
    const routed = (await router.route([sys, user], { abstain: true })).shortlist[0];
    const live = router.live();
    await live.append(await model.hiddenStates(model.tokenize(`<|system|>\n${sys.content}\n<|user|>\n${user.content}\n`, { special: true, addBos: true }), live.layer));
    const selected = (await selectLive(live, [sys, user])).shortlist[0];
    for (const c of [ranked, routed, selected]) {
      expect(c.skill).toBe(reference.skill);
      expect(Math.abs(c.L - reference.L)).toBeLessThanOrEqual(1e-4);
      expect(Math.abs(c.V - reference.V)).toBeLessThanOrEqual(1e-4);
    }
  });

  it("a live route of chat messages: the system prompt's rows do not vote in the glance, the rest do", async () => {
    const probe = router.live();
    const parts = probe.routerParts;
    probe.dispose();
    const words = "Always explain each change, keep the history clean and never commit credentials or secrets.";
    const user: ChatMessage = { role: "user", content: "Remove duplicate rows from a CSV file." };
    const rowsOf = (messages: ChatMessage[]) => model.tokenize(renderChat(model.info.chatTemplate ?? null, messages), { special: true, addBos: model.info.addBos }).length;
    for (const [sys, cut] of [[words, false], [`${words} `.repeat(300), true]] as const) {
      const messages: ChatMessage[] = [{ role: "system", content: sys }, user, { role: "assistant", content: "Reading the file." }];
      const q = await encodeQueries(parts, messages, true);
      const zero = q.weights.findIndex((w) => w > 0);
      expect(q.weights.subarray(zero).every((w) => w > 0)).toBe(true);
      const dropped = rowsOf(messages) - q.weights.length;
      expect(dropped > 0).toBe(cut);
      // the system turn rendered alone, one token short (a boundary merge), less what the cut dropped
      expect(zero).toBe(Math.max(0, rowsOf(messages.slice(0, 1)) - 1 - dropped));
      if (!cut) expect(zero).toBeGreaterThan(10);
      // the explanation names voters only: none of the zeroed rows
      const { explanation } = await router.route(messages, { explain: true, abstain: false, verdict: false });
      expect(explanation!.length).toBeGreaterThan(0);
      for (const v of explanation!) expect(v.position).toBeGreaterThanOrEqual(zero);
      // written (live: false) chats and chats without a system prompt vote with every row
      expect((await encodeQueries(parts, messages, false)).weights.every((w) => w > 0)).toBe(true);
      expect((await encodeQueries(parts, messages.slice(1), true)).weights.every((w) => w > 0)).toBe(true);
    }
    // a chat of system messages before the last one still routes (the rows after them vote)
    expect((await router.route([{ role: "system", content: words }, user], { abstain: false, verdict: false })).skill).toBe(skill.name);
  });

  it("a live chat's system prompt is tokenized alone once while it is among the model's last 8", async () => {
    const probe = router.live();
    const parts = probe.routerParts;
    probe.dispose();
    const user: ChatMessage = { role: "user", content: "Remove duplicate rows from a CSV file." };
    const chat = (i: number): ChatMessage[] => [{ role: "system", content: `Agent ${i}: explain each change and run the tests after it.` }, user];
    const heads: string[] = []; // the texts tokenized alone: the system turns rendered without the rest
    const tokenizeAsync = model.tokenizeAsync.bind(model);
    model.tokenizeAsync = ((text: string, options?: never) => {
      if (!text.includes(user.content)) heads.push(text);
      return tokenizeAsync(text, options);
    }) as typeof model.tokenizeAsync;
    try {
      const first = await encodeQueries(parts, chat(0), true);
      expect(heads).toEqual([renderChat(model.info.chatTemplate ?? null, chat(0).slice(0, 1))]);
      const again = await encodeQueries(parts, chat(0), true);
      expect(heads.length).toBe(1); // remembered
      expect(Array.from(again.weights)).toEqual(Array.from(first.weights));
      for (let i = 1; i <= 8; i++) await encodeQueries(parts, chat(i), true);
      expect(heads.length).toBe(9);
      // chat(0)'s was the least recent of nine: forgotten, tokenized again, the same rows zeroed
      const later = await encodeQueries(parts, chat(0), true);
      expect(heads.length).toBe(10);
      expect(Array.from(later.weights)).toEqual(Array.from(first.weights));
      await encodeQueries(parts, chat(8), true); // among the last 8
      expect(heads.length).toBe(10);
    } finally {
      model.tokenizeAsync = tokenizeAsync;
    }
  });

  it("a selection after an install or an uninstall reads the library as it is then (the lexical expert kept per library)", async () => {
    const other = { name: "json-pretty", description: "Pretty-print and validate JSON files.", body: "# JSON pretty\nPretty-print a JSON file with jq." };
    const messages: ChatMessage[] = [{ role: "user", content: "Pretty-print the JSON file config.json and validate it." }];
    const select = async () => {
      const live = router.live();
      const tokens = model.tokenize(chatAsTask(messages), { special: true, addBos: true });
      await live.append(await model.hiddenStates(tokens, live.layer));
      return selectLive(live, messages, { abstain: false, verdict: false });
    };
    const bOf = (sel: Awaited<ReturnType<typeof select>>, name: string) => sel.shortlist.find((c) => c.name === name)?.B;
    const before = await select();
    expect(before.shortlist.map((c) => c.name)).toEqual(["csv-dedupe"]);
    await router.install([other]);
    try {
      const after = await select();
      // the new skill is scored by BM25 over the library that holds it: its B is finite, and it wins
      expect(Number.isFinite(bOf(after, "json-pretty"))).toBe(true);
      expect(after.skill).not.toBeNull();
      expect(after.name).toBe("json-pretty");
    } finally {
      await router.uninstall("json-pretty");
    }
    const again = await select();
    expect(again.shortlist.map((c) => c.name)).toEqual(["csv-dedupe"]);
    expect(bOf(again, "csv-dedupe")).toBe(bOf(before, "csv-dedupe"));
  });
});
