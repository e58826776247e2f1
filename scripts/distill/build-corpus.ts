// Builds the unlabeled task-statement corpus for distilling the glance's query map (issue 34, item 3):
// public task statements read from fetched mirrors (bare git directories), one JSONL row each,
// { id, text, source: { repo, commit, path, license } }, in a fixed order, so the same mirrors give the
// same file byte for byte. Sources, licences and the screening rules: scripts/distill/SOURCES.md.
//
// Usage: npx vite-node scripts/distill/build-corpus.ts -- [--mirrors DIR] [--out FILE] [--exclude-tasks FILE]
//        [--only termigen,exercism]
//   --mirrors        where `fetch` put the mirrors (default /work/.mirror): DIR/<owner>+<name>/repo
//   --out            default .device/distill/tasks.jsonl
//   --exclude-tasks  the dev set whose texts must not leak (default ../shared/data/swe-skills-bench/tasks.jsonl,
//                    then /work/shared/data/swe-skills-bench/tasks.jsonl); a statement sharing a 12-word
//                    run with any of its texts is dropped
//   --only           keep only these sources (by key, comma-separated)
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { readTaskTexts } from "../../lab/train/pairs.js";
import { TaskOverlap } from "../../lab/train/queries/overlap.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const opt = (name: string, dflt: string): string => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const mirrors = opt("--mirrors", "/work/.mirror");
const out = opt("--out", ".device/distill/tasks.jsonl");
const devSet = opt("--exclude-tasks", ["../shared/data/swe-skills-bench/tasks.jsonl", "/work/shared/data/swe-skills-bench/tasks.jsonl"].find((p) => existsSync(p)) ?? "");
const only = args.includes("--only") ? new Set(opt("--only", "").split(",")) : undefined;

const MIN_CHARS = 100;
const MAX_CHARS = 8000;
/** Repositories never read, whatever a mirror holds: held-out benchmarks and the dev set. */
const NEVER = [/yujianll\/skill-usage/i, /skillsbench/i, /SkillRouter/i, /skills-registry/i, /SWE-Skills-Bench/i];
/** A file asking to be kept out of training corpora (benchmark canaries): its statement is dropped. */
const CANARY = /canary GUID|SHOULD NEVER APPEAR IN TRAINING CORPORA/i;

interface Statement {
  id: string;
  text: string;
  source: { repo: string; commit: string; path: string; license: string };
}

/** A mirror's HEAD commit, file list, and a batch reader of blobs at HEAD. */
class Mirror {
  readonly gitDir: string;
  readonly commit: string;
  readonly files: string[];
  constructor(readonly repo: string) {
    if (NEVER.some((r) => r.test(repo))) throw new Error(`${repo} is a held-out or dev-set source: never read`);
    this.gitDir = join(mirrors, repo.replace("/", "+"), "repo");
    if (!existsSync(this.gitDir)) throw new Error(`${repo}: no mirror at ${this.gitDir} (fetch github:${repo} first)`);
    this.commit = this.git(["rev-parse", "HEAD"]).trim();
    this.files = this.git(["ls-tree", "-r", "--name-only", "-z", "HEAD"]).split("\0").filter(Boolean).sort();
  }
  git(a: string[], input?: string): string {
    return execFileSync("git", ["--git-dir", this.gitDir, ...a], { input, maxBuffer: 1 << 30, encoding: "utf8" });
  }
  /** The text of each path at HEAD (one `git cat-file --batch` call). */
  read(paths: readonly string[]): Map<string, string> {
    const buf = execFileSync("git", ["--git-dir", this.gitDir, "cat-file", "--batch"], {
      input: paths.map((p) => `${this.commit}:${p}\n`).join(""),
      maxBuffer: 1 << 30,
    });
    const outMap = new Map<string, string>();
    let at = 0;
    for (const p of paths) {
      const nl = buf.indexOf(10, at);
      const header = buf.subarray(at, nl).toString("utf8");
      const m = /^\S+ blob (\d+)$/.exec(header);
      if (!m) throw new Error(`${this.repo}:${p}: ${header}`);
      const size = Number(m[1]);
      outMap.set(p, buf.subarray(nl + 1, nl + 1 + size).toString("utf8"));
      at = nl + 1 + size + 1;
    }
    return outMap;
  }
}

/** Line endings to \n, trailing spaces and surplus blank lines gone, trimmed. */
function tidy(s: string): string {
  return s
    .replace(/\r\n?/g, "\n")
    .replace(/[ \t]+$/gm, "")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

type Source = { key: string; repo: string; license: string; extract: (m: Mirror) => Statement[] };

const SOURCES: Source[] = [
  {
    // TermiGen's verified terminal-agent environments (Harbor layout): environments_harbor/<task>/instruction.md.
    key: "termigen",
    repo: "zjysteven/terminal-bench-env",
    license: "none stated (README: adapted from ucsb-mlsec/terminal-bench-env, a training set for terminal agents)",
    extract(m) {
      const paths = m.files.filter((f) => /^environments_harbor\/[^/]+\/instruction\.md$/.test(f));
      const texts = m.read(paths);
      return paths.map((p) => ({
        id: `termigen/${p.split("/")[1]}`,
        text: texts.get(p)!,
        source: { repo: m.repo, commit: m.commit, path: p, license: this.license },
      }));
    },
  },
  {
    // Exercism's canonical exercises: exercises/<slug>/{introduction.md, instructions.md | description.md};
    // deprecated exercises (a .deprecated file) are left out.
    key: "exercism",
    repo: "exercism/problem-specifications",
    license: "MIT",
    extract(m) {
      const slugs = [...new Set(m.files.filter((f) => f.startsWith("exercises/")).map((f) => f.split("/")[1]))].sort();
      const has = new Set(m.files);
      const wanted: string[] = [];
      const plan: { slug: string; parts: string[] }[] = [];
      for (const s of slugs) {
        const d = `exercises/${s}`;
        if (has.has(`${d}/.deprecated`)) continue;
        const parts = [`${d}/introduction.md`, `${d}/instructions.md`].filter((p) => has.has(p));
        if (!parts.some((p) => p.endsWith("instructions.md"))) parts.splice(0, parts.length, ...[`${d}/description.md`].filter((p) => has.has(p)));
        if (parts.length === 0) continue;
        plan.push({ slug: s, parts });
        wanted.push(...parts);
      }
      const texts = m.read(wanted);
      return plan.map(({ slug, parts }) => ({
        id: `exercism/${slug}`,
        text: parts.map((p) => texts.get(p)!).join("\n\n"),
        source: { repo: m.repo, commit: m.commit, path: parts.join(","), license: this.license },
      }));
    },
  },
];

const devTexts = devSet ? await readTaskTexts(devSet) : new Set<string>();
if (!devSet) console.warn("no dev-set task file found: the 12-word screen is OFF");
const overlap = new TaskOverlap(devTexts);
const rows: Statement[] = [];
const seen = new Set<string>();
const report: string[] = [];
for (const src of SOURCES) {
  if (only && !only.has(src.key)) continue;
  const m = new Mirror(src.repo);
  const drop = { short: 0, long: 0, canary: 0, dup: 0, devOverlap: 0 };
  let kept = 0;
  for (const s of src.extract(m)) {
    if (CANARY.test(s.text)) { drop.canary++; continue; }
    s.text = tidy(s.text);
    if (s.text.length < MIN_CHARS) { drop.short++; continue; }
    if (s.text.length > MAX_CHARS) { drop.long++; continue; }
    const key = s.text.toLowerCase().replace(/\s+/g, " ");
    if (seen.has(key)) { drop.dup++; continue; }
    if (devTexts.has(s.text) || overlap.overlaps(s.text)) { drop.devOverlap++; continue; }
    seen.add(key);
    rows.push(s);
    kept++;
  }
  report.push(`${src.key} (${src.repo}@${m.commit.slice(0, 12)}, ${src.license.split(" (")[0]}): ${kept} kept; dropped ${JSON.stringify(drop)}`);
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
for (const l of report) console.log(l);
console.log(`${rows.length} statements → ${out}${devSet ? ` (screened against ${devSet}, ${devTexts.size} texts)` : ""}`);
