// A request with a paste (src/lexical/paste.ts): the embedded default pair over the example skills
// routes a request written after or before a paste of neutral log lines to the request's skill, and
// the result says the paste was weighed; the glance's pasted rows are scaled by exactly the weight the
// result gives, whether the task was read whole or cut; a task without a paste is read as before;
// routes run together read each their own paste, and a failed route leaves nothing of it behind.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Model, Router, type RouteResult } from "../../src/index.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { weighPasteRows } from "../../src/route/context.js";
import { splitPaste, taskPaste } from "../../src/lexical/paste.js";
import { queryPaste } from "../../src/lexical/postings.js";
import { repoRoot } from "../helpers/paths.js";
import { expectCode } from "../helpers/gavel-error.js";

const dir = mkdtempSync(join(tmpdir(), "gavel-paste-"));
let model: Model;
let router: Router;
const logs = (n: number) =>
  Array.from({ length: n }, (_, i) => `2026-11-26T03:00:${String(i % 60).padStart(2, "0")}Z INFO svc-${i % 7} worker heartbeat id=${(i * 7919) % 100000} took=${(i * 37) % 900}ms`).join("\n");
const request = "Write unit tests with pytest for parse_invoice in invoices.py: one for bad input, and one for each currency.";

beforeAll(async () => {
  model = await Model.load(DEFAULT_MODEL, { threads: 1 });
  router = await Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: dir });
  await router.install(join(repoRoot, "examples", "skills"));
}, 180_000);
afterAll(async () => {
  await router?.close();
  await model?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe("a request with a paste", () => {
  it("routes to the request's skill, with the paste before or after it, and says how the paste was read", async () => {
    const alone = await router.route(request);
    expect(alone.skill).toBe("pytest-testing");
    expect(alone.paste).toBeUndefined();
    for (const text of [`Here are the logs from last night:\n${logs(20)}\n\n${request}`, `${request}\n\nFor context, the logs:\n${logs(40)}`]) {
      const res = await router.route(text);
      expect(res.skill).toBe("pytest-testing");
      expect(res.paste?.lines).toBe(text.includes(logs(40)) ? 40 : 20);
      expect(res.paste!.wordWeight).toBeGreaterThan(0);
      expect(res.paste!.wordWeight).toBeLessThan(0.2);
      expect(res.paste!.tokenWeight).toBeGreaterThan(0);
      expect(res.paste!.tokenWeight).toBeLessThan(0.2);
    }
    // without the lexical expert no word was weighed: the glance's tokens were
    const glanceOnly = await router.route(`${request}\n\nFor context, the logs:\n${logs(40)}`, { lexical: false, abstain: false });
    expect(glanceOnly.timings.lexicalMs).toBeUndefined();
    expect(glanceOnly.paste?.lines).toBe(40);
    expect(glanceOnly.paste!.wordWeight).toBe(1);
    expect(glanceOnly.paste!.tokenWeight).toBeLessThan(0.2);
  });

  it("reads interleaved routes' pastes each at its own weight, and a route that fails after encoding its task leaves nothing behind", async () => {
    const a = `Here are the logs from last night:\n${logs(20)}\n\n${request}`;
    const b = `Add structured JSON logging to the worker, with a request id on every line.\n\nFor context, the logs:\n${logs(40)}`;
    const read = (r: RouteResult) => ({ skill: r.skill, paste: r.paste, shortlist: r.shortlist.map((c) => [c.skill, c.S, c.B]) });
    const alone = [read(await router.route(a)), read(await router.route(b))];
    expect(alone[0].paste!.wordWeight).not.toBe(alone[1].paste!.wordWeight);
    // three routes in flight at once: each encodes its task while the others read theirs
    const together = await Promise.all([router.route(a), router.route(b), router.route(a)]);
    expect(together.map(read)).toEqual([alone[0], alone[1], alone[0]]);
    // a route aborted once its task is encoded (before the glance): ABORTED, and no reading kept. The
    // task is over the 256 Ki characters that the module-level slot of 2026-12-05 kept only while a
    // route held them, so a hold left behind would show as the same reading twice
    const big = `${request}\n\nFor context, the logs:\n${logs(4000)}`;
    expect(big.length).toBeGreaterThan(1 << 18);
    const ac = new AbortController();
    const own = model.hiddenStates;
    const patched = model as unknown as { hiddenStates: typeof own };
    patched.hiddenStates = async (...args) => {
      const states = await own.apply(model, args);
      ac.abort();
      return states;
    };
    try {
      await expectCode(router.route(big, { signal: ac.signal }), "ABORTED");
    } finally {
      delete (patched as { hiddenStates?: unknown }).hiddenStates;
    }
    expect(ac.signal.aborted).toBe(true);
    expect(queryPaste(big)).not.toBe(queryPaste(big)); // read anew each time: the module keeps no route's reading
    expect(read(await router.route(a))).toEqual(alone[0]);
  });

  it("scales exactly the pasted rows of the glance, from the start of a whole task and from the end of a cut one", () => {
    const text = `Here are the logs:\n${logs(12)}\n\n${request}`;
    const split = splitPaste(text);
    const toks = model.tokenize(text, { special: false, addBos: false });
    // each token's line, from tokenizing the text line by line (a plain reference for the piece count)
    const lines = text.split("\n");
    for (const [read, tokens] of [["whole", toks], ["end", toks.subarray(toks.length - 150)]] as const) {
      const w = new Float32Array(tokens.length).fill(2);
      const f = weighPasteRows(model, taskPaste(text), tokens, w, read);
      expect(f).toBeGreaterThan(0);
      expect(f).toBeLessThan(1);
      // pasted rows carry 2·f, the others 2; their counts agree with the lines' own tokenizations
      const pasted = [...w].filter((x) => Math.abs(x - 2 * f) < 1e-6).length;
      expect(pasted + [...w].filter((x) => x === 2).length).toBe(tokens.length);
      if (read === "whole") {
        const perLine = lines.map((l, i) => (split.paste[i] ? model.tokenize(l, { special: false, addBos: false }).length : 0)).reduce((a, b) => a + b, 0);
        // a line's tokens alone differ from the same line's tokens in the whole text by at most the word-start marker
        expect(Math.abs(pasted - perLine)).toBeLessThanOrEqual(split.pasteLines);
        expect(f).toBeCloseTo((tokens.length - pasted) / pasted, 6);
      } else {
        // the cut task's last 150 tokens hold the request and the paste's end: its rows agree with the whole's
        const whole = new Float32Array(toks.length).fill(2);
        weighPasteRows(model, taskPaste(text), toks, whole, "whole");
        const tailPasted = [...whole.subarray(toks.length - 150)].map((x) => x !== 2);
        expect([...w].map((x) => x !== 2)).toEqual(tailPasted);
      }
    }
  });

  it("leaves a task without a paste, or with a light one, as it was", () => {
    const t = `${request}\n\`\`\`\nparse_invoice(data)\n\`\`\``;
    const w = new Float32Array(40).fill(1);
    const toks = model.tokenize(t, { special: false, addBos: false });
    const ww = new Float32Array(toks.length).fill(1);
    expect(weighPasteRows(model, taskPaste(t), toks, ww, "whole")).toBe(1);
    expect([...ww].every((x) => x === 1)).toBe(true);
    expect(weighPasteRows(model, taskPaste(request), toks.subarray(0, 40), w, "whole")).toBe(1);
  });
});
