// An already-aborted signal wins over what the call would otherwise fail with: route, glance and rank
// on an empty bank, and install of an empty source, reject with ABORTED ("<verb>: the operation was
// aborted", the signal's reason as its cause), not EMPTY_LIBRARY; without the signal they are EMPTY_LIBRARY.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSkills, Model, Projections, Router } from "../../src/index.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { expectCode } from "../helpers/gavel-error.js";

const ABORTED = { code: "ABORTED", message: expect.stringMatching(/^(Router\.\w+|loadSkills): the operation was aborted$/) };

describe("an already-aborted signal is checked first", () => {
  let root: string;
  let model: Model;
  let router: Router;
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "gavel-aborted-first-"));
    model = await Model.load(TINY_LLAMA_PATH, { contextSize: 512, threads: 1 });
    const projections = await Projections.random(model, { seed: 3, dim: 16 });
    router = await Router.open(model, { projections, bankDir: join(root, "bank"), skillBudget: 256 });
  });
  afterAll(async () => {
    await router?.close();
    await model?.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  it("route, glance and rank on an empty bank: ABORTED with the signal, EMPTY_LIBRARY without", async () => {
    const signal = AbortSignal.abort(new Error("stopped by the caller"));
    const task = "Extract the tables from report.pdf";
    for (const call of [() => router.route(task, { signal }), () => router.route(task, { signal, explain: true }), () => router.glance(task, { signal }), () => router.rank(task, { signal })]) {
      const err = await call().then(() => null, (e: unknown) => e);
      expect(err).toMatchObject(ABORTED);
      expect((err as Error).cause).toBe(signal.reason);
    }
    await expectCode(router.route(task), "EMPTY_LIBRARY");
    await expectCode(router.glance(task), "EMPTY_LIBRARY");
  });

  it("install and loadSkills of an empty source: ABORTED with the signal, EMPTY_LIBRARY without", async () => {
    const signal = AbortSignal.abort();
    const empty = join(root, "no-skills");
    mkdirSync(empty);
    await expect(router.install([], { signal })).rejects.toMatchObject(ABORTED);
    await expect(router.install(empty, { signal })).rejects.toMatchObject(ABORTED);
    await expect(loadSkills([], { signal })).rejects.toMatchObject(ABORTED);
    await expect(loadSkills(join(root, "missing"), { signal })).rejects.toMatchObject(ABORTED);
    await expectCode(router.install([]), "EMPTY_LIBRARY");
    await expectCode(loadSkills(empty), "EMPTY_LIBRARY");
  });
});
