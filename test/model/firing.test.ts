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

  /** The router's parts, as a live context holds them. */
  const routerParts = () => {
    const probe = router.live();
    const parts = probe.routerParts;
    probe.dispose();
    return parts;
  };
  /** A system prompt's words and a user message asking for the installed skill's job. */
  const systemChat = {
    words: "Always explain each change, keep the history clean and never commit credentials or secrets.",
    user: { role: "user", content: "Remove duplicate rows from a CSV file." } as ChatMessage,
  };

  it("a live route of chat messages: the system prompt's rows do not vote in the glance, the rest do", async () => {
    const parts = routerParts();
    const template = model.info.chatTemplate ?? null;
    const { words, user } = systemChat;
    const tokenCount = (text: string, bos: boolean) => model.tokenize(text, { special: true, addBos: bos && model.info.addBos }).length;
    const chat = (sys: string): ChatMessage[] => [{ role: "system", content: sys }, user, { role: "assistant", content: "Reading the file." }];
    // a short system prompt is read whole: its rows are the system turn rendered alone, one token short (a boundary merge)
    const short = chat(words);
    const q = await encodeQueries(parts, short, true);
    const zero = q.weights.findIndex((w) => w > 0);
    expect(q.weights.subarray(zero).every((w) => w > 0)).toBe(true);
    expect(q.weights.length).toBe(tokenCount(renderChat(template, short), true));
    expect(zero).toBe(tokenCount(renderChat(template, short.slice(0, 1)), true) - 1);
    expect(zero).toBeGreaterThan(10);
    // the explanation names voters only: none of the zeroed rows
    const { explanation } = await router.route(short, { explain: true, abstain: false, verdict: false });
    expect(explanation!.length).toBeGreaterThan(0);
    for (const v of explanation!) expect(v.position).toBeGreaterThanOrEqual(zero);
    // written (live: false) chats and chats without a system prompt vote with every row
    expect((await encodeQueries(parts, short, false)).weights.every((w) => w > 0)).toBe(true);
    expect((await encodeQueries(parts, short.slice(1), true)).weights.every((w) => w > 0)).toBe(true);
    // a chat of system messages before the last one still routes (the rows after them vote)
    expect((await router.route([{ role: "system", content: words }, user], { abstain: false, verdict: false })).skill).toBe(skill.name);
  });

  it("a live route reads a long system prompt from its last 256 characters: the same rows whatever came before them, none cut", async () => {
    const parts = routerParts();
    const template = model.info.chatTemplate ?? null;
    const { words, user } = systemChat;
    const chat = (sys: string): ChatMessage[] => [{ role: "system", content: sys }, user];
    // about 5,700 and 57,000 tokens: far past the task budget, were they read
    const [long, longer] = [300, 3000].map((n) => chat(`${words} `.repeat(n)));
    const a = await encodeQueries(parts, long, true);
    const b = await encodeQueries(parts, longer, true);
    expect(a.truncation).toBeUndefined();
    expect(Array.from(b.weights)).toEqual(Array.from(a.weights));
    expect(Array.from(b.queries)).toEqual(Array.from(a.queries));
    // what is read: the rendering from a word's start within the system prompt's last 256 characters
    const whole = renderChat(template, long);
    const head = renderChat(template, long.slice(0, 1));
    const at = head.length - 256;
    const from = at + whole.slice(at, at + 64).search(/\s/); // the first white space from there
    expect(from).toBeGreaterThanOrEqual(at);
    const tokens = model.tokenize(whole.slice(from), { special: true, addBos: false });
    expect(a.weights.length).toBe(tokens.length);
    const zero = a.weights.findIndex((w) => w > 0);
    expect(zero).toBe(model.tokenize(whole.slice(from, head.length), { special: true, addBos: false }).length - 1);
    expect(a.weights.subarray(zero).every((w) => w > 0)).toBe(true);
    // the rows after the system prompt are the user turn's: as many as a short system prompt leaves
    const short = await encodeQueries(parts, chat(words), true);
    expect(a.weights.length - zero).toBe(short.weights.length - short.weights.findIndex((w) => w > 0));
    expect((await router.route(longer, { abstain: false, verdict: false })).skill).toBe(skill.name);
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
