// A live context's edges on a real model (stories260K, random projections, SWE-Skills-Bench skills):
// a reset ordered behind the appends called before it (real ℓ* rows), selectLive and append on a
// disposed context or a closed router (DISPOSED), and the verdict's text of a long conversation read
// from its tail alone, tokenized off the JS thread, equal to what the whole text's tokens give.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import type { ChatMessage } from "../../src/render/index.js";
import { liveVerdictText, selectLive } from "../../src/route/firing.js";
import { chatAsTask, encodeQueries, lexicalRead } from "../../src/route/context.js";
import { LexicalExpert } from "../../src/route/lexical-expert.js";
import type { RouterParts } from "../../src/route/parts.js";
import { sharedDir, storiesPath, needsShared, SHARED } from "../helpers/paths.js";
import { freshSeed, rng } from "../helpers/random.js";

const NO_SHARED = needsShared("stories260K and SWE-Skills-Bench's skills", SHARED.stories, SHARED.benchSkills);
const benchSkills = join(sharedDir, "data", "swe-skills-bench", "skills.jsonl");
const TEXT = "Once upon a time the build failed and the little robot looked at the logs of the linker.";

/** Records each B the lexical expert computes (the query's text, B by column, the columns' handles) until `spy.mockRestore()`. */
function watchPosteriors() {
  const seen: { text: string; B: Float64Array; handles: Int32Array }[] = [];
  const original = LexicalExpert.prototype.posteriorByColumn;
  const spy = vi.spyOn(LexicalExpert.prototype, "posteriorByColumn").mockImplementation(async function (this: LexicalExpert, ...args: Parameters<typeof original>) {
    const out = await original.apply(this, args);
    seen.push({ text: typeof args[1] === "string" ? args[1] : args[1].text, B: out.B, handles: args[3] });
    return out;
  });
  return { seen, spy };
}

describe.skipIf(NO_SHARED)("live context edges (stories260K, random projections)", () => {
  let model: Model;
  let projections: Projections;
  let router: Router;
  let dir: string;
  beforeAll(async () => {
    model = await Model.load(storiesPath, { contextSize: 1024, threads: 1 });
    projections = await Projections.random(model, { seed: freshSeed(), dim: 64 });
    dir = mkdtempSync(join(tmpdir(), "gavel-live-edges-"));
    router = await Router.open(model, { projections, bankDir: join(dir, "a"), skillBudget: 96 });
    await router.install(benchSkills, { limit: 12 });
  }, 600_000);
  afterAll(async () => {
    await router?.close();
    await model?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const rowsOf = async (text: string, layer: number) => model.hiddenStates(model.tokenize(text, { addBos: model.info.addBos }), layer);

  it("a reset applies after the appends called before it: their rows are forgotten, later ones start a fresh context", async () => {
    const live = router.live();
    const { nEmbd } = model.info;
    const long = await rowsOf(TEXT.repeat(8), live.layer);
    const short = long.subarray(0, 5 * nEmbd);
    const first = live.append(long);
    live.reset();
    const second = live.append(short);
    await first;
    await second;
    expect(live.tokens).toBe(5);
    const fresh = router.live();
    await fresh.append(short);
    expect(live.top(12)).toEqual(fresh.top(12));
    // reset while an append is under way (called, its native work started)
    const third = live.append(long);
    for (let i = 0; i < 3; i++) await Promise.resolve();
    live.reset();
    expect(live.tokens).toBe(0);
    await third;
    expect(live.tokens).toBe(0);
    live.dispose();
    fresh.dispose();
  });

  it("selectLive and append on a disposed context, or after its router closed, reject with DISPOSED", async () => {
    const live = router.live();
    const rows = await rowsOf(TEXT, live.layer);
    await live.append(rows);
    expect(live.disposed).toBe(false);
    live.dispose();
    expect(live.disposed).toBe(true);
    for (const o of [{}, { verdict: false, abstain: false }]) {
      await expect(selectLive(live, TEXT, o)).rejects.toMatchObject({ name: "GavelError", code: "DISPOSED", message: expect.stringContaining("disposed") });
    }
    await expect(live.append(rows)).rejects.toMatchObject({ name: "GavelError", code: "DISPOSED" });
    // a router of its own, closed under a context that has read tokens
    const other = await Router.open(model, { projections, bankDir: join(dir, "b"), skillBudget: 96 });
    await other.install(benchSkills, { limit: 2 });
    const orphan = other.live();
    await orphan.append(rows);
    expect(await selectLive(orphan, TEXT, { verdict: false, abstain: false })).toMatchObject({ skill: expect.any(String) });
    await other.close();
    expect(orphan.disposed).toBe(true);
    await expect(selectLive(orphan, TEXT, { verdict: false, abstain: false })).rejects.toMatchObject({ name: "GavelError", code: "DISPOSED", message: expect.stringContaining("router") });
    await expect(orphan.append(rows)).rejects.toMatchObject({ name: "GavelError", code: "DISPOSED" });
  });

  it("selectLive checks again after its waits: a reset meanwhile is INVALID_ARGUMENT, a dispose DISPOSED (not a selection from zeros)", async () => {
    const o = { verdict: false, abstain: false };
    const rows = await rowsOf(TEXT, router.projections.layer);
    const noToken = { name: "GavelError", code: "INVALID_ARGUMENT", message: expect.stringContaining("no token") };
    // during the verdict text's tokenization (selectLive's first await)
    const live = router.live();
    await live.append(rows);
    const p = selectLive(live, TEXT, o);
    live.reset();
    await expect(p).rejects.toMatchObject(noToken);
    // while the library's read waits (for a writer, say): a reset or a dispose lands there
    const library = live.routerParts.library;
    for (const [what, expected] of [["reset", noToken], ["dispose", { name: "GavelError", code: "DISPOSED" }]] as const) {
      const l = router.live();
      await l.append(rows);
      Object.defineProperty(library, "reading", {
        configurable: true,
        value: async <T>(f: () => Promise<T>): Promise<T> => {
          await Promise.resolve();
          if (what === "reset") l.reset();
          else l.dispose();
          return Object.getPrototypeOf(library).reading.call(library, f);
        },
      });
      try {
        await expect(selectLive(l, TEXT, o), what).rejects.toMatchObject(expected);
      } finally {
        delete (library as { reading?: unknown }).reading;
      }
      l.dispose();
    }
    // unpatched, a context that has read tokens still selects
    const ok = router.live();
    await ok.append(rows);
    expect(await selectLive(ok, TEXT, o)).toMatchObject({ skill: expect.any(String), tokens: ok.tokens });
    ok.dispose();
    live.dispose();
  });

  it("the verdict's text of a long conversation: its end as the whole text's tokens give it, from a tokenized tail only, off the JS thread", async () => {
    const r = rng(freshSeed());
    const words = "the robot build failed linker logs cannot find library tests time out fix retry cache file path error warning because".split(" ");
    const sentence = () => Array.from({ length: 6 + Math.floor(r() * 20) }, () => words[Math.floor(r() * words.length)]).join(" ");
    const messages: ChatMessage[] = [{ role: "system", content: "You are an agent." }];
    for (let i = 0; i < 3000; i++) messages.push({ role: i % 2 ? "assistant" : "user", content: `${sentence()}.` });
    const whole = chatAsTask(messages.slice(1));
    const taskBudget = 200;
    // the model, watched: which texts are tokenized, and how
    const seen: { sync: number[]; async: number[] } = { sync: [], async: [] };
    const watched = {
      tokenize: (t: string, o?: { special?: boolean; addBos?: boolean }) => (seen.sync.push(t.length), model.tokenize(t, o)),
      tokenizeAsync: (t: string, o?: { special?: boolean; addBos?: boolean }) => (seen.async.push(t.length), model.tokenizeAsync(t, o)),
      detokenize: (t: Int32Array) => model.detokenize(t),
    };
    const parts = { model: watched, taskBudget } as unknown as RouterParts;
    const got = await liveVerdictText(parts, messages);
    const all = model.tokenize(whole, { special: false, addBos: false });
    expect(all.length).toBeGreaterThan(50 * taskBudget);
    expect(got).toBe(model.detokenize(all.subarray(all.length - (taskBudget - 8))));
    expect(seen.sync).toEqual([]);
    expect(seen.async.length).toBeGreaterThan(0);
    expect(Math.max(...seen.async)).toBeLessThan(whole.length / 20);
    // a conversation within the budget is read whole
    const few: ChatMessage[] = [{ role: "system", content: "You are an agent." }, { role: "user", content: "Fix the failing build." }];
    expect(await liveVerdictText(parts, few)).toBe(chatAsTask(few.slice(1)));
    expect(await liveVerdictText(parts, "a plain text task")).toBe("a plain text task");
  });
  it("selectLive's BM25 reads the end a live route reads, so the request before a long assistant turn counts (the verdict keeps its tail)", async () => {
    const skills = router.list();
    const target = skills[Math.floor(rng(freshSeed())() * skills.length)];
    const { description } = await router.get(target.id);
    const probe = router.live();
    const parts = probe.routerParts;
    probe.dispose();
    // an assistant turn longer than the verdict's tail, of words no skill holds
    const filler = "lorem ipsum dolor sit amet qwzx ".repeat(Math.ceil((parts.taskBudget * 12) / 32));
    const messages: ChatMessage[] = [
      { role: "system", content: "You are an agent." },
      { role: "user", content: `${target.name}: ${description}` },
      { role: "assistant", content: filler },
    ];
    const text = chatAsTask(messages.slice(1));
    expect(text.length).toBeLessThan(16 * parts.glanceBudget); // the whole conversation within the live route's read
    const tail = await liveVerdictText(parts, messages);
    expect(tail).not.toContain(description.slice(0, 20)); // the verdict's tail holds filler only
    const { seen, spy } = watchPosteriors();
    const live = router.live();
    try {
      await live.append(await rowsOf(TEXT, live.layer));
      await selectLive(live, messages, { lexical: true, verdict: false, abstain: false });
    } finally {
      spy.mockRestore();
      live.dispose();
    }
    expect(seen).toHaveLength(1);
    // the messages' contents, without the system prompt, as abstention's domain score reads them
    expect(seen[0].text).toBe(lexicalRead(messages.slice(1).map((m) => m.content).join("\n"), "end", parts.glanceBudget));
    const { B, handles } = seen[0];
    const library = parts.library;
    const at = [...handles].findIndex((h) => library.label(h).id === target.id);
    expect(at).toBeGreaterThanOrEqual(0);
    for (let c = 0; c < B.length; c++) if (c !== at) expect(B[at], library.label(handles[c]).id).toBeGreaterThan(B[c]);
  });
  it("a route of chat messages: BM25 reads their contents, the verdict their lines, both without the system prompt", async () => {
    const skills = router.list();
    const pick = Math.floor(rng(freshSeed())() * skills.length);
    const [asked, other] = [skills[pick], skills[(pick + 1) % skills.length]];
    const { description } = await router.get(asked.id);
    const { description: otherDescription } = await router.get(other.id);
    // a system prompt made of another skill's words: read by BM25, it would pull that skill up
    const messages: ChatMessage[] = [
      { role: "system", content: `${other.name}: ${otherDescription} `.repeat(4) },
      { role: "user", content: `${asked.name}: ${description}` },
    ];
    const probe = router.live();
    const parts = probe.routerParts;
    probe.dispose();
    for (const live of [true, false]) {
      const q = await encodeQueries(parts, messages, live);
      const keep = live ? "end" : parts.keep;
      expect(q.bm25Query.text).toBe(lexicalRead(messages[1].content, keep, parts.glanceBudget));
      expect(q.verdictText).toBe(lexicalRead(chatAsTask(messages.slice(1)), keep, parts.glanceBudget));
      const written = await encodeQueries(parts, messages[1].content, live);
      expect(written.verdictText).toBeUndefined();
      expect(written.bm25Query.text).toBe(q.bm25Query.text);
    }
    const { seen, spy } = watchPosteriors();
    try {
      await router.route(messages, { lexical: true, verdict: false, abstain: false });
    } finally {
      spy.mockRestore();
    }
    expect(seen.length).toBeGreaterThan(0);
    const { B, handles } = seen[0];
    const at = [...handles].findIndex((h) => parts.library.label(h).id === asked.id);
    for (let c = 0; c < B.length; c++) if (c !== at) expect(B[at], parts.library.label(handles[c]).id).toBeGreaterThan(B[c]);
    // a chat whose messages hold no word besides the system prompt's is wordless: declined, not an error
    const empty = await router.route([messages[0], { role: "user", content: "  " }], { lexical: true, verdict: false, abstain: true });
    expect(empty.abstained).toBe(true);
    expect((await router.route([messages[0], { role: "user", content: "  " }], { lexical: true, verdict: false, abstain: false })).skill).toEqual(expect.any(String));
  });
});
