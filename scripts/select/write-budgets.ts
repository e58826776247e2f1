/**
 * Writes the skill and key budgets a router opens with into a projections file, keeping everything
 * else in it (the hash too, so banks stay valid): the budgets the file's tables were measured with
 * (`scripts/device/route-go.sh`: --skill-budget 512, KEY_BUDGET=1536 for the embedded pair).
 *
 *   npx vite-node scripts/select/write-budgets.ts -- SKILL_BUDGET KEY_BUDGET IN.gguf OUT.gguf   (0: unset; OUT may be IN)
 */
import { Projections } from "../../src/projections/projections.js";

const [skill, key, src, out] = process.argv.slice(2).filter((a) => a !== "--");
if (!src || !out || !/^\d+$/.test(skill ?? "") || !/^\d+$/.test(key ?? "")) throw new Error("usage: write-budgets.ts SKILL_BUDGET KEY_BUDGET IN.gguf OUT.gguf");
const p = (await Projections.load(src)).withCalibration({ skillBudget: Number(skill), keyBudget: Number(key) });
await p.save(out);
console.log(`wrote ${out}: skill budget ${p.skillBudget}, key budget ${p.keyBudget}`);
