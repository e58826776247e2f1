// Issue 17, "long inputs": a task longer than the context is cut, and the route says so (how many
// tokens were read and dropped, and which part was read), in the result, in `gavel route`'s output
// and in its JSON; `gavel route` takes the task from a file (--task-file) and from stdin (`-`, or
// piped with no task). The CLI runs from source (vite-node), as a user runs it.
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Model, Projections, Router } from "../../src/index.js";
import { modelFingerprint } from "../../src/model/fingerprint.js";
import { repoRoot } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { readerSkill } from "../helpers/reader-skills.js";
import { run } from "../helpers/run.js";
import { expectCode } from "../helpers/gavel-error.js";
import { LEXICAL_MIN_CHARS, lexicalRead } from "../../src/route/context.js";

const root = mkdtempSync(join(tmpdir(), "gavel-long-task-"));
const proj = join(root, "p.gguf");
const bank = join(root, "bank");
let model: Model;
let projections: Projections;
afterAll(async () => {
  await model?.dispose();
  rmSync(root, { recursive: true, force: true });
});

function gavel(args: string[], input?: string | Buffer) {
  return run(join(repoRoot, "node_modules", ".bin", "vite-node"), [join(repoRoot, "src", "cli", "gavel.ts"), "--", ...args], {
    cwd: repoRoot,
    timeoutMs: 120_000,
    input,
    env: { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "", GAVEL_SOCKET: "" },
  });
}
// context 512, skill budget 256: the verdict reads ~200 task tokens, the glance ~500
const common = ["--model", TINY_LLAMA_PATH, "--projections", proj, "--bank", bank, "--context", "512", "--skill-budget", "256"];
/** A task of many words; its request comes last. */
const longTask = Array.from({ length: 400 }, (_, i) => `step ${i} of the pipeline reads the log file and writes a table.`).join(" ") + " Please extract the tables from report.pdf.";
const shortTask = "Extract the tables from report.pdf";

beforeAll(async () => {
  model = await Model.load(TINY_LLAMA_PATH, { contextSize: 512, threads: 1 });
  projections = await Projections.random(await modelFingerprint(model), { seed: 5, dim: 16 });
  await projections.save(proj);
  const router = await Router.open(model, { projections, bankDir: bank, skillBudget: 256 });
  await router.install(Array.from({ length: 5 }, (_, i) => readerSkill(`s${i}`, 1, i)));
  await router.close();
}, 120_000);

describe("a task longer than the context", () => {
  it("is reported by Router.route: tokens read, dropped, and which part (the end of a written task by default, its start on request, the end of a live rollout)", async () => {
    const router = await Router.open(model, { projections, bankDir: bank, skillBudget: 256, readOnly: true });
    const total = model.tokenize(longTask, { special: false, addBos: false }).length;
    const res = await router.route(longTask, { abstain: false });
    expect(res.truncation).toBeDefined();
    const t = res.truncation!;
    expect(t).toEqual({ totalTokens: total, keptTokens: t.keptTokens, droppedTokens: total - t.keptTokens, verdictTokens: t.verdictTokens, kept: "end" });
    // the end is what is read: the glance equals the glance of the task's last keptTokens tokens alone
    const tail = model.detokenize(model.tokenize(longTask, { special: false, addBos: false }).subarray(total - t.keptTokens));
    const tailHits = await router.glance(tail, { topK: 5 });
    const longHits = await router.glance(longTask, { topK: 5 });
    expect(longHits.map((h) => h.skill)).toEqual(tailHits.map((h) => h.skill));
    for (let i = 0; i < longHits.length; i++) expect(Math.abs(longHits[i].g - tailHits[i].g)).toBeLessThan(0.05);
    // a router opened with truncate: "start" reads the start, and another part of the text
    const startRouter = await Router.open(model, { projections, bankDir: bank, skillBudget: 256, readOnly: true, truncate: "start" });
    const s = (await startRouter.route(longTask, { abstain: false })).truncation!;
    expect(s).toEqual({ ...t, kept: "start" });
    const startHits = await startRouter.glance(longTask, { topK: 5 });
    expect(startHits.map((h) => h.g)).not.toEqual(longHits.map((h) => h.g));
    await startRouter.close();
    await expectCode(Router.open(model, { projections, bankDir: bank, readOnly: true, truncate: "middle" as "end" }), "INVALID_ARGUMENT");
    // the glance reads the task alone: up to the context less the task render's scaffolding; the
    // verdict reads the task after r(s): up to the context less the skill budget
    expect(t.keptTokens).toBeGreaterThan(512 - 64);
    expect(t.keptTokens).toBeLessThan(512);
    expect(t.verdictTokens).toBeGreaterThan(16);
    expect(t.verdictTokens).toBeLessThan(512 - 256);
    // a task between the two budgets: the glance reads it whole, the verdict its end
    const midTask = longTask.slice(0, longTask.indexOf("step 12 ")).trimEnd();
    const mid = model.tokenize(midTask, { special: false, addBos: false });
    expect(mid.length).toBeGreaterThan(t.verdictTokens!);
    expect(mid.length).toBeLessThan(t.keptTokens);
    const m = (await router.route(midTask, { abstain: false })).truncation!;
    expect(m).toEqual({ totalTokens: mid.length, keptTokens: mid.length, droppedTokens: 0, verdictTokens: t.verdictTokens, kept: "end" });
    const midEnd = model.detokenize(mid.subarray(mid.length - t.verdictTokens!));
    expect((await router.glance(midTask, { topK: 5 })).map((h) => h.g)).not.toEqual((await router.glance(midEnd, { topK: 5 })).map((h) => h.g));
    // a task that fits is not cut
    expect((await router.route(shortTask, { abstain: false })).truncation).toBeUndefined();
    // a live rollout keeps its latest turns
    const live = await router.route([{ role: "user", content: longTask }], { abstain: false });
    expect(live.truncation?.kept).toBe("end");
    expect(live.truncation!.droppedTokens).toBe(live.truncation!.totalTokens - live.truncation!.keptTokens);
    expect(live.truncation!.droppedTokens).toBeGreaterThan(0);
    expect(live.truncation!.keptTokens).toBeLessThan(512 - 256);
    expect(live.truncation!.verdictTokens).toBeUndefined();
    await router.close();
  });
});

describe("a task of megabytes", () => {
  it("is tokenized off the JavaScript thread (only short texts on it), reported whole, and an abort rejects at once", async () => {
    const router = await Router.open(model, { projections, bankDir: bank, skillBudget: 256, readOnly: true });
    const huge = longTask.repeat(Math.ceil(400_000 / longTask.length));
    const plain = { special: false, addBos: false };
    const total = model.tokenize(huge, plain).length;
    const onThread = model.tokenize.bind(model);
    let longest = 0;
    const spy = vi.spyOn(model, "tokenize").mockImplementation((text, o) => {
      longest = Math.max(longest, text.length);
      return onThread(text, o);
    });
    try {
      for (const context of [huge, [{ role: "user" as const, content: huge }]]) {
        longest = 0;
        const res = await router.route(context, { abstain: false });
        expect(longest).toBeLessThan(16_384);
        expect(res.truncation!.droppedTokens).toBe(res.truncation!.totalTokens - res.truncation!.keptTokens);
        if (typeof context === "string") expect(res.truncation!.totalTokens).toBe(total);
        else expect(res.truncation!.totalTokens).toBeGreaterThan(total);
      }
      // the route's promise is back before the tokenization ends, so an abort now stops it
      const ac = new AbortController();
      const pending = router.route(huge, { abstain: false, signal: ac.signal });
      ac.abort();
      await expectCode(pending, "ABORTED");
      // the glance alone, the same
      const ac2 = new AbortController();
      const glancing = router.glance(huge, { topK: 3, signal: ac2.signal });
      ac2.abort();
      await expectCode(glancing, "ABORTED");
    } finally {
      spy.mockRestore();
      await router.close();
    }
  }, 120_000);
});

describe("the lexical readers of a task of megabytes", () => {
  it("take only the kept side's last 65,536 characters: words before them move no score, the echo flag or the pick", async () => {
    const router = await Router.open(model, { projections, bankDir: bank, skillBudget: 256, readOnly: true });
    try {
      // far from the end, a skill's own words over and over; then neutral text past the lexical bound; then the request
      const far = `${readerSkill("s1", 1, 1).description} `.repeat(Math.ceil(200_000 / 60));
      const neutral = longTask.repeat(Math.ceil((LEXICAL_MIN_CHARS + 5000) / longTask.length));
      const huge = far + neutral;
      const read = lexicalRead(huge, "end", 0);
      expect(read.length).toBeLessThanOrEqual(LEXICAL_MIN_CHARS);
      expect(huge.endsWith(read) && !read.includes(readerSkill("s1", 1, 1).description)).toBe(true);
      const view = (r: Awaited<ReturnType<Router["route"]>>) => ({ skill: r.skill, flags: r.flags, shortlist: r.shortlist.map((c) => [c.skill, c.g, c.B, c.R]) });
      for (const context of [huge, [{ role: "user" as const, content: huge }]]) {
        const whole = await router.route(context, { abstain: false, lexical: true });
        const cut = await router.route(typeof context === "string" ? read : [{ role: "user" as const, content: read }], { abstain: false, lexical: true });
        expect(whole.shortlist.some((c) => Number.isFinite(c.B))).toBe(true);
        expect(view(whole)).toEqual(view(cut));
      }
      // the far words do count when they lie within the bound
      const near = await router.route(far.slice(-20_000) + longTask, { abstain: false, lexical: true });
      const alone = await router.route(longTask, { abstain: false, lexical: true });
      expect(view(near)).not.toEqual(view(alone));
    } finally {
      await router.close();
    }
  }, 120_000);
});

describe("gavel route takes the task from a file and from stdin", () => {
  it("--task-file, `-`, `--task-file -` and a pipe give the same route; a long task's cut is in the JSON and in the text", async () => {
    const file = join(root, "task.md");
    writeFileSync(file, longTask + "\n");
    const viaFile = await gavel(["route", "--task-file", file, "--json", "--no-abstain", ...common]);
    expect(viaFile.code, viaFile.err).toBe(0);
    const a = JSON.parse(viaFile.out);
    const total = model.tokenize(longTask, { special: false, addBos: false }).length;
    expect(a.truncation).toMatchObject({ totalTokens: total, kept: "end" });
    expect(a.truncation.droppedTokens).toBe(total - a.truncation.keptTokens);
    const viaDash = await gavel(["route", "-", "--json", "--no-abstain", ...common], longTask);
    const viaPipe = await gavel(["route", "--json", "--no-abstain", ...common], longTask + "\n");
    const viaFileDash = await gavel(["route", "--task-file", "-", "--json", "--no-abstain", ...common], longTask);
    for (const r of [viaDash, viaPipe, viaFileDash]) {
      expect(r.code, r.err).toBe(0);
      const b = JSON.parse(r.out);
      expect(b.truncation).toEqual(a.truncation);
      expect(b.shortlist.map((c: { skill: string; g: number }) => [c.skill, c.g])).toEqual(a.shortlist.map((c: { skill: string; g: number }) => [c.skill, c.g]));
    }
    const text = await gavel(["route", "--task-file", file, "--no-abstain", ...common]);
    expect(text.code, text.err).toBe(0);
    expect(text.out).toContain(`truncated: the task has ${total} tokens, more than fit the context; routed on the last ${a.truncation.keptTokens} (${a.truncation.droppedTokens} dropped: its start was not read); the verdict reads the last ${a.truncation.verdictTokens}`);
    const fromStart = await gavel(["route", "--task-file", file, "--truncate", "start", "--no-abstain", ...common]);
    expect(fromStart.code, fromStart.err).toBe(0);
    expect(fromStart.out).toContain(`routed on the first ${a.truncation.keptTokens} (${a.truncation.droppedTokens} dropped: its end was not read); the verdict reads the first ${a.truncation.verdictTokens}`);
    const badTruncate = await gavel(["route", "--task-file", file, "--truncate", "middle", ...common]);
    expect(badTruncate.code).not.toBe(0);
    expect(badTruncate.err).toContain('truncate must be "start" or "end"');
    // a task that fits: no truncation, in JSON or text
    const short = await gavel(["route", shortTask, "--json", "--no-abstain", ...common]);
    expect(short.code, short.err).toBe(0);
    expect(JSON.parse(short.out).truncation).toBeUndefined();
    expect((await gavel(["route", shortTask, "--no-abstain", ...common])).out).not.toContain("truncated:");
  }, 600_000); // eight CLI processes, one after another, each loading the model: minutes on a loaded machine

  it("refuses a missing file, a directory, two sources at once and text that is not UTF-8, typed; no task prints the usage", async () => {
    const missing = await gavel(["route", "--task-file", join(root, "nope.md"), ...common]);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/task file .*nope\.md does not exist.*\[FILE_NOT_FOUND\]/);
    const dir = join(root, "adir");
    mkdirSync(dir, { recursive: true });
    const isDir = await gavel(["route", "--task-file", dir, ...common]);
    expect(isDir.code).toBe(1);
    expect(isDir.err).toMatch(/task file: .*adir.*\[INVALID_ARGUMENT\]/);
    const both = await gavel(["route", "a task", "--task-file", dir, ...common]);
    expect(both.code).toBe(1);
    expect(both.err).toMatch(/give the task once.*\[INVALID_ARGUMENT\]/);
    const bad = join(root, "latin1.txt");
    writeFileSync(bad, Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0xff]));
    const notUtf8 = await gavel(["route", "--task-file", bad, ...common]);
    expect(notUtf8.code).toBe(1);
    expect(notUtf8.err).toMatch(/not UTF-8 text.*\[INVALID_ARGUMENT\]/);
    const none = await gavel(["route", ...common], "");
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/usage: gavel route/);
  });
});

describe("gavel route, glance and list beside a writer", () => {
  it("are not refused while another live process holds the bank's lock; uninstall (a writer) still is", async () => {
    // the lock as a writer leaves it: this test process, alive, on this host
    const lock = join(bank, "lock");
    writeFileSync(lock, JSON.stringify({ pid: process.pid, host: hostname(), createdAt: new Date().toISOString(), token: "t" }) + "\n");
    try {
      const list = await gavel(["list", "--json", ...common]);
      expect(list.code, list.err).toBe(0);
      expect(JSON.parse(list.out).map((s: { id: string }) => s.id)).toEqual(["s0", "s1", "s2", "s3", "s4"]);
      for (const args of [["route", shortTask, "--json", "--no-abstain"], ["glance", shortTask, "--json"]]) {
        const r = await gavel([...args, ...common]);
        expect(r.code, `${args[0]}: ${r.err}`).toBe(0);
        expect(r.err).not.toMatch(/BANK_LOCKED/);
      }
      const un = await gavel(["uninstall", "s0", ...common]);
      expect(un.code).toBe(1);
      expect(un.err).toMatch(new RegExp(`in use by process ${process.pid}.*\\[BANK_LOCKED\\]`));
    } finally {
      unlinkSync(lock);
    }
  });
});
