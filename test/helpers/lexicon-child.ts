// A child process for the lexicon's crash tests: opens a bank (as the Library does, without keys in
// memory) and changes it at random, commit after commit, until it is killed. Run with vite-node:
//   lexicon-child.ts <dir> <header JSON> <seed> <mode>
// mode "random": runs until the parent SIGKILLs it (it prints "ready" after its first commit);
// mode "before-manifest": SIGKILLs itself at its third commit, after the lexicon's records and COMMIT
// are written and synced and before the manifest is (a commit participant joined after the lexicon's).
// Every commit rewrites the lexicon whole when dead records outweigh live ones (compactBytes 0).
import { mulberry32 } from "../../src/util/prng.js";
import { LexiconBank, randomSkill } from "./lexicon-bank.js";

const [dir, headerJson, seedArg, mode] = process.argv.slice(2);
const r = mulberry32(Number(seedArg));
const bank = await LexiconBank.open(dir, JSON.parse(headerJson), { compactBytes: 0 });
let commits = 0;
if (mode === "before-manifest") {
  bank.store.join({
    prepare: async () => {
      if (++commits === 3) process.kill(process.pid, "SIGKILL");
    },
    committed: async () => undefined,
  });
}
let next = bank.store.entries().length;
for (let step = 0; ; step++) {
  const ids = bank.store.entries().map((e) => e.id);
  const x = r();
  if (x < 0.45 || ids.length < 4) {
    for (let k = 0, n = 1 + Math.floor(r() * 6); k < n; k++) await bank.save(randomSkill(r, `s${next++}`));
  } else if (x < 0.7) {
    await bank.save(randomSkill(r, ids[Math.floor(r() * ids.length)]));
  } else {
    for (let k = 0, n = 1 + Math.floor(r() * 3); k < n; k++) await bank.remove(ids[Math.floor(r() * ids.length)]);
  }
  await bank.commit();
  if (step === 0) process.stdout.write("ready\n");
}
