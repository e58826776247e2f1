// Route one task to a skill with gavel-router (ES module: run with `node route.mjs [skills-folder]`).
// It opens the embedded pair (gavel-mini and its projections), installs a folder of SKILL.md skills
// (by default the 24 examples the package ships) into a temporary bank, and routes one task.
import { Model, Router, defaultModelPaths } from "gavel-router";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const packageDir = dirname(createRequire(import.meta.url).resolve("gavel-router/package.json"));
const skillsDir = process.argv[2] ?? join(packageDir, "examples", "skills");
const task = "Turn the 400 product photos in ./photos into 256 pixel square thumbnails in WebP.";

const { model: modelPath, projections } = defaultModelPaths();
const model = await Model.load(modelPath, { contextSize: 2048 });
const bankDir = mkdtempSync(join(tmpdir(), "gavel-bank-"));
const router = await Router.open(model, { projections, bankDir, skillBudget: 512 });
try {
  const report = await router.install(skillsDir);
  console.log(`installed ${report.installed.length} skills from ${skillsDir}`);
  const result = await router.route(task);
  if (result.abstained) console.log(`declined: ${result.abstention?.reason ?? "no skill serves it"}`);
  else console.log(`chosen: ${result.skill}`);
} finally {
  await router.close();
  await model.dispose();
  rmSync(bankDir, { recursive: true, force: true });
}
