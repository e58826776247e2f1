/**
 * The skill folders the watcher's and sync's benches install and read: n folders `skill-<i>` in one
 * root, each a short SKILL.md (its description holds an unquoted ": ", which the front matter's
 * repair quotes, as many real files need), and the header line every bench prints.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";

/** Skill i's SKILL.md; `edit` changes its description. */
export const skillText = (i: number, edit = "") =>
  `---\nname: skill-${i}\ndescription: Use for the skill-${i} tasks: step ${i} of the work${edit}.\n---\n# skill-${i}\n\nSteps for part ${i} of the work, one by one.\n`;

/** Writes skills 0…n-1 into `root` (made as needed). */
export function writeSkillFolders(root: string, n: number): void {
  for (let i = 0; i < n; i++) {
    mkdirSync(join(root, `skill-${i}`), { recursive: true });
    writeFileSync(join(root, `skill-${i}`, "SKILL.md"), skillText(i));
  }
}

/** The bench's first line (machine, node, time, load) and its table's header. */
export function printHeader(bench: string, columns: readonly string[]): void {
  console.log(`${bench}: ${cpus()[0]?.model} × ${cpus().length}, node ${process.version}, ${new Date().toISOString()}, load ${loadavg()[0].toFixed(1)}`);
  console.log(`| ${columns.join(" | ")} |`);
  console.log(`| ${columns.map(() => "---").join(" | ")} |`);
}
