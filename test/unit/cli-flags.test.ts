// The CLI's one flag parser (src/cli/ui/flags.ts): util.parseArgs' rules unchanged, a mistyped command
// line in the project's words (naming the flag and the command, with what was probably meant).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { describe, expect, it } from "vitest";
import { FlagError, isFlagError, nearOptions, parseFlags, strayArgument, withOtherCommands } from "../../src/cli/ui/flags.js";
import { editDistance, nearest } from "../../src/util/validate.js";
import { isUsageError } from "../../src/cli/usage-error.js";
import { repoRoot } from "../helpers/paths.js";

/** A command's options, as the router commands declare them (short flags, strings, booleans, a list). */
const OPTIONS = {
  bank: { type: "string", short: "b" },
  json: { type: "boolean", short: "j" },
  topk: { type: "string" },
  "task-file": { type: "string" },
  "exclude-source": { type: "string", multiple: true },
} as const;

/** The FlagError parseFlags throws for `args` (fails the test when it throws none or another). */
function refusal(args: string[], allowPositionals = true, command = "route"): FlagError {
  try {
    parseFlags(command, { args, allowPositionals, options: OPTIONS });
  } catch (err) {
    expect(isFlagError(err), String(err)).toBe(true);
    return err as FlagError;
  }
  throw new Error(`parseFlags accepted ${JSON.stringify(args)}`);
}

describe("parseFlags", () => {
  it("an unknown option: the command, the near option, and where the help is", () => {
    const e = refusal(["--top", "5", "a task"]);
    expect(e.message).toBe("unknown option --top for gavel route; did you mean --topk? (gavel route --help shows the usage)");
    expect(e.flag).toMatchObject({ kind: "unknown", command: "route", name: "top", raw: "--top", suggestions: ["--topk"], dashHint: false });
    // a swap is one edit (Damerau–Levenshtein), case is ignored, and a unique prefix is enough
    expect(refusal(["--jsno"]).message).toMatch(/^unknown option --jsno for gavel route; did you mean --json\? /);
    expect(refusal(["--JSON"]).message).toMatch(/; did you mean --json\? /);
    expect(refusal(["--task"]).message).toMatch(/; did you mean --task-file\? /);
    expect(refusal(["--exclude=x"]).message).toMatch(/^unknown option --exclude for gavel route; did you mean --exclude-source\? /);
    // `-topk` is the short flag -t to util.parseArgs; typed for --topk more likely
    expect(refusal(["-topk", "3"]).message).toBe("unknown option -t (in -topk) for gavel route; did you mean --topk? (gavel route --help shows the usage)");
  });

  it("an unknown option with nothing near: no guess", () => {
    const e = refusal(["--frobnicate", "a task"]);
    expect(e.message).toBe("unknown option --frobnicate for gavel route (gavel route --help shows the usage)");
    expect(e.flag.suggestions).toEqual([]);
    // distance 3 is not near; nor is a two-letter name two edits from another
    expect(refusal(["--jsonxyz"]).flag.suggestions).toEqual([]);
    expect(refusal(["--xy"]).flag.suggestions).toEqual([]);
  });

  it("'--' is offered only for what reads as an argument starting with '-'", () => {
    // a task with spaces, or a lone short flag that is no option of the command
    expect(refusal(["--fix the bug"]).message).toBe(
      'unknown option "--fix the bug" for gavel route; an argument starting with \'-\' goes after --: gavel route -- "--fix the bug" (gavel route --help shows the usage)',
    );
    expect(refusal(["-x"]).message).toBe("unknown option -x for gavel route; an argument starting with '-' goes after --: gavel route -- -x (gavel route --help shows the usage)");
    // a mistyped long flag, a short one with a near option, or a command that takes no argument: none
    expect(refusal(["--frobnicate"]).flag.dashHint).toBe(false);
    expect(refusal(["-topk"]).flag.dashHint).toBe(false);
    expect(refusal(["-x"], false, "list").message).toBe("unknown option -x for gavel list (gavel list --help shows the usage)");
    // the quoting stays balanced and on one line, whatever the argument holds
    const odd = refusal(["-'a\nb"]);
    expect(odd.message).not.toMatch(/\n/);
    expect(odd.message).toContain(`gavel route -- "-'a\\nb"`);
  });

  it("a boolean given a value, and a value option given none, name the flag", () => {
    expect(refusal(["--json=1"]).message).toBe("option --json of gavel route takes no value, got --json=1 (gavel route --help shows the usage)");
    expect(refusal(["a task", "--bank"]).message).toBe("option --bank of gavel route needs a value (gavel route --help shows the usage)");
    expect(refusal(["-b"]).message).toBe("option -b (--bank) of gavel route needs a value (gavel route --help shows the usage)");
    // util.parseArgs' "ambiguous" value: `--bank --json` would take --json as the bank
    expect(refusal(["--bank", "--json"]).message).toBe(
      "option --bank of gavel route needs a value, not the option-like --json (a value starting with '-' is written --bank=--json) (gavel route --help shows the usage)",
    );
    expect(refusal(["--bank", "--json"]).flag).toMatchObject({ kind: "dash-value", value: "--json" });
  });

  it("a stray positional names the argument, and the option it may have been meant as", () => {
    expect(refusal(["extra"], false, "list").message).toBe("unexpected argument extra: gavel list takes options only (gavel list --help shows the usage)");
    expect(refusal(["--json", "json"], false, "list").message).toBe("unexpected argument json: gavel list takes options only; did you mean --json? (gavel list --help shows the usage)");
    // past `--` too, as util.parseArgs refuses it
    expect(refusal(["--", "-x"], false, "list").flag).toMatchObject({ kind: "positional", arg: "-x" });
    expect(strayArgument("projections", "/tmp/a b.gguf", "FILE alone, or --model and --out").message).toBe(
      'unexpected argument "/tmp/a b.gguf": gavel projections takes FILE alone, or --model and --out (gavel projections --help shows the usage)',
    );
  });

  it("is a usage error (exit 2, code USAGE) of one line, with no help text before it", () => {
    const e = refusal(["--top"]);
    expect(isUsageError(e)).toBe(true);
    expect(e.text).toBe("");
    expect(e.message).not.toMatch(/Unknown option|place it at the end/);
  });

  it("names the other commands that take an unknown option", () => {
    const table = { route: { options: OPTIONS }, glance: { options: { top: { type: "string" } } }, serve: { options: { top: { type: "string" }, port: { type: "string" } } }, mcp: { options: { port: { type: "string" } } } } as const;
    expect((withOtherCommands(refusal(["--top", "5"]), table) as Error).message).toBe(
      "unknown option --top for gavel route; gavel glance and gavel serve take --top; did you mean --topk? (gavel route --help shows the usage)",
    );
    expect((withOtherCommands(refusal(["--port=1"]), table) as Error).message).toBe("unknown option --port for gavel route; gavel serve and gavel mcp take --port (gavel route --help shows the usage)");
    const many = Object.fromEntries(["a", "b", "c", "d", "e"].map((n) => [n, { options: { zz: { type: "boolean" as const } } }]));
    expect((withOtherCommands(refusal(["--zz"]), many) as Error).message).toMatch(/; gavel a, gavel b and 3 other commands take --zz /);
    // not its own command, not a short flag, and any other error untouched
    expect((withOtherCommands(refusal(["--top"], true, "glance"), table) as Error).message).toMatch(/; gavel serve takes --top/);
    const short = refusal(["-x"]);
    expect(withOtherCommands(short, { x: { options: { x: { type: "boolean" } } } })).toBe(short);
    const other = new Error("not a flag");
    expect(withOtherCommands(other, table)).toBe(other);
  });

  it("parses exactly as util.parseArgs does, and refuses exactly what it refuses", () => {
    // every line of up to three arguments from a pool of the cases: short groups, inline values, `--`, `-`
    const pool = ["--bank", "-b", "x", "--json", "-j", "--json=1", "--", "-", "-bj", "-jb", "-jx", "--bank=-x", "--nope", "-z", "--bank=", "--exclude-source", "a b"];
    const wrong: string[] = [];
    let refused = 0;
    for (const a of pool) {
      for (const b of ["", ...pool]) {
        for (const c of ["", ...pool]) {
          const args = [a, b, c].filter((s) => s !== "");
          for (const allowPositionals of [true, false]) {
            const config = { args, allowPositionals, options: OPTIONS };
            let expected: string;
            try {
              expected = JSON.stringify(parseArgs(config));
            } catch (err) {
              // each refusal found and worded by parseFlags, never in Node's words
              const code = (err as NodeJS.ErrnoException).code ?? "";
              const ours = (() => {
                try {
                  return parseFlags("route", config);
                } catch (e) {
                  return e;
                }
              })();
              if (!code.startsWith("ERR_PARSE_ARGS_") || !isFlagError(ours)) wrong.push(`${JSON.stringify(config)}: ${code}, ours ${String(ours)}`);
              refused++;
              continue;
            }
            if (JSON.stringify(parseFlags("route", config)) !== expected) wrong.push(JSON.stringify(config));
          }
        }
      }
    }
    expect(wrong).toEqual([]);
    expect(refused).toBeGreaterThan(1000);
  }, 60_000);

  it("passes other errors through (a spec util.parseArgs refuses)", () => {
    expect(() => parseFlags("route", { args: [], options: { a: { type: "number" as "string" } } })).toThrow(expect.objectContaining({ code: "ERR_INVALID_ARG_TYPE" }));
  });
});

describe("editDistance (shared with the library's option-key suggestions)", () => {
  /** Optimal string alignment distance, written plainly (recursion with memo). */
  function osa(a: string, b: string): number {
    const memo = new Map<string, number>();
    const go = (i: number, j: number): number => {
      const key = `${i},${j}`;
      const hit = memo.get(key);
      if (hit !== undefined) return hit;
      let d: number;
      if (i === 0) d = j;
      else if (j === 0) d = i;
      else {
        d = Math.min(go(i - 1, j) + 1, go(i, j - 1) + 1, go(i - 1, j - 1) + (a[i - 1] === b[j - 1] ? 0 : 1));
        if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, go(i - 2, j - 2) + 1);
      }
      memo.set(key, d);
      return d;
    };
    return go(a.length, b.length);
  }

  it("equals the plain distance up to 2, and says over 2 past it, on fresh random strings", () => {
    const letters = "abc-";
    const word = () => Array.from({ length: Math.floor(Math.random() * 7) }, () => letters[Math.floor(Math.random() * letters.length)]).join("");
    for (let n = 0; n < 3000; n++) {
      const [a, b] = [word(), word()];
      const want = osa(a, b);
      const got = editDistance(a, b);
      if (want <= 2) expect(got, `${a} ~ ${b}`).toBe(want);
      else expect(got, `${a} ~ ${b}`).toBeGreaterThan(2);
    }
    expect(nearest("sigal", ["signal", "timeoutMs"])).toBe("signal");
    expect(nearest("singal", ["signal"])).toBe("signal");
    expect(nearest("xyzzy", ["signal"])).toBeUndefined();
  });
});

describe("nearOptions", () => {
  it("a unique prefix, else the nearest within two edits, at most three", () => {
    const names = ["model", "context", "threads", "json", "bank", "top"];
    expect(nearOptions("mod", names)).toEqual(["model"]);
    expect(nearOptions("contxet", names)).toEqual(["context"]);
    expect(nearOptions("thraeds", names)).toEqual(["threads"]);
    expect(nearOptions("tpo", names)).toEqual(["top"]);
    expect(nearOptions("banks", names)).toEqual(["bank"]);
    expect(nearOptions("frobnicate", names)).toEqual([]);
    expect(nearOptions("", names)).toEqual([]);
  });

  it("the option itself, case aside, before a longer one it begins (--WATCH, -watch)", () => {
    expect(nearOptions("WATCH", ["watch", "watch-debounce-ms"])).toEqual(["watch"]);
    expect(nearOptions("project", ["projections", "project"])).toEqual(["project"]);
    expect(nearOptions("watc", ["watch", "watch-debounce-ms"])).toEqual(["watch"]);
  });
});

describe("the CLI parses flags in one place", () => {
  it("no module of src/ or lab/ but flags.ts imports util.parseArgs", () => {
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const d of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, d.name);
        if (d.isDirectory()) walk(path);
        else if (/\.[cm]?[jt]s$/.test(d.name) && path !== join(repoRoot, "src", "cli", "ui", "flags.ts")) {
          const text = readFileSync(path, "utf8");
          if (/\bimport\s*\{[^}]*\bparseArgs\b[^}]*\}\s*from\s*["'](node:)?util["']/.test(text) || /\butil\.parseArgs\s*\(|require\(["'](node:)?util["']\)\.parseArgs/.test(text)) offenders.push(path.slice(repoRoot.length + 1));
        }
      }
    };
    walk(join(repoRoot, "src"));
    walk(join(repoRoot, "lab"));
    expect(offenders).toEqual([]);
  });
});
