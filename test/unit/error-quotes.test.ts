// An error message quotes a string it was handed (a path, a skill's name, an option's key or value)
// in full up to CLIP_CHARS characters, else its start and end around how many were cut (errors.ts):
// a megabyte-long path gives a message of a few hundred bytes that still names the code, the path's
// start and its file name, and a message over an ordinary input reads as it always did. Over the
// public entry points, with a 1 MiB path, name, key and value each.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Model, Projections, Router, loadGate, loadSkills } from "../../src/index.js";
import * as aiSdk from "../../src/adapters/ai-sdk.js";
import { CLIP_CHARS, clip, clipMessage } from "../../src/errors.js";
import { needsShared, repoRoot, SHARED, storiesPath } from "../helpers/paths.js";
import { tempDirs } from "../helpers/temp-dirs.js";

const newDir = tempDirs("gavel-error-quotes-");
const SKILLS = join(repoRoot, "examples", "skills");
const MIB = 1 << 20;

/** What `f` throws or rejects with. */
async function failure(f: () => unknown): Promise<{ name?: string; code?: string; message: string }> {
  try {
    await f();
  } catch (err) {
    return err as { name?: string; code?: string; message: string };
  }
  throw new Error("no error");
}

/** `err` is a GavelError of `code` whose message is short and quotes `value` as clip() does. */
function expectClipped(err: { name?: string; code?: string; message: string }, code: string, value: string): void {
  expect(err.name).toBe("GavelError");
  expect(err.code).toBe(code);
  expect(err.message.length).toBeLessThan(1024);
  const end = CLIP_CHARS / 4;
  expect(err.message).toContain(`${value.slice(0, CLIP_CHARS - end)}…(${value.length - CLIP_CHARS} chars cut)…${value.slice(-end)}`);
}

describe("clip", () => {
  it("keeps a string up to the cap whole, and of a longer one its start, its end and how many characters were cut", () => {
    expect(clip("a".repeat(CLIP_CHARS))).toBe("a".repeat(CLIP_CHARS));
    expect(clip(`${"a".repeat(CLIP_CHARS)}b`)).toBe(`${"a".repeat(150)}…(1 chars cut)…${"a".repeat(49)}b`);
    expect(clip("abcdefghij", 8)).toBe("abcdef…(2 chars cut)…ij");
    // a long path keeps its file name
    const path = `/srv/${"deep/".repeat(100)}SKILL.md`;
    expect(clip(path)).toMatch(/^\/srv\/deep\/.*…\(\d+ chars cut\)….*\/SKILL\.md$/);
    expect(clip(path)).toHaveLength(CLIP_CHARS + `…(${path.length - CLIP_CHARS} chars cut)…`.length);
    // a surrogate pair across either cut is kept out whole, never split into a lone surrogate
    expect(clip("ab😀cdefgh", 4)).toBe("ab…(7 chars cut)…h");
    expect(clip("abcdefg😀h", 8)).toBe("abcdef…(3 chars cut)…h");
  });
});

describe("clipMessage", () => {
  it("keeps a caught error's message whole when the path it holds is quoted whole, and clips a longer one", async () => {
    const { readFile } = await import("node:fs/promises");
    const path = join(newDir(), "p".repeat(CLIP_CHARS - 40)); // the caller quotes it whole
    const err = await failure(() => readFile(path));
    expect(err.message.length).toBeGreaterThan(CLIP_CHARS);
    expect(clipMessage(err)).toBe(err.message);
    const long = new Error("x".repeat(3 * CLIP_CHARS));
    expect(clipMessage(long)).toBe(clip(long.message, 2 * CLIP_CHARS));
    expect(clipMessage("not an error")).toBe("not an error");
  });
});

describe("error messages over long inputs, without a model", () => {
  const longPath = () => join(newDir(), "p".repeat(MIB));
  const shortPath = () => join(newDir(), "none");

  it("Model.load: FILE_NOT_FOUND", async () => {
    const long = longPath();
    expectClipped(await failure(() => Model.load(long)), "FILE_NOT_FOUND", long);
    const short = shortPath();
    expect((await failure(() => Model.load(short))).message).toBe(`model file not found: ${short}`);
  });

  it("loadSkills: FILE_NOT_FOUND", async () => {
    const long = longPath();
    expectClipped(await failure(() => loadSkills(long)), "FILE_NOT_FOUND", long);
    const short = shortPath();
    expect((await failure(() => loadSkills(short))).message).toBe(`skill library not found: ${short}`);
  });

  it("Projections.load: FILE_NOT_FOUND", async () => {
    const long = longPath();
    expectClipped(await failure(() => Projections.load(long)), "FILE_NOT_FOUND", long);
    const short = shortPath();
    expect((await failure(() => Projections.load(short))).message).toBe(`${short}: file not found`);
  });

  it("loadGate: FILE_NOT_FOUND", async () => {
    const long = longPath();
    expectClipped(await failure(() => loadGate(long)), "FILE_NOT_FOUND", long);
    const short = shortPath();
    expect((await failure(() => loadGate(short))).message).toBe(`no gate file at ${short}`);
  });

  it("an unknown option key: INVALID_ARGUMENT", async () => {
    const key = "k".repeat(MIB);
    expectClipped(await failure(() => loadSkills(SKILLS, { [key]: 1 } as never)), "INVALID_ARGUMENT", key);
    expect((await failure(() => loadSkills(SKILLS, { limt: 1 } as never))).message).toBe(
      'unknown option "limt" in loadSkills options (did you mean limit?); the options are offset, limit, maxBodyBytes, maxDepth, signal',
    );
  });

  it("an option's value: INVALID_ARGUMENT", async () => {
    const router = { route: async () => ({}), get: async () => ({}) } as never;
    const value = "v".repeat(MIB);
    expectClipped(await failure(() => aiSdk.gavelPrepareStep(router, { context: value } as never)), "INVALID_ARGUMENT", value);
    expect((await failure(() => aiSdk.gavelPrepareStep(router, { context: "all" } as never))).message).toBe('context must be "last-user" or "conversation", got all');
  });
});

describe.skipIf(needsShared("stories260K model for a real router", SHARED.stories))("error messages over long inputs, over a real router", () => {
  let model: Model;
  let projections: Projections;
  let router: Router;
  beforeAll(async () => {
    model = await Model.load(storiesPath, { contextSize: 512, threads: 1 });
    projections = await Projections.random(model, { seed: 3, dim: 16 });
    router = await Router.open(model, { projections, bankDir: join(newDir(), "bank"), skillBudget: 256 });
  }, 120_000);
  afterAll(async () => {
    await router?.close();
    await model?.dispose();
  });

  it("Router.open with a bank folder no path can name: FILE_NOT_FOUND", async () => {
    const long = join(newDir(), "b".repeat(MIB));
    expectClipped(await failure(() => Router.open(model, { projections, bankDir: long, skillBudget: 256 })), "FILE_NOT_FOUND", long);
    const short = join(newDir(), "none");
    expect((await failure(() => Router.open(model, { projections, bankDir: short, skillBudget: 256, create: false }))).message).toBe(
      `no bank at ${short} (the directory does not exist); run \`gavel install\` to build one`,
    );
  });

  it("Router.get of a skill not installed: SKILL_NOT_FOUND", async () => {
    const name = "n".repeat(MIB);
    expectClipped(await failure(() => router.get(name)), "SKILL_NOT_FOUND", name);
    expect((await failure(() => router.get("no-such-skill"))).message).toBe('no installed skill "no-such-skill" (gavel list shows the installed skills)');
  });
});
