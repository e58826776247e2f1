// Route one task to a skill with gavel-router (CommonJS: run with `node route.cjs [skills-folder]`).
// It opens the embedded pair (gavel-mini and its projections), installs a folder of SKILL.md skills
// (by default the 24 examples the package ships) into a temporary bank, and routes one task.
const { Model, Router, defaultModelPaths } = require("gavel-router");
const { mkdtempSync, rmSync } = require("node:fs");
const { tmpdir } = require("node:os");
const { dirname, join } = require("node:path");

const packageDir = dirname(require.resolve("gavel-router/package.json"));
const skillsDir = process.argv[2] ?? join(packageDir, "examples", "skills");
const task = "Turn the 400 product photos in ./photos into 256 pixel square thumbnails in WebP.";

async function main() {
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
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
