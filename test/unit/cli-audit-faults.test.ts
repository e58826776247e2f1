// Faults of the CLI audit, each checked in-process on the command itself: `gavel eval` checks every
// argument before it (re)writes --per-query F and refuses --limit 0; `gavel projections --out` into a
// missing folder or onto a folder, and `gavel demo --model DIR` / `--projections DIR`, fail typed and
// before any work; a JSONL library whose first line carries a UTF-8 BOM keeps that row; and
// `gavel info --addon FILE` is refused rather than dropping --addon without a word.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { evalCommand } from "../../lab/cli/eval.js";
import { demo } from "../../src/cli/commands/demo.js";
import { info } from "../../src/cli/commands/info.js";
import { projections } from "../../src/cli/commands/projections.js";
import { loadSkills } from "../../src/skills/index.js";
import { jsonlLines, readJsonl } from "../../src/util/jsonl.js";
import { repoRoot } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";

const dir = mkdtempSync(join(tmpdir(), "cli-audit-"));
const BOM = "\uFEFF";

/** What a GavelError-like rejection carries. */
async function failure(p: Promise<unknown>): Promise<{ code?: string; message: string; name: string }> {
  const err = await p.then(
    () => {
      throw new Error("expected the command to fail");
    },
    (e: unknown) => e as { code?: string; message: string; name: string },
  );
  return err;
}

beforeEach(() => {
  vi.spyOn(console, "log").mockImplementation(() => undefined);
  vi.spyOn(console, "error").mockImplementation(() => undefined);
});
afterEach(() => vi.restoreAllMocks());

describe("gavel eval: arguments are checked before --per-query F is written", () => {
  const skills = join(dir, "skills3");
  mkdirSync(skills);
  for (const s of ["bash-scripting", "dockerfile", "regex-patterns"]) cpSync(join(repoRoot, "examples", "skills", s), join(skills, s), { recursive: true });
  const tasks = join(dir, "tasks.jsonl");
  writeFileSync(
    tasks,
    [
      { id: "t1", text: "write a Dockerfile for my python flask app", gold_skill_ids: ["dockerfile"], batch: 1 },
      { id: "t2", text: "match email addresses with a regular expression", gold_skill_ids: ["regex-patterns"], batch: 1 },
      { id: "t3", text: "write a bash script that loops over files with spaces", gold_skill_ids: ["bash-scripting"], batch: 2 },
    ].map((t) => JSON.stringify(t) + "\n").join(""),
  );
  const base = ["--tasks", tasks, "--library", skills, "--methods", "bm25"];
  const lines = (f: string) => readFileSync(f, "utf8").split("\n").filter(Boolean).length;

  it("keeps F's records when --pool, --lexical-pool, --also or --tasks is bad", async () => {
    const pq = join(dir, "pq.jsonl");
    expect(await evalCommand.run([...base, "--per-query", pq])).toBe(0);
    expect(lines(pq)).toBe(3);
    const bad: [string[], string][] = [
      [["--pool", "0"], "INVALID_ARGUMENT"],
      [["--lexical-pool", "3"], "INVALID_ARGUMENT"],
      [["--pool", "4", "--also", join(dir, "no-such-also.jsonl")], "FILE_NOT_FOUND"],
      [["--limit", "0"], "INVALID_ARGUMENT"],
      [["--batches", "9"], "INVALID_ARGUMENT"],
    ];
    for (const [extra, code] of bad) {
      const e = await failure(evalCommand.run([...base, "--per-query", pq, ...extra]));
      expect(e.code, extra.join(" ")).toBe(code);
      expect(lines(pq), extra.join(" ")).toBe(3);
    }
    const e = await failure(evalCommand.run(["--tasks", join(dir, "no-such-tasks.jsonl"), "--library", skills, "--methods", "bm25", "--per-query", pq]));
    expect(e.code).toBe("FILE_NOT_FOUND");
    expect(lines(pq)).toBe(3);
  });

  it("refuses --limit below 1 (a table of zeros is no result)", async () => {
    for (const limit of ["0", "-1"]) {
      const e = await failure(evalCommand.run([...base, `--limit=${limit}`]));
      expect(e.code).toBe("INVALID_ARGUMENT");
      expect(e.message).toMatch(/--limit must be a positive integer/);
    }
    expect(await evalCommand.run([...base, "--limit", "1"])).toBe(0);
  });

  it("refuses a --per-query F in a missing folder or onto a folder before any work", async () => {
    expect((await failure(evalCommand.run([...base, "--per-query", join(dir, "nope", "pq.jsonl")]))).code).toBe("FILE_NOT_FOUND");
    expect((await failure(evalCommand.run([...base, "--per-query", dir]))).code).toBe("INVALID_ARGUMENT");
  });
});

describe("gavel projections --out", () => {
  it("into a missing folder: FILE_NOT_FOUND naming --out, before the model loads", async () => {
    const e = await failure(projections.run(["--model", TINY_LLAMA_PATH, "--out", join(dir, "missing-dir", "p.gguf")]));
    expect(e.name).toBe("GavelError");
    expect(e.code).toBe("FILE_NOT_FOUND");
    expect(e.message).toMatch(/^--out .*missing-dir.* does not exist$/);
  });

  it("onto a folder: INVALID_ARGUMENT naming --out", async () => {
    const e = await failure(projections.run(["--model", join(dir, "no-model.gguf"), "--out", dir]));
    expect(e.name).toBe("GavelError");
    expect(e.code).toBe("INVALID_ARGUMENT");
    expect(e.message).toMatch(/^--out .* is a folder/);
  });
});

describe("gavel demo --model DIR / --projections DIR", () => {
  it("is FILE_NOT_FOUND, naming the flag, not a bare EISDIR", async () => {
    const m = await failure(demo.run(["--model", dir]));
    expect(m.code).toBe("FILE_NOT_FOUND");
    expect(m.message).toBe(`model ${dir} (from --model) is not a file`);
    const p = await failure(demo.run(["--model", TINY_LLAMA_PATH, "--projections", dir]));
    expect(p.code).toBe("FILE_NOT_FOUND");
    expect(p.message).toBe(`projections ${dir} (from --projections) is not a file`);
    // a missing file still says so
    const gone = await failure(demo.run(["--model", join(dir, "gone.gguf")]));
    expect(gone.message).toMatch(/does not exist$/);
  });
});

describe("a JSONL file whose first line starts with a UTF-8 BOM", () => {
  const row = { id: "bom-a", name: "bom-a", description: "Parse CSV files with pandas", body: "Use pandas.read_csv." };
  const second = { ...row, id: "bom-b", name: "bom-b" };
  const text = `${BOM}${JSON.stringify(row)}\n${JSON.stringify(second)}\n`;

  it("keeps its first row, plain and gzipped, streamed and read whole", async () => {
    for (const [name, bytes] of [["bom.jsonl", Buffer.from(text)], ["bom.jsonl.gz", gzipSync(text)]] as const) {
      const f = join(dir, name);
      writeFileSync(f, bytes);
      const streamed: string[] = [];
      for await (const l of jsonlLines(f)) streamed.push(l.text);
      expect(streamed.map((t) => JSON.parse(t).id)).toEqual(["bom-a", "bom-b"]);
      expect((await readJsonl(f)).map((r) => (r.value as { id: string }).id)).toEqual(["bom-a", "bom-b"]);
    }
  });

  it("loads as a library with no failed row", async () => {
    const f = join(dir, "bom1.jsonl");
    writeFileSync(f, `${BOM}${JSON.stringify(row)}\n`);
    const r = await loadSkills(f);
    expect(r.failed).toEqual([]);
    expect(r.skills.map((s) => s.id)).toEqual(["bom-a"]);
  });

  it("keeps a U+FEFF that is not at the file's start", async () => {
    const f = join(dir, "inner.jsonl");
    writeFileSync(f, `${JSON.stringify(row)}\n${BOM}${JSON.stringify(second)}\n`);
    const streamed: string[] = [];
    for await (const l of jsonlLines(f)) streamed.push(l.text);
    expect(streamed[1].startsWith(BOM)).toBe(true);
  });
});

describe("gavel info --addon FILE", () => {
  it("is refused (--addon is documented alone), not ignored", async () => {
    const e = await failure(info.run(["--addon", TINY_LLAMA_PATH]));
    expect(e.name).toBe("GavelError");
    expect(e.code).toBe("INVALID_ARGUMENT");
    expect(e.message).toMatch(/--addon takes no file.*gavel info --addon alone/);
  });
});
