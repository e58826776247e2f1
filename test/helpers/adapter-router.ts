// The real Router the adapter e2e tests (ai-sdk, langchain, mastra) drive their frameworks over: the
// embedded gavel-mini pair with the 24 example skills installed into a temporary bank. The three files
// set it up and tore it down the same way, line for line; it lives here once so that they stay in step.
// Each test file keeps its framework's own parts (mock model, agent, what the model received).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { Model, Router, defaultModelPaths, type SkillRecord } from "../../src/index.js";
import { repoRoot } from "./paths.js";

/** A task the example skills route to image-resizing. */
export const PHOTOS = "Turn the 400 product photos in ./photos into 256 pixel square thumbnails in WebP.";
/** A task no example skill fits: the ruling abstains. */
export const HAIKU = "Write a haiku about autumn leaves.";

export interface ExampleSkillsRouter {
  router: Router;
  /** The installed image-resizing skill, the one PHOTOS routes to. */
  image: SkillRecord;
}

/**
 * Registers the enclosing describe's beforeAll (load the model, open a router on a fresh bank under a
 * temporary dir named `tmpPrefix…`, install examples/skills, expecting all 24) and its afterAll (close,
 * dispose, remove the dir). The returned object's fields are set once beforeAll has run.
 */
export function setUpExampleSkillsRouter(tmpPrefix: string): ExampleSkillsRouter {
  const fixture = {} as ExampleSkillsRouter;
  let dir: string | undefined;
  let model: Model | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), tmpPrefix));
    const paths = defaultModelPaths();
    model = await Model.load(paths.model, { contextSize: 2048 });
    fixture.router = await Router.open(model, { projections: paths.projections, bankDir: join(dir, "bank"), skillBudget: 1024 });
    expect((await fixture.router.install(join(repoRoot, "examples", "skills"))).installed.length).toBe(24);
    fixture.image = await fixture.router.get("image-resizing");
  }, 300_000);

  afterAll(async () => {
    await fixture.router?.close();
    await model?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  return fixture;
}
