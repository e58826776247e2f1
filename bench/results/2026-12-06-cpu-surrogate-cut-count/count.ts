/**
 * How many skills of the SWE-Skills-Bench library encode differently with the cut rule of 813b96b (a
 * cut inside a surrogate pair steps back before the pair) than without it, at the default route's
 * budgets (a Router opened on gavel-mini with no budget options, context 2048: route-go.sh
 * SKILL_BUDGET=default).
 *
 * The library is what route-go.sh installs: the 49 golds (swe-skills-bench/skills.jsonl) and every row
 * of skills-mit.jsonl.gz as {id, name, description, body}, read by loadSkills as `gavel install` reads
 * them. Only a skill whose description or body holds a surrogate pair (a character above U+FFFF) can
 * change; each of those is encoded twice, with src/render/encode.ts bundled as it is ("new") and with
 * its one line `if (insidePair(text, best)) best--;` removed ("old", the rule before 813b96b), on the
 * same model, so the rule is the only difference. Compared per skill:
 *  - the verdict's render r(s) at the skill budget (its tokens);
 *  - what the keys are read from (encodeSkillKeys): r(s), or when r(s) is cut and the key budget
 *    exceeds it the wider render at min(key budget, context), then the body past that render's cut up
 *    to the key budget (its tokens). Same tokens in ⇒ same keys out: the forward pass is not run.
 *
 *   nice -n 10 npx vite-node bench/results/2026-12-06-cpu-surrogate-cut-count/count.ts -- [--out changed.jsonl]
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, createWriteStream } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createRequire } from "node:module";
import { gunzipSync } from "node:zlib";
import { build } from "esbuild";
import { defaultModelPaths } from "../../../src/defaults.js";
import { Model } from "../../../src/model/Model.js";
import { Router } from "../../../src/route/Router.js";
import { loadSkills, type Skill } from "../../../src/skills/index.js";
import type { RenderEncoder as Encoder, EncodedSkill } from "../../../src/render/encode.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const outAt = argv.indexOf("--out");
const outPath = outAt >= 0 ? argv[outAt + 1] : "";
// --only ids.txt: encode only these ids (one a line), e.g. the changed rows of a full run
const onlyAt = argv.indexOf("--only");
const only = onlyAt >= 0 ? new Set(readFileSync(argv[onlyAt + 1], "utf8").split("\n").filter(Boolean)) : null;
const ROOT = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../../..");
const DATA = resolve(ROOT, "../shared/data");
const CONTEXT = 2048;
const STEP_BACK = "if (insidePair(text, best)) best--;";

// the two encoders: src/render/encode.ts bundled as is, and without the step back
const tmp = mkdtempSync(join(tmpdir(), "cutcount-"));
async function bundle(rule: "new" | "old"): Promise<typeof Encoder> {
  const outfile = join(tmp, `encode-${rule}.cjs`);
  const src = resolve(ROOT, "src/render/encode.ts");
  await build({
    entryPoints: [src],
    bundle: true,
    platform: "node",
    format: "cjs",
    outfile,
    logLevel: "warning",
    plugins: [{
      name: "cut-rule",
      setup(b) {
        b.onLoad({ filter: /src[\\/]render[\\/]encode\.ts$/ }, (args) => {
          const text = readFileSync(args.path, "utf8");
          const n = text.split(STEP_BACK).length - 1;
          if (n !== 1) throw new Error(`${args.path}: expected the step back once, found it ${n} times`);
          return { contents: rule === "new" ? text : text.replace(STEP_BACK, "/* the rule before 813b96b */"), loader: "ts" };
        });
      },
    }],
  });
  // required, not imported: vite-node does not follow a dynamic import of a file outside the project
  return (createRequire(import.meta.url)(outfile) as { RenderEncoder: typeof Encoder }).RenderEncoder;
}
const Encoders = { new: await bundle("new"), old: await bundle("old") };

// the default budgets: a Router opened as route-rerank-real opens it with --skill-budget default
const paths = defaultModelPaths();
const model = await Model.load(paths.model, { contextSize: CONTEXT });
const bank = join(tmp, "bank");
const router = await Router.open(model, { projections: paths.projections, bankDir: bank });
const S = router.skillBudget;
const K = router.keyBudget;
await router.close();
const W = Math.min(K, model.info.contextSize); // install.ts: the key render's budget
console.log(`model ${paths.model} (context ${model.info.contextSize}); projections ${paths.projections}`);
console.log(`default budgets: skill ${S}, key ${K} (key render ${W > S ? W : "none: the skill render"}, continuation ${K > Math.max(S, W) ? `up to ${K - Math.max(S, W)} tokens` : "none"})`);

// the library as route-go.sh installs it
const golds = (await loadSkills(join(DATA, "swe-skills-bench/skills.jsonl"))).skills;
const mitRows = gunzipSync(readFileSync(join(DATA, "skills-mit.jsonl.gz"))).toString("utf8").split("\n").filter((l) => l.trim() !== "");
const mitPath = join(tmp, "mit-full.jsonl");
writeFileSync(mitPath, mitRows.map((l) => { const d = JSON.parse(l); return JSON.stringify({ id: d.id, name: d.name, description: d.description, body: d.body }); }).join("\n") + "\n");
const mitLoad = await loadSkills(mitPath);
const rows: { skill: Skill; gold: boolean }[] = [...golds.map((skill) => ({ skill, gold: true })), ...mitLoad.skills.map((skill) => ({ skill, gold: false }))];
const failed = (mitLoad as { failed?: unknown[] }).failed?.length ?? 0;
const PAIR = /[\uD800-\uDBFF][\uDC00-\uDFFF]/;
const astralAny = rows.filter((r) => PAIR.test(r.skill.name) || PAIR.test(r.skill.description) || PAIR.test(r.skill.body));
const candidates = rows.filter((r) => (PAIR.test(r.skill.description) || PAIR.test(r.skill.body)) && (!only || only.has(r.skill.id)));
// install refuses a second skill with an id already taken (2 in this library): the first one stays
const seen = new Set<string>();
const installed = new Set<Skill>();
for (const r of rows) if (!seen.has(r.skill.id)) { seen.add(r.skill.id); installed.add(r.skill); }
console.log(`library: ${golds.length} golds + ${mitLoad.skills.length} public rows (${failed} failed to load) = ${rows.length}; ${seen.size} distinct ids`);
if (only) console.log(`only the ${only.size} ids of ${argv[onlyAt + 1]}`);
console.log(`with a character above U+FFFF: ${astralAny.length} in any field, ${candidates.length} in the description or body (${candidates.filter((r) => r.gold).length} golds)`);

// which golds serve which split (accepted ids: the gold and the rows with its name and description)
const tasks = readFileSync(join(DATA, "swe-skills-bench/tasks.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as { id: string; batch: string; gold_skill_ids: string[] });
const key = (s: Skill) => JSON.stringify([s.name, s.description]);
const byText = new Map<string, string[]>();
for (const r of rows) byText.set(key(r.skill), [...(byText.get(key(r.skill)) ?? []), r.skill.id]);
const splitsOf = new Map<string, Set<string>>();
for (const t of tasks) {
  const b = Number(t.batch.replace(/\D/g, ""));
  const split = b >= 1 && b <= 5 ? "val" : b >= 6 && b <= 10 ? "test" : null;
  if (!split) continue;
  for (const g of t.gold_skill_ids) {
    const gold = rows.find((r) => r.skill.id === g)?.skill;
    for (const id of gold ? [g, ...(byText.get(key(gold)) ?? [])] : [g]) {
      splitsOf.set(id, (splitsOf.get(id) ?? new Set()).add(`${split}:${t.id}`));
    }
  }
}

type Enc = Omit<EncodedSkill, "tokens"> & { tokens: Int32Array };
interface Encoding { render: Enc; keyRender: Enc; continuation: Int32Array | null }
const encoders = {
  new: { s: new Encoders.new(model as never, S), w: W > S ? new Encoders.new(model as never, W) : null },
  old: { s: new Encoders.old(model as never, S), w: W > S ? new Encoders.old(model as never, W) : null },
};
function encode(rule: "new" | "old", skill: Skill): Encoding {
  const e = encoders[rule];
  const render = e.s.encodeSkill(skill);
  // keys.ts encodeSkillKeys: the wider render when r(s) is cut, then the body past its cut
  const keyRender = render.truncated && e.w ? e.w.encodeSkill(skill) : render;
  const readTo = keyRender === render ? S : W;
  const budget = K - readTo;
  const rest = skill.body.slice(keyRender.bodyChars);
  const continuation = keyRender.truncated && budget > 0 && rest.length > 0
    ? model.tokenize(rest.slice(0, budget * 16), { special: false, addBos: false }).slice(0, budget)
    : null;
  return { render, keyRender, continuation };
}
const same = (a: Int32Array | null, b: Int32Array | null) => (a === null || b === null ? a === b : a.length === b.length && a.every((x, i) => x === b[i]));
const firstDiff = (a: Int32Array, b: Int32Array) => { let i = 0; while (i < a.length && i < b.length && a[i] === b[i]) i++; return i; };
/** The old tokens that the new render lacks (it is one token shorter where they differ), as text. */
const dropped = (a: Int32Array, b: Int32Array) => { const i = firstDiff(a, b); return JSON.stringify(model.detokenize(a.subarray(i, i + a.length - b.length), { special: false })); };
const cutOf = (e: Enc) => `${e.descriptionChars}/${e.bodyChars}`;

const out = outPath ? createWriteStream(outPath) : null;
const t0 = Date.now();
let done = 0;
const changed: { id: string; gold: boolean; installed: boolean; render: boolean; keys: boolean; splits: string[] }[] = [];
let truncatedS = 0;
for (const { skill, gold } of candidates) {
  const a = encode("old", skill);
  const b = encode("new", skill);
  if (b.render.truncated) truncatedS++;
  const render = !same(a.render.tokens, b.render.tokens);
  const keys = !same(a.keyRender.tokens, b.keyRender.tokens) || a.keyRender.keyStart !== b.keyRender.keyStart || a.keyRender.keyEnd !== b.keyRender.keyEnd || !same(a.continuation, b.continuation);
  if (render || keys) {
    const splits = [...(splitsOf.get(skill.id) ?? [])].sort();
    changed.push({ id: skill.id, gold, installed: installed.has(skill), render, keys, splits });
    const rec = {
      id: skill.id, gold, installed: installed.has(skill), splits,
      render: { changed: render, cut: [cutOf(a.render), cutOf(b.render)], tokens: [a.render.tokens.length, b.render.tokens.length], firstDiff: render ? firstDiff(a.render.tokens, b.render.tokens) : null,
        tokensAt: render ? [Array.from(a.render.tokens.subarray(firstDiff(a.render.tokens, b.render.tokens))), Array.from(b.render.tokens.subarray(firstDiff(a.render.tokens, b.render.tokens)))] : null },
      keys: { changed: keys, wide: a.keyRender !== a.render, cut: [cutOf(a.keyRender), cutOf(b.keyRender)], tokens: [a.keyRender.tokens.length, b.keyRender.tokens.length],
        firstDiff: keys ? firstDiff(a.keyRender.tokens, b.keyRender.tokens) : null,
        tokensAt: keys ? [Array.from(a.keyRender.tokens.subarray(firstDiff(a.keyRender.tokens, b.keyRender.tokens))), Array.from(b.keyRender.tokens.subarray(firstDiff(a.keyRender.tokens, b.keyRender.tokens)))] : null,
        keyEnd: [a.keyRender.keyEnd, b.keyRender.keyEnd], continuation: [a.continuation?.length ?? 0, b.continuation?.length ?? 0],
        continuationFirstDiff: a.continuation && b.continuation && !same(a.continuation, b.continuation) ? firstDiff(a.continuation, b.continuation) : null },
      // the tokens the old render has and the new one lacks, as text
      dropped: render ? dropped(a.render.tokens, b.render.tokens) : null,
      keysDropped: keys ? dropped(a.keyRender.tokens, b.keyRender.tokens) : null,
      oldTail: model.detokenize(a.render.tokens.subarray(Math.max(0, a.render.tokens.length - 3)), { special: false }),
      newTail: model.detokenize(b.render.tokens.subarray(Math.max(0, b.render.tokens.length - 3)), { special: false }),
    };
    out?.write(JSON.stringify(rec) + "\n");
  }
  if (++done % 500 === 0) console.error(`${done}/${candidates.length} (${((Date.now() - t0) / 1000).toFixed(0)} s), ${changed.length} changed`);
}
out?.end();
const count = (f: (c: (typeof changed)[number]) => boolean) => changed.filter(f).length;
console.log(`encoded ${candidates.length} skills twice in ${((Date.now() - t0) / 1000).toFixed(0)} s; ${truncatedS} of them cut at the skill budget`);
console.log(`changed: ${changed.length} rows (${count((c) => c.installed)} installed: a duplicate id is refused) — the verdict render on ${count((c) => c.render)}, the keys on ${count((c) => c.keys)}, both on ${count((c) => c.render && c.keys)}`);
console.log(`changed golds (the 49): ${changed.filter((c) => c.gold).map((c) => c.id).join(", ") || "none"}`);
const splitRows = changed.filter((c) => c.splits.length > 0);
console.log(`changed rows that are an accepted id of a task: ${splitRows.length}${splitRows.map((c) => `\n  ${c.id}${c.gold ? " (gold)" : " (copy)"}: val ${c.splits.filter((s) => s.startsWith("val:")).length} tasks, test ${c.splits.filter((s) => s.startsWith("test:")).length} tasks`).join("")}`);
await model.dispose();
rmSync(tmp, { recursive: true, force: true });
