/**
 * The fuzz targets: each builds one mutated input from a seed in a temp dir and runs the package's
 * real entry point on it, inside the worker process (worker.ts). A trial returns normally (ok), throws
 * a GavelError (typed refusal: ok), throws a {@link SilentWrong} (an oracle caught a wrong result),
 * or throws anything else (a crash class: an untyped exception). Signals, exits and timeouts are
 * seen by the parent (harness.ts).
 *
 * Oracles (what "silent wrong result" means where a check is possible):
 * - skills: the unmutated skill folders beside the mutated one load exactly as they do alone (same
 *   ids and content hashes: one hostile folder neither stalls nor changes the others), and every
 *   loaded skill's content hash is that of its name, description and body, its body within the cap;
 * - model: none beyond "loads and runs a forward pass, or a typed refusal" (a mutated model that
 *   llama.cpp accepts may compute anything);
 * - projections: a file that loads has finite constants within the documented bounds (the route over
 *   it must then be a typed error or a finite ruling);
 * - bank: a mutation of `keys*.bin`, `texts/*.json` or `lexicon.bin` must leave the bank refused
 *   (typed, at open or at route) or routing exactly as before (same skill, same shortlist, same
 *   scores bit for bit), and `gavel check` must report a problem whenever keys or texts changed and
 *   the route did not refuse; manifest and lock mutations are checked for crashes and hangs only (a
 *   manifest may legitimately be edited: names, sources, the disable flag).
 */
import { spawnSync } from "node:child_process";
import { cp, mkdir, readFile, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { tinyLlamaPath } from "../../test/fixtures/tiny-llama.js";
import { checkBank } from "../../src/bank/check.js";
import { GavelError, loadSkills, Model, Projections, Router, type Skill } from "../../src/index.js";
import { skillContentHash } from "../../src/skills/parse.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { ggufLayout, mutateBytes, mutateGguf, mutateJson, mutateSkillText, R, type GgufLayout } from "./mutate.js";

export const REPO = join(import.meta.dirname, "..", "..");
export const STORIES = join(REPO, "..", "shared", "models", "stories260Ktok512.gguf");

/**
 * The llama model the model and skills targets use: stories260K from ../shared, or on a clone without
 * it the generated tiny llama of the same shape (test/fixtures/tiny-llama.ts).
 */
async function fuzzModel(): Promise<string> {
  return existsSync(STORIES) ? STORIES : tinyLlamaPath();
}
const EXAMPLES = join(REPO, "examples", "skills");

/** An oracle's finding: the entry point returned a result that is wrong. */
export class SilentWrong extends Error {}

/** What a trial reports (the parent adds crash, hang and memory). */
export interface TrialOutcome {
  class: "ok" | "typed" | "silent" | "error";
  code?: string;
  what: string;
  detail?: string;
}

/** Shared state of one worker: a scratch root, and what targets load once. */
export interface WorkerContext {
  root: string;
  /** Where the base bank and its baseline routes are cached across workers of one run. */
  cache: string;
  model?: Model;
  projections?: Projections;
  /** stories260K and random projections for installs of fuzzed skills. */
  stories?: Model;
  storiesProjections?: Projections;
  baseBank?: { dir: string; routes: string[] };
}

export interface Target {
  name: string;
  /** Runs one trial in `dir` (empty, the worker's); returns what the mutation was. */
  trial(r: R, dir: string, ctx: WorkerContext): Promise<string | { what: string; code: string }>;
}

/** Runs a trial and classifies how it ended. */
export async function runTrial(target: Target, seed: number, dir: string, ctx: WorkerContext): Promise<TrialOutcome> {
  const what: string[] = [];
  const r = new R(seed);
  try {
    const got = await target.trial(r, dir, ctx);
    if (typeof got !== "string") return { class: "typed", code: got.code, what: got.what };
    what.push(got);
    return { class: "ok", what: what.join(" ") };
  } catch (err) {
    const w = err instanceof Error && "fuzzWhat" in err ? String((err as { fuzzWhat: unknown }).fuzzWhat) : "";
    if (err instanceof SilentWrong) return { class: "silent", what: w, detail: err.message };
    if (err instanceof GavelError) return { class: "typed", code: err.code, what: w };
    return { class: "error", what: w, detail: err instanceof Error ? `${err.name}: ${err.message}\n${err.stack?.split("\n").slice(1, 6).join("\n")}` : String(err) };
  }
}

/**
 * Tags an error with the mutation, so a failure prints what input caused it; the mutation is also
 * written to stdout first (a `\u0001NOTE` line), so a trial that kills the process is described too.
 */
async function tagged<T>(what: string, f: () => Promise<T>): Promise<T> {
  process.stdout.write(`\u0001NOTE ${what.replace(/\n/g, " ").slice(0, 300)}\n`);
  try {
    return await f();
  } catch (err) {
    if (err instanceof Error) Object.assign(err, { fuzzWhat: what });
    throw err;
  }
}

// ---------------------------------------------------------------- skills

let exampleNames: string[] | undefined;
const alone = new Map<string, string>();

/** The content hash an example skill loads with on its own. */
async function aloneHash(name: string): Promise<string> {
  let h = alone.get(name);
  if (h === undefined) {
    const res = await loadSkills(join(EXAMPLES, name));
    h = res.skills[0].contentHash;
    alone.set(name, h);
  }
  return h;
}

/** Replaces `path` with something that is not a regular file (or a link to one). */
async function specialFile(r: R, path: string, dir: string): Promise<string> {
  await rm(path, { force: true, recursive: true });
  const kind = r.pick(["/dev/zero", "/dev/urandom", "/dev/null", "fifo", "dir", "dangling", "loop", "/proc/self/status", "/proc/self/mem", "self"]);
  if (kind === "fifo") spawnSync("mkfifo", [path]);
  else if (kind === "dir") await mkdir(path);
  else if (kind === "dangling") await symlink(join(dir, "nowhere"), path);
  else if (kind === "loop") {
    await symlink(`${path}.b`, path);
    await symlink(path, `${path}.b`).catch(() => undefined);
  } else if (kind === "self") await symlink(path, path);
  else await symlink(kind, path);
  return `special:${kind}`;
}

export const skillsTarget: Target = {
  name: "skills",
  async trial(r, dir, ctx) {
    exampleNames ??= (await readdir(EXAMPLES)).sort();
    const names = [...new Set(Array.from({ length: 1 + r.int(3) }, () => r.pick(exampleNames!)))];
    const lib = join(dir, "lib");
    for (const n of names) await cp(join(EXAMPLES, n), join(lib, n), { recursive: true });
    const victim = names[0];
    const file = join(lib, victim, "SKILL.md");
    let what: string;
    const roll = r.next();
    if (roll < 0.08) what = await specialFile(r, file, dir);
    else if (roll < 0.11) {
      await symlink(lib, join(lib, victim, "cycle"));
      what = "folder-cycle";
    } else {
      const m = mutateSkillText(r, await readFile(file, "utf8"));
      await writeFile(file, m.out);
      what = m.what;
    }
    what = `${victim} ${what}`;
    const res = await tagged(what, () => loadSkills(lib));
    for (const s of res.skills) checkSkill(s, what);
    for (const n of names.slice(1)) {
      const got = res.skills.find((s) => s.source.startsWith(join(lib, n) + "/") || s.source === join(lib, n, "SKILL.md"));
      if (!got) throw new SilentWrong(`${what}: the untouched skill ${n} did not load beside it`);
      if (got.contentHash !== (await aloneHash(n))) throw new SilentWrong(`${what}: the untouched skill ${n} loaded with other content`);
    }
    // One trial in four installs what loaded (stories260K, random projections) and routes to it:
    // awkward text goes through llama.cpp's tokenizer and a forward pass.
    if (res.skills.length > 0 && r.chance(0.25)) {
      ctx.stories ??= await Model.load(await fuzzModel(), { contextSize: 1024, sequences: 4, threads: 1 });
      ctx.storiesProjections ??= await Projections.random(ctx.stories, { seed: 11, dim: 32 });
      await tagged(`${what} (install)`, async () => {
        const router = await Router.open(ctx.stories!, { projections: ctx.storiesProjections!, bankDir: join(dir, "bank"), skillBudget: 128, create: true });
        try {
          const rep = await router.install(res.skills);
          if (rep.installed.length + rep.failed.length !== res.skills.length) throw new SilentWrong(`${what}: install accounted for ${rep.installed.length + rep.failed.length} of ${res.skills.length} skills`);
          await router.route(`${res.skills[0].description}`);
        } finally {
          await router.close();
        }
      });
    }
    // A per-skill refusal is a typed one (loadSkills reports it and goes on).
    if (res.failed.length > 0) return { what, code: res.failed[0].error.code };
    return what;
  },
};

function checkSkill(s: Skill, what: string): void {
  if (typeof s.name !== "string" || typeof s.description !== "string" || typeof s.body !== "string") throw new SilentWrong(`${what}: a skill with non-string fields`);
  if (s.contentHash !== skillContentHash(s.name, s.description, s.body)) throw new SilentWrong(`${what}: content hash does not match the content`);
  if (Buffer.byteLength(s.body, "utf8") > 1 << 20) throw new SilentWrong(`${what}: body above the 1 MiB cap`);
}

// ---------------------------------------------------------------- model

let storiesBytes: { buf: Buffer; layout: GgufLayout } | undefined;

export const modelTarget: Target = {
  name: "model",
  async trial(r, dir) {
    if (!storiesBytes) {
      const buf = await readFile(await fuzzModel());
      storiesBytes = { buf, layout: ggufLayout(buf) };
    }
    const file = join(dir, "m.gguf");
    let m = mutateGguf(r, storiesBytes.buf, storiesBytes.layout, { fieldFilter: /llama\.|tokenizer\.ggml\.(tokens|scores|token_type)|general\.architecture|\.n_dims|\.dim|\.type$|n_tensors|n_kv/ });
    // Now and then a second mutation (the layout holds while the length does).
    if (r.chance(0.15) && m.out.length === storiesBytes.buf.length) {
      const m2 = mutateGguf(r, m.out, storiesBytes.layout);
      m = { out: m2.out, what: `${m.what} + ${m2.what}` };
    }
    await writeFile(file, m.out);
    await tagged(m.what, async () => {
      const model = await Model.load(file, { contextSize: 64, sequences: 2, threads: 1 });
      try {
        const t = model.tokenize("Once upon a time there was", { addBos: true });
        await model.hiddenStates(t, Math.min(1, model.info.nLayer - 1));
        await model.score(t.subarray(0, Math.max(1, t.length - 2)), t.subarray(Math.max(1, t.length - 2)));
      } finally {
        await model.dispose();
      }
    });
    return m.what;
  },
};

// ---------------------------------------------------------------- projections

let projBytes: { buf: Buffer; layout: GgufLayout } | undefined;
const MAX_CONSTANT = 1e9;

export const projectionsTarget: Target = {
  name: "projections",
  async trial(r, dir, ctx) {
    if (!projBytes) {
      const buf = await readFile(DEFAULT_PROJECTIONS);
      projBytes = { buf, layout: ggufLayout(buf) };
    }
    const file = join(dir, "p.gguf");
    const m = r.chance(0.1) ? { out: mutateBytes(r, projBytes.buf).out, what: "bytes" } : mutateGguf(r, projBytes.buf, projBytes.layout, { nanBlocks: true, fieldFilter: /^gavel\.|\.dim|\.n_dims|\.offset/ });
    await writeFile(file, m.out);
    const p = await tagged(m.what, () => Projections.load(file));
    const meta = p as unknown as Record<string, unknown>;
    for (const k of ["alpha", "gamma", "beta", "delta", "tau", "lexicalTemperature", "eps", "maxShortlist"]) {
      const v = meta[k];
      if (typeof v === "number" && !(Number.isFinite(v) && Math.abs(v) <= MAX_CONSTANT)) throw new SilentWrong(`${m.what}: loaded with ${k} = ${v}`);
    }
    // Now and then, route with it over the base bank (a W_q block of NaN must be a typed error).
    if (r.chance(0.25)) {
      const base = await baseBank(ctx);
      const bank = join(dir, "bank");
      await cp(base.dir, bank, { recursive: true });
      await tagged(m.what, async () => {
        const router = await Router.open(ctx.model!, { projections: p, bankDir: bank, create: false });
        try {
          const res = await router.route(TASKS[0]);
          for (const c of res.shortlist) if (!Number.isFinite(c.S ?? 0) || !Number.isFinite(c.g)) throw new SilentWrong(`${m.what}: a route with non-finite scores`);
        } finally {
          await router.close();
        }
      });
    }
    return m.what;
  },
};

// ---------------------------------------------------------------- bank

export const TASKS = ["Pull the tables out of this scanned PDF invoice into CSV.", "My Postgres query on the orders table is slow; how do I find the missing index?"];

/** What a route decides, to compare bit for bit. */
function routeKey(res: Awaited<ReturnType<Router["route"]>>): string {
  return JSON.stringify({ skill: res.skill, abstained: res.abstained, shortlist: res.shortlist.map((c) => [c.skill, c.g, c.L, c.V, c.B, c.S]) });
}

/** Loads the embedded pair once per worker. */
async function embedded(ctx: WorkerContext): Promise<void> {
  ctx.model ??= await Model.load(DEFAULT_MODEL, { contextSize: 2048, sequences: 4, threads: 1 });
  ctx.projections ??= await Projections.load(DEFAULT_PROJECTIONS);
}

/** The bank of examples/skills installed with the embedded pair (built once per run, cached), and its baseline routes. */
export async function baseBank(ctx: WorkerContext): Promise<{ dir: string; routes: string[] }> {
  if (ctx.baseBank) return ctx.baseBank;
  await embedded(ctx);
  const dir = join(ctx.cache, "base-bank");
  const routesFile = join(ctx.cache, "base-routes.json");
  if (!existsSync(routesFile)) {
    const tmp = join(ctx.cache, `base-bank.${process.pid}`);
    await rm(tmp, { recursive: true, force: true });
    const router = await Router.open(ctx.model!, { projections: ctx.projections!, bankDir: tmp, create: true });
    await router.install(EXAMPLES);
    await router.close();
    await rm(dir, { recursive: true, force: true });
    await cp(tmp, dir, { recursive: true });
    await rm(tmp, { recursive: true, force: true });
    await rm(join(dir, "lock"), { force: true });
    const copy = join(ctx.root, "baseline");
    await cp(dir, copy, { recursive: true });
    const r2 = await Router.open(ctx.model!, { projections: ctx.projections!, bankDir: copy, create: false });
    const routes: string[] = [];
    for (const t of TASKS) routes.push(routeKey(await r2.route(t)));
    await r2.close();
    await rm(copy, { recursive: true, force: true });
    await writeFile(routesFile, JSON.stringify(routes));
  }
  ctx.baseBank = { dir, routes: JSON.parse(await readFile(routesFile, "utf8")) as string[] };
  return ctx.baseBank;
}

export const bankTarget: Target = {
  name: "bank",
  async trial(r, dir, ctx) {
    const base = await baseBank(ctx);
    const bank = join(dir, "bank");
    await cp(base.dir, bank, { recursive: true });
    const files = (await readdir(bank, { recursive: true })) as string[];
    const keys = files.filter((f) => /^keys(\.\d+)?\.bin$/.test(f));
    const texts = files.filter((f) => f.startsWith("texts/") && f.endsWith(".json"));
    const kind = r.pick(["manifest", "manifest", "keys", "keys", "texts", "texts", "lexicon", "lock", "special"] as const);
    const file = kind === "manifest" ? "manifest.json" : kind === "keys" ? r.pick(keys) : kind === "texts" ? r.pick(texts) : kind === "lexicon" ? "lexicon.bin" : kind === "lock" ? "lock" : r.pick(["manifest.json", "lexicon.bin", ...keys, r.pick(texts), "texts"]);
    const path = join(bank, file);
    let what: string;
    if (kind === "special") what = await specialFile(r, path, dir);
    else if (kind === "lock") {
      await writeFile(path, r.pick([JSON.stringify({ pid: 1 + r.int(1 << 22), host: "elsewhere", start: "1" }), JSON.stringify({ pid: 999999, host: (await import("node:os")).hostname() }), "{", "", "\u0000".repeat(10)]));
      what = "lock";
    } else {
      const before = await readFile(path);
      const m =
        kind === "manifest" && r.chance(0.7)
          ? mutateJson(r, JSON.parse(before.toString("utf8")))
          : kind === "texts" && r.chance(0.5)
            ? mutateJson(r, JSON.parse(before.toString("utf8")))
            : kind === "keys" && r.chance(0.3)
              ? nanKeys(r, before)
              : mutateBytes(r, before);
      await writeFile(path, m.out);
      what = m.what;
    }
    what = `${kind} ${file} ${what}`;
    const changed = kind === "keys" || kind === "texts";
    // gavel check, then open and route; both must end normally or with a typed error.
    const report = await tagged(what, () => checkBank(bank).catch((err: unknown) => (err instanceof GavelError ? undefined : Promise.reject(err))));
    const routes = await tagged(what, async () => {
      const router = await Router.open(ctx.model!, { projections: ctx.projections!, bankDir: bank, create: false });
      try {
        const out: string[] = [];
        for (const t of TASKS) out.push(routeKey(await router.route(t)));
        return out;
      } finally {
        await router.close();
      }
    });
    if (kind === "keys" || kind === "texts" || kind === "lexicon") {
      for (let i = 0; i < TASKS.length; i++) {
        if (routes[i] !== base.routes[i]) throw new SilentWrong(`${what}: routed task ${i} otherwise than the intact bank (${routes[i].slice(0, 200)} vs ${base.routes[i].slice(0, 200)}); gavel check: ${report?.problems.join("; ") ?? "refused"}`);
      }
    }
    if (changed && report?.ok && (await differs(base.dir, bank, file))) {
      // A change the route did not notice must still be one check reports, or one that changes nothing read.
      if (!(await unread(base.dir, bank, file))) throw new SilentWrong(`${what}: gavel check found nothing, although ${file} changed`);
    }
    return what;
  },
};

/** Whether `file` differs between two bank dirs. */
async function differs(a: string, b: string, file: string): Promise<boolean> {
  const [x, y] = await Promise.all([readFile(join(a, file)).catch(() => null), readFile(join(b, file)).catch(() => null)]);
  return x === null || y === null || !x.equals(y);
}

/** Whether only bytes nothing reads changed: a text that still parses to the same content, key rows past the committed ones. */
async function unread(base: string, bank: string, file: string): Promise<boolean> {
  if (file.startsWith("texts/")) return true; // check verified the text against its hash: same content
  const m = JSON.parse(await readFile(join(bank, "manifest.json"), "utf8"));
  const committed = m.rows * m.header.dim * 4;
  const [a, b] = await Promise.all([readFile(join(base, file)), readFile(join(bank, file))]);
  return b.length >= committed && a.subarray(0, committed).equals(b.subarray(0, committed));
}

/** A run of NaN / Inf / huge floats over key rows. */
function nanKeys(r: R, buf: Buffer): { out: Buffer; what: string } {
  const b = Buffer.from(buf);
  const n = b.length >> 2;
  const from = r.int(n);
  const len = 1 + r.int(Math.min(n - from, 64));
  const v = r.pick([NaN, Infinity, -Infinity, 1e30, 0]);
  for (let k = 0; k < len; k++) b.writeFloatLE(v, (from + k) * 4);
  return { out: b, what: `keys[${from}..+${len}]=${v}` };
}

export const TARGETS: Record<string, Target> = { skills: skillsTarget, model: modelTarget, projections: projectionsTarget, bank: bankTarget };
