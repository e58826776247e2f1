/**
 * Refits the default's abstention model in one command, on this CPU, from the committed per-query
 * records of the default's device run: their lexical read-outs (B's normaliser, lift, coverage,
 * reach) are recomputed from the task texts and the libraries with the projections' own BM25
 * constants (lexical-records.ts), then fit-abstention.ts fits on validation batches 1–5, the demo's
 * tasks and the hand-written off-domain prompts 1–5 (bench/data/off-domain-prompts.jsonl, never the
 * templated ones), and reports the held-out sets, after the table of the model the projections
 * carry now. Run it again after any change to the lexical expert (tokenizer, BM25, the constants).
 *
 * Usage: npx vite-node scripts/device/refit-abstention.ts -- [--projections P] [--records DIR]
 *          [--work DIR] [--write P]
 *   --projections  the projections whose ruling and BM25 constants the records replay
 *                  (default models/gavel-mini.projections.gguf; its abstention model is the "before")
 *   --records      the device run's records: l1/{val,test,offdomain}.jsonl.gz, examples/small-l1.jsonl.gz
 *                  and selection.json (default bench/results/2026-11-28-h200-default)
 *   --work         where the recomputed records go (default /tmp/gavel-abstention)
 *   --features a,b the candidate features (fit-abstention.ts's --features; default every one)
 *   --mid R        records over a mid-sized library (fit-abstention.ts's --mid), their lexical
 *                  read-outs already recomputed over that library
 *   --shape L=R    further records of that kind over another library, labelled L (repeatable;
 *                  fit-abstention.ts's --shape)
 *   --trigger-rate R  the stated off-domain trigger rate (fit-abstention.ts's; default 0.1)
 *   --band-from N  a by-size model: fitted on the records over N skills or more, the current model below
 *   --band-below N the small band of the current by-size model (from N) refitted on the records under
 *                  N skills, its large band kept; with --band-from A, a middle band for A to N − 1
 *                  skills fitted between the current model's small band (from A) and its large band
 *   --monotone     logistic families keep the weights of the evidence features (lab/eval/abstention-fit.ts
 *                  EVIDENCE_FEATURES) toward abstaining ≤ 0
 *   --write P      write the new model into P (a copy of the projections: P is read and rewritten)
 * With a reference idf in the projections, the demo's records get the reference coverage (gcov) too.
 * With a domain table in the projections, every record gets its task's domain score as well
 * (scripts/lexical/domain-records.ts); --shape records must carry it already.
 * Needs ../shared/data/swe-skills-bench/{tasks,skills}.jsonl and ../shared/data/skills-mit.jsonl.gz
 * (the 30.6K library, read whole: about a minute here).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { Projections } from "gavel-router";

const args = process.argv.slice(2).filter((a) => a !== "--");
const opt = (name: string, fallback: string | undefined) => {
  const at = args.indexOf(name);
  return at >= 0 ? args.splice(at, 2)[1] : fallback;
};
const projections = opt("--projections", "models/gavel-mini.projections.gguf")!;
const records = opt("--records", "bench/results/2026-11-28-h200-default")!;
const work = opt("--work", "/tmp/gavel-abstention")!;
const write = opt("--write", undefined);
const features = opt("--features", undefined);
const mid = opt("--mid", undefined);
const triggerRate = opt("--trigger-rate", undefined);
const bandFrom = opt("--band-from", undefined);
const bandBelow = opt("--band-below", undefined);
const monotoneAt = args.indexOf("--monotone");
const monotone = monotoneAt >= 0 && args.splice(monotoneAt, 1).length > 0;
const shapes: string[] = [];
for (let at = args.indexOf("--shape"); at >= 0; at = args.indexOf("--shape")) shapes.push("--shape", args.splice(at, 2)[1]);
if (args.length > 0) throw new Error(`refit-abstention.ts: unknown arguments ${args.join(" ")}`);
mkdirSync(work, { recursive: true });
const p = await Projections.load(projections);
const bm25 = ["--k1", String(p.lexicalK1), "--b", String(p.lexicalB)];
console.log(`${projections}: BM25 k1 ${p.lexicalK1}, b ${p.lexicalB}; β ${p.beta}, T ${p.lexicalTemperature}`);
const run = (script: string, ...a: string[]) => {
  console.log(`$ npx vite-node scripts/device/${script} -- ${a.join(" ")}`);
  execFileSync("npx", ["vite-node", `scripts/device/${script}`, "--", ...a], { stdio: "inherit" });
};
const examples = join(work, "examples.jsonl");
const templated = join(work, "offdomain.jsonl");
const handWritten = "bench/data/off-domain-prompts.jsonl";
run("example-tasks.ts", examples);
// the templated prompts are in the device's offdomain records too: their read-outs are recomputed
// with the rest (the fit leaves them out with --off offhw)
run("off-domain-tasks.ts", templated);
run("lexical-records.ts", `../shared/data/swe-skills-bench/tasks.jsonl,${templated},${handWritten}`, work, ...["val", "test", "offdomain"].map((s) => `${records}/l1/${s}.jsonl.gz`), ...bm25);
run("lexical-records.ts", `${examples},${templated},${handWritten}`, work, `${records}/examples/small-l1.jsonl.gz`, "--library", "examples/skills", ...bm25);
// with a reference idf in the projections, the demo's records get each pool skill's reference coverage
// (the feature gcov) as well; the further shapes must carry it already (scripts/select/reference-coverage.ts)
if (p.referenceIdf) {
  const small = join(work, "small-l1.jsonl.gz");
  console.log(`$ npx vite-node scripts/select/reference-coverage.ts -- ${small} ${small} --tasks ${examples},${templated},${handWritten} --projections ${projections}`);
  execFileSync("npx", ["vite-node", "scripts/select/reference-coverage.ts", "--", small, small, "--tasks", `${examples},${templated},${handWritten}`, "--projections", projections], { stdio: "inherit" });
}
// with a domain table, every record gets its task's domain score (the feature domain); the further
// shapes must carry it already (scripts/lexical/domain-records.ts)
if (p.domain) {
  const sets: [string, string][] = [["val.jsonl.gz", "../shared/data/swe-skills-bench/tasks.jsonl"], ["test.jsonl.gz", "../shared/data/swe-skills-bench/tasks.jsonl"], ["offdomain.jsonl.gz", `${templated},${handWritten}`], ["small-l1.jsonl.gz", `${examples},${templated},${handWritten}`]];
  for (const [file, tasks] of sets) {
    const f = join(work, file);
    console.log(`$ npx vite-node scripts/lexical/domain-records.ts -- ${f} ${f} --tasks ${tasks} --projections ${projections}`);
    execFileSync("npx", ["vite-node", "scripts/lexical/domain-records.ts", "--", f, f, "--tasks", tasks, "--projections", projections], { stdio: "inherit" });
  }
}
run("fit-abstention.ts", `${records}/selection.json`, "l1", work, join(work, "small-l1.jsonl.gz"), "--off", "offhw", "--compare", projections, ...(features ? ["--features", features] : []), ...(mid ? ["--mid", mid] : []), ...shapes, ...(triggerRate ? ["--trigger-rate", triggerRate] : []), ...(bandFrom ? ["--band-from", bandFrom] : []), ...(bandBelow ? ["--band-below", bandBelow] : []), ...(monotone ? ["--monotone"] : []), ...(write ? ["--write", write] : []));
