// A writer process for the readers-never-blocked test (issue 17): opens a Router on <bankDir> for
// writing (it holds the bank's lock until it exits), prints "state <json>" (the bank as a reader
// lists it) and then, for each "go" line on stdin, one change that commits once: installs a new
// skill, reinstalls one with new content, or uninstalls one; then prints the new state. After <ops>
// changes and one more "go" it closes the bank, prints "done" and exits. Run with vite-node:
//   bank-writer-child.ts <bankDir> <projections seed> <ops>
import { createInterface } from "node:readline";
import { Model, Projections, Router } from "../../src/index.js";
import { readerSkill, stateOf } from "./reader-skills.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";

const [dir, projSeed, opsArg] = process.argv.slice(2);
const model = await Model.load(TINY_LLAMA_PATH, { contextSize: 1024, sequences: 4, threads: 1 });
const projections = await Projections.random(model, { seed: Number(projSeed), dim: 32 });
const router = await Router.open(model, { projections, bankDir: dir, skillBudget: 128, create: false });
const print = (line: string) => process.stdout.write(line + "\n");
const state = () => print(`state ${JSON.stringify(stateOf(router.list()))}`);
state();
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const ops = Number(opsArg);
for (let op = 0; op < ops; op++) {
  const go = await lines.next();
  if (go.done) break;
  const have = router.list().map((s) => s.id);
  // in turn: a new skill, a new version of an installed one, an uninstall (while more than 3 remain)
  if (op % 3 === 0 || have.length <= 3) await router.install([readerSkill(`w${op}`, 1, op)], { commitEvery: 1 });
  else if (op % 3 === 1) await router.install([readerSkill(have[op % have.length], op + 2, op + 5)], { commitEvery: 1 });
  else await router.uninstall(have[op % have.length]);
  state();
}
// one more "go" before it lets go of the bank, so that the last state is read while it holds the lock
await lines.next();
await router.close();
await model.dispose();
print("done");
process.exit(0);
