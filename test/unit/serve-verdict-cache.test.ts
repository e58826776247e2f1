/**
 * The verdict's prefix cache under the resident router (docs/SERVE.md, "The verdict's prefix cache"):
 * a route's verdict scores each shortlisted skill's render r(s) as a KV-cached prefix, and the server
 * loads the model as `gavel serve` does (10 sequences, SERVE_BATCH_SEQUENCES kept for batched passes),
 * so its cache holds 5 prefixes. A shortlist of more candidates than that scanned the cache: LRU
 * evicted each prefix just before the next route read it, and a route repeated over the same
 * candidates missed every one of them. Now a score call that reads more prefixes than the cache holds
 * keeps the first ones it read (native/src/model/engine_cache.cpp, EvictOne): the repeated route
 * reads every prefix the cache kept from it, concurrent routes too, with the same read-outs.
 *
 * Real inputs: the embedded gavel-mini pair over examples/skills, a real task; the projections' Δ is
 * widened (Projections.withCalibration) so that the verdict runs on 7 candidates, as a calibrated
 * Δ over a close library would make it, and its re-ranker (which reads the best two) and abstention
 * reference (src/route/library-cut.ts) taken out.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { Model } from "../../src/model/Model.js";
import { Projections } from "../../src/projections/projections.js";
import { Router, type RouteResult } from "../../src/route/index.js";
import { ResidentServer } from "../../src/serve/server.js";
import { connect, type ServeClient } from "../../src/serve/client.js";
import { SERVE_BATCH_SEQUENCES } from "../../src/cli/commands/serve.js";
import { repoRoot } from "../helpers/paths.js";

const CANDIDATES = 7;
const TASK = "This Postgres query on the orders table takes eight seconds; figure out why and make it fast.";
const OTHER = "Turn the 400 product photos in ./photos into 256 pixel square thumbnails in WebP.";
/** Cached and cold prefixes give the same log-probs within this (ModelLoadOptions.flashAttention). */
const TOL = 1e-4;

describe("the verdict's prefix cache through gavel serve", () => {
  let dir: string;
  let model: Model;
  let router: Router;
  let server: ResidentServer;
  let client: ServeClient;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-serve-cache-"));
    model = await Model.load(DEFAULT_MODEL, { contextSize: 2048, threads: 1, batchSequences: SERVE_BATCH_SEQUENCES });
    // the library's own abstention cut taken out too: its one measurement (40 prompts, each with a
    // verdict on 7 candidates here) is not what this counts, and costs minutes on one loaded thread
    const projections = (await Projections.load(DEFAULT_PROJECTIONS)).withCalibration({ delta: 1e3, maxShortlist: CANDIDATES, rerank: null, abstentionReference: null });
    router = await Router.open(model, { projections, bankDir: join(dir, "bank"), create: true });
    await router.install(join(repoRoot, "examples", "skills"));
    const socket = join(dir, "serve.sock");
    server = await ResidentServer.start({ router, model, modelPath: DEFAULT_MODEL, socket });
    client = await connect({ bank: router.bankDir, socket });
  });

  afterAll(async () => {
    client?.close();
    await server?.shutdown(); // closes the router and the model
    rmSync(dir, { recursive: true, force: true });
  });

  const route = (task: string, c = client) => c.request("route", { task }) as Promise<RouteResult>;

  /** The cache's counters over `f`. */
  async function counted<T>(f: () => Promise<T>): Promise<{ out: T; hits: number; misses: number; entries: number }> {
    const s0 = model.cacheStats();
    const out = await f();
    const s1 = model.cacheStats();
    return { out, hits: s1.hits - s0.hits, misses: s1.misses - s0.misses, entries: s1.entries };
  }

  it("a route repeated over more candidates than the cache holds reads every prefix it kept", async () => {
    const first = await counted(() => route(TASK));
    expect(first.out.verdict).toBe("ran");
    expect(first.out.shortlist).toHaveLength(CANDIDATES);
    const cap = first.entries;
    expect(cap).toBeGreaterThan(0);
    expect(cap).toBeLessThan(CANDIDATES); // the case: more candidates than cached prefixes
    const again = await counted(() => route(TASK));
    expect(again.out.verdict).toBe("ran");
    expect(again.hits).toBe(cap); // before: 0 (each prefix evicted just before it was read)
    expect(again.misses).toBe(CANDIDATES - cap);
    expect(again.out.skill).toBe(first.out.skill);
    for (const [i, c] of again.out.shortlist.entries()) {
      const was = first.out.shortlist.find((x) => x.skill === c.skill)!;
      expect(Math.abs(c.L - was.L), `${c.skill} L (${i})`).toBeLessThanOrEqual(TOL);
      expect(Math.abs(c.V - was.V), `${c.skill} V (${i})`).toBeLessThanOrEqual(TOL);
    }
    expect(model.cacheStats().batchDrops).toBe(0);
  });

  it("concurrent routes of one task, after a route of another, each read the prefixes the cache kept", async () => {
    await route(TASK);
    await route(OTHER); // other candidates: some of TASK's evicted
    const clients = await Promise.all([0, 1, 2].map(() => connect({ bank: router.bankDir, socket: join(dir, "serve.sock") })));
    try {
      await route(TASK);
      const cap = model.cacheStats().entries;
      const many = await counted(() => Promise.all(clients.map((c) => route(TASK, c))));
      for (const r of many.out) expect(r.verdict).toBe("ran");
      // each route's verdict (merged into one score call or not) reads the kept prefixes from the cache
      expect(many.hits).toBe(clients.length * cap);
      expect(many.misses).toBe(clients.length * (CANDIDATES - cap));
    } finally {
      for (const c of clients) c.close();
    }
  });
});
