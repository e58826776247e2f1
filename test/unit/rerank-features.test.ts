// The cheap per-candidate features of the learned first-stage re-ranking (src/lexical/name-features.ts),
// on the examples' skills and task-shaped statements.
import { describe, expect, it } from "vitest";
import { loadSkills } from "../../src/skills/index.js";
import { bigramShare, idfShare, nameBigramShare, nameTokens, nameVerbatim, share, slugOf, taskText } from "../../src/lexical/name-features.js";

const { skills } = await loadSkills("examples/skills");
const skill = (name: string) => {
  const s = skills.find((x) => x.name === name);
  if (!s) throw new Error(`examples/skills has no ${name}`);
  return s;
};

describe("rerank features", () => {
  it("reads a skill's slug from a path-like id", () => {
    expect(slugOf("openclaw/skills:skills/visionik/ecto")).toBe("ecto");
    expect(slugOf("gabrielmoreira/agent-skills-mirror:mirrors/repos/x@y/.claude/skills/Add-UINT-Support")).toBe("add-uint-support");
    expect(slugOf("kubernetes-manifests")).toBe("kubernetes-manifests");
  });

  it("finds the name verbatim in any separator form, and only as a whole phrase", () => {
    const k8s = skill("kubernetes-manifests");
    expect(nameVerbatim(k8s, taskText("Fix the kubernetes_manifests folder so pods stop crashing"))).toBe(1);
    expect(nameVerbatim(k8s, taskText("# Task\nUpdate the Kubernetes manifests for the API"))).toBe(1);
    expect(nameVerbatim(k8s, taskText("The manifests for kubernetes are stale"))).toBe(0);
  });

  it("shares of name tokens in the task and in its title", () => {
    const ci = skill("github-actions-ci");
    expect(nameTokens(ci)).toEqual(["github", "actions", "ci"]);
    const t = taskText("# Task: add CI to the repository\n\nThe GitHub workflow should cache npm.");
    expect(share(nameTokens(ci), t.tokens)).toBeCloseTo(2 / 3, 12);
    expect(share(nameTokens(ci), t.title)).toBeCloseTo(1 / 3, 12);
    // the pair "github actions" is not a bigram of the task; "actions ci" neither
    expect(nameBigramShare(ci, t)).toBe(0);
    expect(nameBigramShare(ci, taskText("Set up GitHub Actions CI for this repo"))).toBe(1);
  });

  it("a one-line request has no title, so a name's words in it count once", () => {
    const ci = skill("github-actions-ci");
    const one = taskText("Add GitHub Actions CI to this repository");
    expect(share(nameTokens(ci), one.tokens)).toBe(1);
    expect(one.title.size).toBe(0);
    expect(share(nameTokens(ci), one.title)).toBe(0);
    // blank lines around one line do not make a title; a second line does
    expect(taskText("\n  Add GitHub Actions CI  \n\n").title.size).toBe(0);
    const two = taskText("Add GitHub Actions CI\nIt should cache npm.");
    expect([...two.title]).toEqual(["add", "github", "actions", "ci"]);
  });

  it("idf-weighted coverage weighs rare words over common ones", () => {
    const idf = (w: string) => (w === "the" ? 0.1 : 3);
    const task = new Set(["dockerfile", "the"]);
    expect(idfShare(["the", "dockerfile", "multistage"], task, idf)).toBeCloseTo(3.1 / 6.1, 12);
    expect(idfShare(["the"], new Set<string>(), idf)).toBe(0);
  });

  it("bigram share of a real description against a task quoting part of it", () => {
    const d = skill("dockerfile");
    const toks = d.description.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    const quoted = toks.slice(0, 4).join(" ");
    const s = bigramShare(toks, taskText(`Please ${quoted} for our service`));
    expect(s).toBeGreaterThan(0);
    expect(s).toBeCloseTo(3 / new Set(toks.slice(0, -1).map((t, i) => `${t} ${toks[i + 1]}`)).size, 12);
  });
});
