// The pseudo-query generators, the mixer and the task-overlap screen (lab/train/queries), on
// hand-written skills: what each kind quotes, that every span points at the characters quoted, purity,
// proportions, and that task texts never become queries.
import { describe, expect, it } from "vitest";
import { Rng } from "../../src/util/prng.js";
import {
  candidateQueries, clozeQueries, compositeQueries, DEFAULT_MIX, descriptionQueries, headingQueries, mixQueries, parseQueryKinds,
  QUERY_KINDS, sections, sentenceSpans, splitLines, TaskOverlap, triggerQueries, type PseudoQuery, type QuerySkill,
} from "../../lab/train/queries/index.js";
import { excludePairs, queryPairs, splitValidation } from "../../lab/train/pairs.js";
import type { Skill } from "../../src/skills/index.js";

const BODY = `# PDF Toolkit

This skill extracts text and tables from PDF files with pdftotext and camelot, keeping the page layout intact.

## When to Use

- The user needs text out of a scanned or digital PDF
- Tables must be pulled from a report into CSV

## Setup

Install poppler-utils and camelot before the first run.
Check that pdftotext is on the PATH.

\`\`\`bash
# Not a heading: inside a fence
apt-get install poppler-utils
\`\`\`

| tool | use |
| --- | --- |
| pdftotext | text |

## Extracting text

Run pdftotext with -layout to keep columns aligned when the document has several columns of prose.
- Use -f and -l to pick a page range
- Pipe the output to a file

## Extracting tables

Use camelot's lattice mode for ruled tables and stream mode for whitespace tables.
- Export each table to CSV

## Troubleshooting

Use this skill when a PDF renders as garbled characters after extraction.
- Try OCR with tesseract for scanned pages
`;

const SKILL: QuerySkill & { id: string } = {
  id: "pdf-toolkit",
  name: "pdf-toolkit",
  description: "Extract text and tables from PDF files. Use when the user asks to read, parse or convert a PDF document.",
  body: BODY,
};

/** Every span's characters appear in the query's text (the query copies them). */
function expectSpansQuoted(skill: QuerySkill, q: PseudoQuery) {
  for (const s of q.spans) {
    const src = s.field === "body" ? skill.body : skill.description;
    expect(s.end).toBeGreaterThan(s.start);
    const quoted = src.slice(s.start, s.end).trim().replace(/^#+\s*/, "").replace(/^([-*+]|\d+[.)])\s+/, "");
    if (s.field === "description" && q.kind === "description") continue; // the whole description is masked for a sentence too
    expect(q.text).toContain(quoted);
  }
}

describe("Markdown helpers", () => {
  it("splitLines marks fenced code and keeps offsets", () => {
    const lines = splitLines(BODY);
    for (const l of lines) expect(BODY.slice(l.start, l.end)).toBe(l.text);
    expect(lines.find((l) => l.text.startsWith("# Not a heading"))!.code).toBe(true);
    expect(lines.find((l) => l.text.startsWith("Install poppler"))!.code).toBe(false);
  });

  it("sections split at headings outside code", () => {
    const heads = sections(BODY).map((s) => s.heading);
    expect(heads).toEqual(["PDF Toolkit", "When to Use", "Setup", "Extracting text", "Extracting tables", "Troubleshooting"]);
  });

  it("sentenceSpans give offsets into the text, CJK punctuation included", () => {
    const t = "First sentence here. Second one follows!\n用中文写的句子，足够长的一句话。另一句话也要足够长才行。";
    const spans = sentenceSpans(t, 5);
    expect(spans.map((s) => s.text)).toEqual(["First sentence here.", "Second one follows!", "用中文写的句子，足够长的一句话。", "另一句话也要足够长才行。"]);
    for (const s of spans) expect(t.slice(s.start, s.end)).toBe(s.text);
  });
});

describe("generators", () => {
  it("description: the whole description, and one of its sentences", () => {
    const qs = descriptionQueries(SKILL, new Rng(1));
    expect(qs[0]).toEqual({ kind: "description", text: SKILL.description, spans: [{ field: "description", start: 0, end: SKILL.description.length }] });
    expect(qs).toHaveLength(2);
    expect(SKILL.description).toContain(qs[1].text);
    expect(descriptionQueries({ ...SKILL, description: "short" }, new Rng(1))).toEqual([]);
  });

  it("cloze: paragraphs of prose, never code, tables or list items", () => {
    const all = new Set<string>();
    for (let seed = 0; seed < 30; seed++) for (const q of clozeQueries(SKILL, new Rng(seed))) all.add(q.text), expectSpansQuoted(SKILL, q);
    expect([...all].sort()).toEqual([
      "Install poppler-utils and camelot before the first run.\nCheck that pdftotext is on the PATH.",
      "Run pdftotext with -layout to keep columns aligned when the document has several columns of prose.",
      "This skill extracts text and tables from PDF files with pdftotext and camelot, keeping the page layout intact.",
      "Use camelot's lattice mode for ruled tables and stream mode for whitespace tables.",
      "Use this skill when a PDF renders as garbled characters after extraction.",
    ]);
    expect(clozeQueries(SKILL, new Rng(3))).toHaveLength(2);
  });

  it("triggers: the description's 'Use when' sentence, a 'When to Use' section, 'Use this skill when' lines, when_to_use", () => {
    const qs = triggerQueries({ ...SKILL, meta: { when_to_use: "Whenever a PDF must become text or CSV." } }, new Rng(1));
    expect(qs.map((q) => q.text)).toEqual([
      "Use when the user asks to read, parse or convert a PDF document.",
      "- The user needs text out of a scanned or digital PDF\n- Tables must be pulled from a report into CSV",
      "Use this skill when a PDF renders as garbled characters after extraction.",
      "Whenever a PDF must become text or CSV.",
    ]);
    for (const q of qs) expectSpansQuoted(SKILL, q);
    expect(qs[3].spans).toEqual([]); // a record without it in the description: nothing to mask
    // as the loader reads it: at the description's end, one query, masked there
    const wtu = "Use when a scanned PDF must become text or CSV.";
    const loaded = { ...SKILL, description: `${SKILL.description}\n${wtu}`, meta: { when_to_use: wtu } };
    const lq = triggerQueries(loaded, new Rng(1));
    expect(lq.map((q) => q.text)).toEqual([...qs.slice(0, 3).map((q) => q.text), wtu]);
    for (const q of lq) expectSpansQuoted(loaded, q);
    expect(lq[3].spans).toEqual([{ field: "description", start: SKILL.description.length + 1, end: loaded.description.length }]);
    expect(triggerQueries({ name: "x", description: "Converts files between formats quickly.", body: "# X\n\nJust prose." }, new Rng(1))).toEqual([]);
  });

  it("headings: a heading and the first lines of its section", () => {
    const seen = new Set<string>();
    for (let seed = 0; seed < 40; seed++) {
      for (const q of headingQueries(SKILL, new Rng(seed))) {
        expectSpansQuoted(SKILL, q);
        const [head, ...rest] = q.text.split("\n");
        seen.add(head);
        expect(rest.length).toBeGreaterThanOrEqual(1);
        expect(rest.length).toBeLessThanOrEqual(3);
        expect(q.text).not.toContain("apt-get"); // code is never quoted
      }
    }
    expect(seen).toEqual(new Set(["PDF Toolkit", "When to Use", "Setup", "Extracting text", "Extracting tables", "Troubleshooting"]));
  });

  it("headings: a nested section's heading is qualified by its parents below the title", () => {
    const nested = { name: "n", description: "", body: "# Title\n\n## Phase 1: Discovery\n\n### Actions\n\n1. Inventory the endpoints\n2. Map error codes\n" };
    const q = headingQueries(nested, new Rng(1)).find((x) => x.text.startsWith("Phase 1: Discovery — Actions"))!;
    expect(q.text).toBe("Phase 1: Discovery — Actions\n1. Inventory the endpoints");
    expect(q.spans.map((s) => nested.body.slice(s.start, s.end))).toEqual(["## Phase 1: Discovery", "### Actions", "1. Inventory the endpoints"]);
  });

  it("composite: a long task in the written tasks' shape, from ≥ 3 sections", () => {
    const [q] = compositeQueries(SKILL, new Rng(2));
    expect(q.kind).toBe("composite");
    expect(q.text.startsWith("# Task: PDF Toolkit\n\n## Background\n\nThis skill extracts")).toBe(true);
    expect(q.text).toContain("\n\n## Requirements\n\n### ");
    expect((q.text.match(/\n### /g) ?? []).length).toBeGreaterThanOrEqual(3);
    expectSpansQuoted(SKILL, q);
    const few = { ...SKILL, body: "# A\n\nIntro line of prose.\n\n## B\n\nSome text here.\n\n## C\n\nMore text here." };
    expect(compositeQueries(few, new Rng(1))).toEqual([]);
  });

  it("are pure: the same skill and seed give the same queries", () => {
    for (const kind of QUERY_KINDS) {
      expect(candidateQueries(SKILL, [kind], 5)).toEqual(candidateQueries({ ...SKILL }, [kind], 5));
    }
    expect(mixQueries(SKILL, { seed: 9 })).toEqual(mixQueries(SKILL, { seed: 9 }));
    // a kind's candidates do not depend on which other kinds are enabled
    expect(candidateQueries(SKILL, ["cloze"], 5).get("cloze")).toEqual(candidateQueries(SKILL, QUERY_KINDS, 5).get("cloze"));
  });
});

describe("mixer", () => {
  /** Skills that give a candidate of every kind, differing only in id. */
  const many = Array.from({ length: 600 }, (_, i) => ({ ...SKILL, id: `s${i}` }));

  it("draws kinds in the stated proportions (first pick per skill)", () => {
    const counts = Object.fromEntries(QUERY_KINDS.map((k) => [k, 0]));
    for (const s of many) counts[mixQueries(s, { perSkill: 1, seed: 1 })[0].kind]++;
    for (const k of QUERY_KINDS) expect(Math.abs(counts[k] / many.length - DEFAULT_MIX[k])).toBeLessThan(0.06);
  });

  it("honours kinds, weights and perSkill; distinct texts; a kind without candidates gives way", () => {
    const qs = mixQueries(SKILL, { kinds: ["cloze", "headings"], perSkill: 4, seed: 3 });
    expect(qs).toHaveLength(4);
    expect(new Set(qs.map((q) => q.text)).size).toBe(4);
    expect(qs.every((q) => q.kind === "cloze" || q.kind === "headings")).toBe(true);
    expect(mixQueries(SKILL, { weights: { description: 1, cloze: 0, triggers: 0, headings: 0, composite: 0 }, perSkill: 5 }).map((q) => q.kind)).toEqual(["description", "description"]);
    const noBody = { id: "n", name: "n", description: "Formats SQL queries and explains their plans.", body: "" };
    expect(mixQueries(noBody, { perSkill: 3 }).map((q) => q.kind)).toEqual(["description"]);
    expect(() => parseQueryKinds("description,bogus")).toThrow(/unknown query kind/);
    expect(parseQueryKinds("all")).toEqual([...QUERY_KINDS]);
    expect(parseQueryKinds("cloze, description")).toEqual(["cloze", "description"]);
  });
});

describe("keeping task texts out", () => {
  const task = "# Task: Add an audit log endpoint\n\nWe need to add an audit_logs resource endpoint to the Admin API, allowing administrators to query recent user operation records for security.";

  it("TaskOverlap: equal, a shared 12-word run, a short query inside a task; unrelated text passes", () => {
    const o = new TaskOverlap([task]);
    expect(o.overlaps(task)).toBe(true);
    expect(o.overlaps(`  ${task.toUpperCase()} `)).toBe(true);
    expect(o.overlaps("Intro. We need to add an audit_logs resource endpoint to the Admin API, allowing things.")).toBe(true);
    expect(o.overlaps("allowing administrators to query recent user operation")).toBe(true); // 8 words, all in a task run
    expect(o.overlaps("Extract text and tables from PDF files with pdftotext and camelot, keeping the layout.")).toBe(false);
    expect(o.overlaps("add an audit log")).toBe(false); // under minWords: compared whole only
    expect(o.overlaps("We need to add an audit_logs resource endpoint to the Billing service for finance teams.")).toBe(false); // 9 shared words < 12
  });

  it("excludePairs drops overlapping pseudo-queries but no skill; the split keeps a skill's queries together", () => {
    const skills: Skill[] = [
      { ...SKILL, id: "a", meta: {}, source: "a", contentHash: "a", disableModelInvocation: false } as unknown as Skill,
      { id: "b", name: "audit", description: task.slice(30), body: "", meta: {}, source: "b" } as unknown as Skill,
    ];
    const pairs = queryPairs(skills, { perSkill: 3, seed: 1 });
    expect(pairs.some((p) => p.positives[0] === 1)).toBe(true);
    const r = excludePairs(pairs, skills, { overlap: new TaskOverlap([task]) });
    expect(r.pairs.some((p) => p.positives[0] === 1)).toBe(false);
    expect(r.excludedTasks).toBe(pairs.filter((p) => p.positives[0] === 1).length);
    const items = Array.from({ length: 100 }, (_, i) => ({ q: i, g: i % 20 }));
    const split = splitValidation(items, 0.2, 3, (x) => x.g);
    const valGroups = new Set(split.val.map((x) => x.g));
    expect(valGroups.size).toBe(4);
    expect(split.train.some((x) => valGroups.has(x.g))).toBe(false);
    expect(split.train.length + split.val.length).toBe(100);
  });
});
