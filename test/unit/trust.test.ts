// Trust per source and flags (issue 17): the pure parts — echo runs, source selectors, near-tie
// breaking, flag options and the CLI's trust flags. The model-backed parts are in
// test/model/router-hostile.test.ts.
import { describe, expect, it } from "vitest";
import { homedir } from "node:os";
import { join } from "node:path";
import { echoRun, ECHO_RUN, longestSharedRun, PROBE_TASKS, words } from "../../src/route/probes.js";
import { preferTrusted, flagsOption, matchesSource, priorityOf, storedFlags, trustOption, trustSettings, type SourceClass } from "../../src/route/trust.js";
import { trustFromArgs } from "../../src/cli/commands/route.js";
import { GavelError } from "../../src/errors.js";
import { freshSeed, rng as makeRng } from "../helpers/random.js";

describe("echo runs", () => {
  it("finds the longest verbatim word run, case and punctuation ignored", () => {
    expect(longestSharedRun(words("make the build pass on Windows"), words("First, MAKE the build pass; then test."))).toBe(4);
    expect(longestSharedRun([], ["a"])).toBe(0);
    expect(longestSharedRun(["a", "b", "c"], ["c", "b", "a"])).toBe(1);
  });
  it("matches a brute-force search on random word lists (fresh seed, printed)", () => {
    const seed = freshSeed();
    const rng = makeRng(seed);
    const brute = (a: string[], b: string[]) => {
      let best = 0;
      for (let i = 0; i < a.length; i++) for (let j = 0; j < b.length; j++) {
        let n = 0;
        while (i + n < a.length && j + n < b.length && a[i + n] === b[j + n]) n++;
        best = Math.max(best, n);
      }
      return best;
    };
    for (let trial = 0; trial < 200; trial++) {
      const a = Array.from({ length: Math.floor(rng() * 30) }, () => "abc"[Math.floor(rng() * 3)]);
      const b = Array.from({ length: Math.floor(rng() * 30) }, () => "abc"[Math.floor(rng() * 3)]);
      expect(longestSharedRun(a, b), `seed ${seed}, trial ${trial}`).toBe(brute(a, b));
    }
  });
  it("flags a skill that quotes the task, not one that shares a few words", () => {
    const task = "Somewhere in the last 200 commits the date parser started returning wrong results. Track down which commit introduced the bug.";
    expect(echoRun(task, `# Tasks\n- ${task}\n- another task`)).toBeGreaterThanOrEqual(ECHO_RUN);
    expect(echoRun(task, "Use git bisect to find which commit introduced the bug in the history.")).toBe(0);
    // a short task is an echo when the skill holds it whole (at least 4 words)
    expect(echoRun("Resize the images.", "resize the images")).toBe(0);
    expect(echoRun("Resize all the images.", "tasks: resize all the images")).toBe(4);
  });
  it("has a fixed probe set of everyday and off-domain tasks", () => {
    expect(PROBE_TASKS.length).toBeGreaterThanOrEqual(20);
    expect(PROBE_TASKS.length).toBeLessThanOrEqual(40);
    expect(new Set(PROBE_TASKS).size).toBe(PROBE_TASKS.length);
    expect(Object.isFrozen(PROBE_TASKS)).toBe(true);
  });
});

describe("source selectors and priorities", () => {
  const project: SourceClass = { kind: "folder", scope: "project", host: "claude-code", path: "/work/app/.claude/skills" };
  const user: SourceClass = { kind: "folder", scope: "user", host: "claude-code", path: join(homedir(), ".claude", "skills") };
  const lib: SourceClass = { kind: "library", scope: "library", host: null, path: "/data/skills.jsonl" };
  it("matches kinds, scopes, hosts and absolute path prefixes", () => {
    expect(matchesSource(project, "project")).toBe(true);
    expect(matchesSource(project, "user")).toBe(false);
    expect(matchesSource(project, "claude-code")).toBe(true);
    expect(matchesSource(project, "folder")).toBe(true);
    expect(matchesSource(project, "/work/app")).toBe(true);
    expect(matchesSource(project, "/work/ap")).toBe(false);
    expect(matchesSource(lib, "/data/skills.jsonl")).toBe(true);
    expect(matchesSource(lib, "codex")).toBe(false);
    expect(matchesSource(user, "user")).toBe(true);
    // `copilot` is github-copilot (the host `gavel sync --host copilot` writes for)
    const gh: SourceClass = { kind: "folder", scope: "project", host: "github-copilot", path: "/work/app/.github/skills" };
    expect(matchesSource(gh, "copilot")).toBe(true);
    expect(matchesSource(gh, "github-copilot")).toBe(true);
    expect(matchesSource(project, "copilot")).toBe(false);
  });
  it("gives the highest matching priority, 0 when none matches", () => {
    const trust = trustOption({ project: 2, "claude-code": 1, library: -1 });
    expect(priorityOf(project, trust)).toBe(2);
    expect(priorityOf(user, trust)).toBe(1);
    expect(priorityOf(lib, trust)).toBe(-1);
    expect(priorityOf({ kind: "input", scope: "input", host: null, path: null }, trust)).toBe(0);
  });
  it("keeps only the highest-priority source among near-ties of g", () => {
    const ranked = [
      { skill: "third-party", g: 0.5 },
      { skill: "mine", g: 0.45 },
      { skill: "other-third", g: 0.44 },
      { skill: "far", g: 0.1 },
    ];
    const prio = (id: string) => (id === "mine" ? 2 : id === "far" ? 5 : 0);
    expect(preferTrusted(ranked, prio, 0.1).map((r) => r.skill)).toEqual(["mine", "far"]);
    expect(preferTrusted(ranked, prio, 0.01).map((r) => r.skill)).toEqual(["third-party", "mine", "other-third", "far"]);
    expect(preferTrusted(ranked, () => 0, 1).map((r) => r.skill)).toEqual(["third-party", "mine", "other-third", "far"]);
  });
});

describe("flag and trust options", () => {
  it("reads stored flags from warnings", () => {
    expect(storedFlags(undefined)).toEqual([]);
    expect(storedFlags(["hub: top match of 40% …", 'x/SKILL.md: contains "always use this skill", which may try to steer routing (skill text is untrusted)'])).toEqual(["hub", "injection"]);
    expect(storedFlags(["x/SKILL.md: body has 600 lines"])).toEqual([]);
  });
  it("refuses unknown flags, bad priorities and margins with INVALID_ARGUMENT", () => {
    expect(flagsOption(["hub", "hub", "echo"])).toEqual(["hub", "echo"]);
    for (const bad of [["hubs"], "hub", [1]]) expect(() => flagsOption(bad)).toThrow(GavelError);
    expect(() => trustOption({ project: NaN })).toThrow(/finite number/);
    expect(() => trustOption(["project"])).toThrow(/trust must be an object/);
    expect(() => trustSettings({ tieMargin: -1 }, 1)).toThrow(/tieMargin/);
    // an unknown selector word is refused, not matched to nothing (an exclusion would silently lapse)
    expect(() => trustSettings({ excludeSources: ["projet"] }, 1)).toThrow(/unknown source selector "projet" \(did you mean project\?\)/);
    expect(() => trustSettings({ excludeSources: ["bogus"] }, 1)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => trustSettings({ excludeSources: ["relative/path"] }, 1)).toThrow(/absolute path/);
    expect(() => trustOption({ usr: 1 })).toThrow(/trust: unknown source selector "usr" \(did you mean user\?\)/);
    expect(trustSettings({ excludeSources: ["copilot", "library", "/abs/dir", "C:\\skills"], trust: { "claude-code": 1 } }, 1).excludeSources).toHaveLength(4);
    expect(trustSettings({}, 0.7).tieMargin).toBe(0.7);
  });
  it("parses the CLI's trust flags", () => {
    expect(trustFromArgs({ "exclude-flagged": "hub, echo", "exclude-source": ["library"], trust: ["project=2", "/a/b=c=1"], "tie-margin": "0.5" })).toEqual({
      excludeFlagged: ["hub", "echo"],
      excludeSources: ["library"],
      trust: { project: 2, "/a/b=c": 1 },
      tieMargin: 0.5,
    });
    expect(trustFromArgs({})).toEqual({});
    expect(() => trustFromArgs({ trust: ["project"] })).toThrow(/SELECTOR=NUMBER/);
    expect(() => trustFromArgs({ trust: ["project="] })).toThrow(/SELECTOR=NUMBER/);
    expect(() => trustFromArgs({ "tie-margin": "x" })).toThrow(/tie-margin/);
    expect(() => trustFromArgs({ "exclude-source": ["bogus"] })).toThrow(/unknown source selector "bogus"/);
    expect(() => trustFromArgs({ trust: ["projet=2"] })).toThrow(/did you mean project/);
    // a flag word is checked here, named by the CLI's option (not the API's excludeFlagged)
    expect(() => trustFromArgs({ "exclude-flagged": "hub,bogus" })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/^--exclude-flagged takes .*hub, echo, injection, got "bogus"/) }));
  });
});
