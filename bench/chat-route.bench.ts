/**
 * A live route of chat messages that open with an agent's system prompt, by the prompt's length: the
 * warm route's p50 and p95 over the example skills, against the same request sent as a user message
 * alone. A live chat's forward pass reads the system messages from their last 256 characters
 * (`LIVE_SYSTEM_CHARS`, src/route/context.ts); before, it read the whole rendering up to the task
 * budget, and the whole was tokenized on every route. Then a conversation of 4 to 100 user and
 * assistant turns before the request, by its length, with the tokens the forward pass read: under the
 * decay at most the rendering's last 768 (`LIVE_DECAY_WINDOW`); before, the task budget (1,509 here),
 * and the skill it routes to (its lexical side reads what GAVEL_LIVE_LEXICAL says).
 *
 *   npm run bench -- chat-route [routes=20] [threads=1]
 *
 * gavel-mini and its projections (the embedded default), examples/skills installed into a temporary
 * bank (skill budget 512). The system prompt is a generic agent's paragraph repeated 1, 10, 50 and 300
 * times; every route sends the same prompt and the same request, as an agent does. One route of each
 * warms up and is not timed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../src/defaults.js";
import { Model } from "../src/model/Model.js";
import { Router } from "../src/route/Router.js";
import type { ChatMessage } from "../src/render/index.js";

const [routes, threads] = [20, 1].map((d, i) => Number(process.argv[2 + i] ?? d));
const PARAGRAPH = "You are a coding agent working in the user's repository. Follow its conventions, keep changes small, run the tests after each change and explain what you did briefly. ";
/** A conversation's turns: talk about the build before the request. */
const TALK = [
  "I looked at the build logs again and the step that compiles the assets keeps timing out on the runner.",
  "So I tried raising the memory limit and caching node_modules between runs, and it got a little further.",
  "The tests pass locally on my laptop, but the container image is huge and takes minutes to pull.",
  "Let me check which files changed in the last release and whether anything in the config moved.",
];
const user: ChatMessage = { role: "user", content: "Write a Dockerfile for this Node service and keep the image small." };

const model = await Model.load(DEFAULT_MODEL, { contextSize: 2048, threads });
const bankDir = mkdtempSync(join(tmpdir(), "gavel-chat-bench-"));
const router = await Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir, skillBudget: 512 });
try {
  await router.install("examples/skills");
  const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
  const time = async (messages: ChatMessage[]) => {
    await router.route(messages); // warm
    const ms: number[] = [];
    for (let i = 0; i < routes; i++) {
      const t0 = performance.now();
      await router.route(messages);
      ms.push(performance.now() - t0);
    }
    return `p50 ${quantile(ms, 0.5).toFixed(1)} ms, p95 ${quantile(ms, 0.95).toFixed(1)} ms`;
  };
  console.log(`chat-route: ${router.list().length} skills, ${routes} warm routes each, ${threads} thread(s)`);
  console.log(`  [user] alone: ${await time([user])}`);
  for (const reps of [1, 10, 50, 300]) {
    const system = PARAGRAPH.repeat(reps);
    const tokens = model.tokenize(system, { special: false, addBos: false }).length;
    console.log(`  [system ${tokens} tokens, user]: ${await time([{ role: "system", content: system }, user])}`);
  }
  for (const turns of [4, 10, 20, 100]) {
    const messages: ChatMessage[] = [{ role: "system", content: PARAGRAPH }];
    for (let i = 0; i < turns; i++) messages.push({ role: i % 2 ? "assistant" : "user", content: TALK.map((_, j) => TALK[(i + j) % TALK.length]).join(" ") });
    messages.push(user);
    const r = await router.route(messages);
    const t = r.truncation;
    console.log(`  [system, ${turns} turns, user], read ${t ? `${t.keptTokens} of ${t.totalTokens}` : "whole"}, routed to ${r.skill ?? "none"}: ${await time(messages)}`);
  }
} finally {
  await router.close();
  await model.dispose();
  rmSync(bankDir, { recursive: true, force: true });
}
