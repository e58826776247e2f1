// A mistyped command line, run as a user would (node dist/cli/gavel.js …; `npx tsup` first): one line
// in the project's words naming the flag and the command, with what was probably meant, exit 2, and
// with --json the same message as code USAGE. Nothing is loaded: the flags are refused first.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/paths.js";
import { run } from "../helpers/run.js";

const cli = join(repoRoot, "dist", "cli", "gavel.js");
const bin = join(repoRoot, "dist", "cli", "gavel.cjs");
const home = mkdtempSync(join(tmpdir(), "gavel-cli-flags-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));
const env = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "", HOME: home, XDG_CONFIG_HOME: join(home, ".config") };
const gavel = (...args: string[]) => run(process.execPath, [cli, ...args], { cwd: home, timeoutMs: 120_000, env });

/** The JSON error a failed `--json` command prints on stderr. */
const jsonError = (err: string) => (JSON.parse(err) as { error: { code: string; message: string; exitCode: number } }).error;

describe("a mistyped command line", () => {
  it("an unknown option: one line naming it, the command that takes it, exit 2; the same message in JSON", async () => {
    const text = await gavel("route", "--top", "5", "write a dockerfile");
    const message = "unknown option --top for gavel route; gavel glance takes --top (gavel route --help shows the usage)";
    expect(text.code).toBe(2);
    expect(text.out).toBe("");
    expect(text.err).toBe(`gavel: ${message}\n`);
    const json = await gavel("route", "--top", "5", "write a dockerfile", "--json");
    expect(json.code).toBe(2);
    expect(json.out).toBe("");
    expect(jsonError(json.err)).toEqual({ code: "USAGE", message, exitCode: 2 });
  }, 240_000);

  it("says what was meant, and when '--' is the answer", async () => {
    for (const [args, line] of [
      [["glance", "--tpo", "3", "a task"], "unknown option --tpo for gavel glance; did you mean --top?"],
      [["list", "--jsno"], "unknown option --jsno for gavel list; did you mean --json?"],
      [["route", "-x"], "unknown option -x for gavel route; an argument starting with '-' goes after --: gavel route -- -x"],
      [["list", "--bank"], "option --bank of gavel list needs a value"],
      [["list", "--json=1"], "option --json of gavel list takes no value, got --json=1"],
      [["list", "json"], "unexpected argument json: gavel list takes options only; did you mean --json?"],
      [["projections", "a.gguf", "--out", "b.gguf"], "unexpected argument a.gguf: gavel projections takes FILE alone, or --model and --out"],
      // the lab's commands, from their own bundle, and the installer of the hook
      [["eval", "--tasks"], "option --tasks of gavel eval needs a value"],
      [["hook", "install", "claude-code", "--bnak", "b"], "unknown option --bnak for gavel hook install; did you mean --bank?"],
    ] as const) {
      const r = await gavel(...args);
      const tail = ` (gavel ${args[0] === "hook" ? "hook install" : args[0]} --help shows the usage)`;
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.err, args.join(" ")).toBe(`gavel: ${line}${tail}\n`);
    }
  }, 600_000);

  it("the Claude Code hook: the same words as its one line on stderr, exit 0", async () => {
    for (const entry of [bin, cli]) {
      const r = await run(process.execPath, [entry, "hook", "claude-code", "--verdcit"], { cwd: home, timeoutMs: 120_000, env, input: "{}" });
      expect(r.code).toBe(0);
      expect(r.out).toBe("");
      expect(r.err).toBe("gavel hook: unknown option --verdcit for gavel hook claude-code; did you mean --verdict? (gavel hook claude-code --help shows the usage); nothing added to the prompt\n");
    }
  }, 240_000);
});
