// What a live chat's lexical readers read (GAVEL_LIVE_LEXICAL; src/route/context.ts liveDomainText):
// every message but the system prompt (all), from the latest user message on (latest), or the messages
// the glance's window reaches (window), the last against a plain reference on fresh random chats (seeded: GAVEL_TEST_SEED replays one)
// rendered with the embedded backbone's template: a message is reached when the tokens of the
// rendering up to its contents' end pass the window's start (a system prompt that holds a message's
// words not taken for the message). A route's BM25 query follows the
// setting; a written task, and the verdict's text, do not.
import { describe, expect, it } from "vitest";
import { join } from "node:path";
import { encodeQueries, liveDomainText } from "../../src/route/context.js";
import { renderChat, type ChatMessage } from "../../src/render/index.js";
import type { EncodedTask } from "../../src/render/encode.js";
import { repoRoot } from "../helpers/paths.js";
import { withEnv } from "../helpers/env.js";
import { suiteRouter } from "../helpers/model-suite.js";
import { freshSeed, rng } from "../helpers/random.js";

const notTruncated: EncodedTask = { tokens: new Int32Array(4), taskStart: 0, taskEnd: 4, truncated: false, wholeTokens: 4 };
const noModel = { detokenize: () => { throw new Error("not read"); } };

const chat: ChatMessage[] = [
  { role: "system", content: "Keep changes small." },
  { role: "user", content: "Write a Dockerfile for the API" },
  { role: "assistant", content: "Done: a two-stage build." },
  { role: "user", content: "Now pull the revenue table out of report.pdf" },
  { role: "assistant", content: "Reading the PDF." },
];

/** A random word of lower-case letters from the stream `r`. */
function word(r: () => number): string {
  const n = 3 + Math.floor(r() * 6);
  return Array.from({ length: n }, () => String.fromCharCode(97 + Math.floor(r() * 26))).join("");
}

describe("what a live chat's lexical readers read", () => {
  it("all: every message but the system prompt; latest: from the latest user message on; window over a chat read whole: all", () => {
    expect(liveDomainText(noModel, chat, "", notTruncated, "all")).toBe(chat.slice(1).map((m) => m.content).join("\n"));
    expect(liveDomainText(noModel, chat, "", notTruncated, "latest")).toBe(`${chat[3].content}\n${chat[4].content}`);
    expect(liveDomainText(noModel, chat.slice(0, 4), "", notTruncated, "latest")).toBe(chat[3].content);
    // no user message: every message
    const assistantOnly = [chat[0], chat[2], chat[4]];
    expect(liveDomainText(noModel, assistantOnly, "", notTruncated, "latest")).toBe(`${chat[2].content}\n${chat[4].content}`);
    expect(liveDomainText(noModel, chat, "", notTruncated, "window")).toBe(liveDomainText(noModel, chat, "", notTruncated, "all"));
  });

  const fx = suiteRouter("gavel-live-lexical-", async () => {
    expect((await fx.router.install(join(repoRoot, "examples", "skills"))).failed).toEqual([]);
  });

  it("window: the messages whose contents reach into the rendering's last tokens, against a plain token reference on fresh random chats", () => {
    const template = fx.model.info.chatTemplate ?? null;
    const seed = freshSeed();
    const r = rng(seed);
    const words = (n: number) => Array.from({ length: n }, () => word(r)).join(" ");
    let partial = 0;
    for (let round = 0; round < 12; round++) {
      const messages: ChatMessage[] = [{ role: "system", content: "" }];
      const n = 4 + Math.floor(r() * 12);
      for (let i = 0; i < n; i++) messages.push({ role: i % 2 ? "assistant" : "user", content: words(3 + Math.floor(r() * 40)) });
      // the system prompt holds the first message's words too: they are not taken for the message
      messages[0].content = `${word(r)} ${messages[1].content} ${word(r)}`;
      const text = renderChat(template, messages);
      const head = renderChat(template, messages.slice(0, 1));
      expect(text.startsWith(head)).toBe(true);
      const whole = fx.model.tokenize(text, { special: true, addBos: fx.model.info.addBos });
      // each message's contents end: the tokens of the rendering up to there
      let at = 0;
      const ends = messages.map((m) => {
        at = text.indexOf(m.content, at) + m.content.length;
        return fx.model.tokenize(text.slice(0, at), { special: true, addBos: fx.model.info.addBos }).length;
      });
      // windows of a few lengths, and those starting just after and just before each message's end
      const edges = ends.slice(1).flatMap((e) => [whole.length - e, whole.length - e + 1]).filter((k) => k >= 1 && k < whole.length);
      for (const keep of [1, 7, 40, Math.floor(whole.length / 3), whole.length - 2, ...edges]) {
        const enc: EncodedTask = { tokens: whole.subarray(whole.length - keep), taskStart: 0, taskEnd: keep, truncated: true, wholeTokens: whole.length };
        const start = whole.length - keep;
        const expected = messages.filter((m, i) => m.role !== "system" && ends[i] > start).map((m) => m.content).join("\n");
        const got = liveDomainText(fx.model, messages, text, enc, "window", head.length);
        expect(got, `seed ${seed}`).toBe(expected);
        if (expected !== "" && expected !== liveDomainText(fx.model, messages, text, enc, "all")) partial++;
      }
    }
    expect(partial, `seed ${seed}`).toBeGreaterThan(10); // the windows cut chats, not only read them whole
  });

  it("window in a route: a message whose words the system prompt also holds is found where it is, not in the prompt", async () => {
    const probe = fx.router.live();
    const parts = probe.routerParts;
    probe.dispose();
    const template = fx.model.info.chatTemplate ?? null;
    const ask = "deploy the staging site tonight";
    const tokens = (t: string) => fx.model.tokenize(t, { special: true, addBos: fx.model.info.addBos }).length;
    // the filler grows until the 768-token window starts inside the first user message
    let chat: ChatMessage[] = [];
    for (let k = 0; k < 4000; k++) {
      chat = [
        { role: "system", content: `Never ${ask} without a review.` },
        { role: "user", content: ask },
        { role: "assistant", content: Array.from({ length: k }, (_, i) => `step${i % 97}`).join(" ") },
        { role: "user", content: "go on" },
      ];
      const text = renderChat(template, chat);
      const head = renderChat(template, chat.slice(0, 1));
      const at = text.indexOf(ask, head.length);
      const [from, to] = [tokens(text.slice(0, at)), tokens(text.slice(0, at + ask.length))];
      const start = tokens(text) - 768;
      if (start >= to) throw new Error("the window passed the message");
      if (start > from) break;
    }
    const q = await withEnv({ GAVEL_LIVE_LEXICAL: "window" }, () => encodeQueries(parts, chat, true));
    expect(q.truncation?.keptTokens).toBe(768);
    expect(q.bm25Query.text).toBe(chat.slice(1).map((m) => m.content).join("\n"));
  });

  it("a route's BM25 query follows the setting; a written task and the verdict's text do not", async () => {
    const probe = fx.router.live();
    const parts = probe.routerParts;
    probe.dispose();
    const read = async (mode: string, context: string | ChatMessage[]) => withEnv({ GAVEL_LIVE_LEXICAL: mode }, () => encodeQueries(parts, context, undefined));
    const all = await read("all", chat);
    const latest = await read("latest", chat);
    expect(all.bm25Query.text).toBe(chat.slice(1).map((m) => m.content).join("\n"));
    expect(latest.bm25Query.text).toBe(`${chat[3].content}\n${chat[4].content}`);
    // the short chat fits the window: read whole
    expect((await read("window", chat)).bm25Query.text).toBe(all.bm25Query.text);
    // the verdict reads the chat's lines either way
    expect(latest.verdictText ?? latest.taskText).toBe(all.verdictText ?? all.taskText);
    expect(latest.verdictText).toContain("Dockerfile");
    // the glance's rows are not the lexical readers': the same queries
    expect(Array.from(latest.tokens)).toEqual(Array.from(all.tokens));
    const task = "Write a Dockerfile for the API, then pull the revenue table out of report.pdf";
    for (const mode of ["window", "latest"]) expect((await read(mode, task)).bm25Query.text).toBe((await read("all", task)).bm25Query.text);
  });
});
