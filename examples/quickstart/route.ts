// Route one task to a skill with gavel-router, in strict TypeScript (compile with tsc, then run the
// .js with node in a CommonJS project, the default of `npm init -y`). It opens the embedded pair
// (gavel-mini and its projections), installs a folder of SKILL.md skills (by default the 24 examples
// the package ships) into a temporary bank, and routes one task. (Type-checked against the installed
// package by test/e2e/pack.test.ts, not by the repository's tsconfig.)
import { Model, Router, defaultModelPaths, type RouteResult } from "gavel-router";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const packageDir = dirname(require.resolve("gavel-router/package.json"));
const skillsDir: string = process.argv[2] ?? join(packageDir, "examples", "skills");
const task = "Turn the 400 product photos in ./photos into 256 pixel square thumbnails in WebP.";

/** What to print for a route result: the chosen skill, or why it declined. */
function describe(result: RouteResult): string {
  if (!result.abstained) return `chosen: ${result.skill}`;
  // `abstention` is optional: present only when the abstention model ran
  const why = result.abstention ? `${result.abstention.reason} (score ${result.abstention.score.toFixed(2)})` : "no skill serves it";
  return `declined: ${why}`;
}

async function main(): Promise<void> {
  const { model: modelPath, projections } = defaultModelPaths();
  const model = await Model.load(modelPath, { contextSize: 2048 });
  const bankDir = mkdtempSync(join(tmpdir(), "gavel-bank-"));
  const router = await Router.open(model, { projections, bankDir, skillBudget: 512 });
  try {
    const report = await router.install(skillsDir);
    console.log(`installed ${report.installed.length} skills from ${skillsDir}`);
    console.log(describe(await router.route(task)));
  } finally {
    await router.close();
    await model.dispose();
    rmSync(bankDir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
