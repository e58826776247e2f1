// runGeneration's iterators dropped unfinished (read once, never finished, closed or returned) on a
// long-lived AbortSignal: the signal must not keep them, their native generations, or their count in
// `generations.open`. A fake host and fake native generations (no model), and a forced GC.
import { describe, expect, it } from "vitest";
import { runGeneration, type GenerateHost, type GenerateSettings } from "../../src/model/generate.js";
import type { NativeGeneration } from "../../src/native/binding.js";
import { collectGarbage } from "../helpers/gc.js";

const N = 20;

function fakeHost(): GenerateHost & { closed: number } {
  const host = {
    closed: 0,
    enqueue: async <T>(_signal: AbortSignal | undefined, run: () => Promise<T>) => run(),
    detokenize: (t: Int32Array) => "x".repeat(t.length),
    contextSize: 1024,
    generations: { open: 0 },
  };
  return host;
}

function fakeGen(host: { closed: number }): NativeGeneration {
  let open = true;
  return {
    append: async () => ({ states: new Float32Array(8), next: 5 }),
    isEog: () => false,
    position: () => 0,
    close: async () => {
      if (open) host.closed++;
      open = false;
    },
  } as unknown as NativeGeneration;
}

function settings(signal?: AbortSignal): GenerateSettings {
  const params = { temperature: 0, topK: 0, topP: 1, minP: 0, seed: 1, penaltyLastN: 0, repeatPenalty: 1, frequencyPenalty: 0, presencePenalty: 0 };
  return { maxTokens: 100, params, stop: [], stopTokens: new Set(), ignoreEog: true, layer: 0, finalState: false, special: false, signal };
}

/** Opens N generations on `signal`, reads one chunk of each and drops it; counts the gens collected. */
async function dropMany(host: ReturnType<typeof fakeHost>, signal: AbortSignal | undefined, collected: { n: number }) {
  const reg = new FinalizationRegistry<number>(() => collected.n++);
  for (let i = 0; i < N; i++) {
    const gen = fakeGen(host);
    reg.register(gen, i);
    const it = runGeneration(host, gen, Int32Array.of(1, 2), settings(signal));
    expect((await it.next()).done).toBe(false);
  }
  return reg;
}

describe("generate: an iterator dropped on a long-lived signal", () => {
  it("is collected with its native generation, which is closed through the queue; generations.open returns to 0", async () => {
    const host = fakeHost();
    const app = new AbortController(); // lives for the whole test, never aborts
    const collected = { n: 0 };
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    try {
      const reg = await dropMany(host, app.signal, collected);
      expect(host.generations.open).toBe(N);
      await collectGarbage(() => collected.n === N && host.generations.open === 0);
      expect(collected.n).toBe(N);
      expect(host.generations.open).toBe(0);
      expect(host.closed).toBe(N);
      void reg;
      // the signal still works for generations opened after
      const gen = fakeGen(host);
      const it = runGeneration(host, gen, Int32Array.of(1, 2), settings(app.signal));
      expect((await it.next()).done).toBe(false);
      expect(host.generations.open).toBe(1);
      app.abort();
      await new Promise((r) => setTimeout(r, 0));
      expect(host.generations.open).toBe(0);
      expect(host.closed).toBe(N + 1);
      await it.return(undefined as never);
      expect(host.closed).toBe(N + 1); // closed once
      expect(host.generations.open).toBe(0);
    } finally {
      process.off("warning", onWarning);
    }
    // one listener per signal, however many generations use it
    expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
  });

  it("without a signal too: the count returns to 0 when the dropped iterators are collected", async () => {
    const host = fakeHost();
    const collected = { n: 0 };
    const reg = await dropMany(host, undefined, collected);
    await collectGarbage(() => collected.n === N && host.generations.open === 0);
    expect(collected.n).toBe(N);
    expect(host.generations.open).toBe(0);
    expect(host.closed).toBe(N);
    void reg;
  });

  it("an iterator that ends, returns or aborts is released once (the collector does not release it again)", async () => {
    const host = fakeHost();
    const ac = new AbortController();
    const a = runGeneration(host, fakeGen(host), Int32Array.of(1), settings(ac.signal));
    await a.next();
    const b = runGeneration(host, fakeGen(host), Int32Array.of(1), settings(ac.signal));
    await b.next();
    const c = runGeneration(host, fakeGen(host), Int32Array.of(1), { ...settings(ac.signal), maxTokens: 2 });
    for (;;) if ((await c.next()).done) break;
    expect(host.generations.open).toBe(2);
    await a.return(undefined as never);
    expect(host.generations.open).toBe(1);
    ac.abort();
    await new Promise((r) => setTimeout(r, 0));
    expect(host.generations.open).toBe(0);
    expect(host.closed).toBe(3);
    await b.return(undefined as never);
    await collectGarbage(() => false, 5);
    expect(host.generations.open).toBe(0);
    expect(host.closed).toBe(3);
  });
});
