// Run as another user by test/unit/security-paths.test.ts: opens a bank it may not read or write (for
// writing, as a snapshot, and checks it) and prints one JSON line per attempt: the error's code and
// message, or "ok".
//   permission-child.ts <bankDir> <projections seed> <dim>
import { BankStore, bankHeaderFor } from "../../src/bank/index.js";
import { checkBank } from "../../src/bank/check.js";
import type { ModelFingerprint } from "../../src/model/fingerprint.js";
import { Projections } from "../../src/projections/projections.js";

const [dir, seed, dim] = process.argv.slice(2);
const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "ef".repeat(32) };
const header = bankHeaderFor(await Projections.random(fp, { seed: Number(seed), dim: Number(dim) }));
const attempts: [string, () => Promise<unknown>][] = [
  ["open", async () => (await BankStore.open(dir, header)).close()],
  ["snapshot", async () => (await BankStore.openSnapshot(dir, header)).close()],
  ["check", () => checkBank(dir)],
];
for (const [what, f] of attempts) {
  try {
    await f();
    console.log(JSON.stringify({ what, code: "ok" }));
  } catch (err) {
    const e = err as { code?: string; message?: string; name?: string };
    console.log(JSON.stringify({ what, code: e.code ?? "none", name: e.name, message: e.message }));
  }
}
