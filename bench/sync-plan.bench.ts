/**
 * What `gavel sync` spends before it writes anything: reading the host's skill folders
 * (`discoverSkills`) and comparing them with the bank (`planSync`, src/serve/sync-plan.ts). n skill
 * folders in a project's `.claude/skills`, each a short SKILL.md, are installed with the embedded
 * default pair (skill budget 128); then the plan is made three times with nothing changed, and once
 * with 1% of the files edited. Per plan: the discovery's and the plan's own time, and what it found.
 *
 *   npm run bench -- sync-plan [n = 1000,10000]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model } from "../src/model/Model.js";
import { Router } from "../src/route/Router.js";
import { printHeader, skillText, writeSkillFolders } from "./skill-folders.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../src/defaults.js";
import { discoverSkills } from "../src/skills/discover.js";
import { planSync } from "../src/serve/sync-plan.js";

const sizes = (process.argv[2] ?? "1000,10000").split(",").map(Number);
const model = await Model.load(DEFAULT_MODEL, { contextSize: 512 });
printHeader("sync-plan", ["skills", "install", "folders", "discovery", "plan", "found"]);

for (const n of sizes) {
  const root = mkdtempSync(join(tmpdir(), "gavel-sync-plan-"));
  try {
    const home = join(root, "home");
    const skills = join(root, ".claude", "skills");
    mkdirSync(home);
    writeSkillFolders(skills, n);
    const router = await Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: join(root, "bank"), skillBudget: 128 });
    const t0 = performance.now();
    await router.install(skills);
    const install = ((performance.now() - t0) / 1000).toFixed(1);
    const plan = async (what: string) => {
      const t1 = performance.now();
      const found = await discoverSkills({ host: "claude-code", home, projectDir: root });
      const t2 = performance.now();
      const p = await planSync(router, found);
      const t3 = performance.now();
      const did = `${p.add.length} add, ${p.update.length} update, ${p.unchanged.length} unchanged, ${p.remove.length} remove`;
      console.log(`| ${n} | ${install} s | ${what} | ${(t2 - t1).toFixed(0)} ms | ${(t3 - t2).toFixed(0)} ms | ${did} |`);
    };
    for (let k = 0; k < 3; k++) await plan("nothing changed");
    const edits = Math.max(1, Math.round(n / 100));
    for (let i = 0; i < edits; i++) writeFileSync(join(skills, `skill-${i * 100}`, "SKILL.md"), skillText(i * 100, ", edited"));
    await plan(`${edits} edited`);
    await router.close();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
await model.dispose();
