// The Claude Code plugin in plugin/ (and the marketplace entry that lists it): its JSON files parse
// into the shapes Claude Code reads, every file they name exists and is executable, and the commands
// run as Claude Code runs them (${CLAUDE_PLUGIN_ROOT} and CLAUDE_PROJECT_DIR set; sh -c).
import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { accessSync, constants, mkdirSync, mkdtempSync, readFileSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "../helpers/paths.js";

const pluginRoot = join(repoRoot, "plugin");
const cli = join(repoRoot, "dist", "cli", "gavel.js");
const readJson = (...p: string[]) => JSON.parse(readFileSync(join(...p), "utf8")) as Record<string, any>;

/** `command` as Claude Code runs a plugin's command: through sh, with the plugin's and project's folders in the environment. */
function runAsClaudeCode(command: string, stdin: string, project: string, path = "/usr/bin:/bin"): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const env = { PATH: `${join(process.execPath, "..")}:${path}`, HOME: project, CLAUDE_PLUGIN_ROOT: pluginRoot, CLAUDE_PROJECT_DIR: project, GAVEL_BANK: "" };
    const child = spawn("sh", ["-c", command], { env, cwd: project });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out, err }));
    child.stdin.on("error", () => undefined);
    child.stdin.end(stdin);
  });
}

/** `${CLAUDE_PLUGIN_ROOT}/x` in a command, as the file it names. */
function pluginFile(command: string): string {
  const m = /\$\{CLAUDE_PLUGIN_ROOT\}\/([\w./-]+)/.exec(command);
  expect(m, command).not.toBeNull();
  return join(pluginRoot, m![1]);
}

describe("the Claude Code plugin (plugin/)", () => {
  const manifest = readJson(pluginRoot, ".claude-plugin", "plugin.json");
  const hooks = readJson(pluginRoot, "hooks", "hooks.json");
  const mcp = readJson(pluginRoot, ".mcp.json");
  const pkg = readJson(repoRoot, "package.json");

  it("has a manifest, and the repository's marketplace lists it by a relative source", () => {
    expect(manifest.name).toBe("gavel-router");
    expect(manifest.name).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/); // kebab-case, as Claude Code requires
    expect(manifest.version).toBe(pkg.version);
    const market = readJson(repoRoot, ".claude-plugin", "marketplace.json");
    expect(market.owner.name).toEqual(expect.any(String));
    const entry = (market.plugins as { name: string; source: string; version: string }[]).find((p) => p.name === manifest.name)!;
    expect(entry.source).toBe("./plugin");
    expect(entry.version).toBe(pkg.version);
    expect(readJson(repoRoot, entry.source, ".claude-plugin", "plugin.json").name).toBe(manifest.name);
  });

  it("declares one UserPromptSubmit hook and one MCP server, each an executable script in the plugin", () => {
    expect(Object.keys(hooks.hooks)).toEqual(["UserPromptSubmit"]);
    const entries = (hooks.hooks.UserPromptSubmit as { hooks: { type: string; command: string; timeout: number }[] }[]).flatMap((g) => g.hooks);
    expect(entries).toHaveLength(1);
    expect(entries[0].type).toBe("command");
    expect(entries[0].timeout).toBe(10);
    accessSync(pluginFile(entries[0].command), constants.X_OK);
    expect(Object.keys(mcp.mcpServers)).toEqual(["gavel"]);
    accessSync(pluginFile(mcp.mcpServers.gavel.command), constants.X_OK);
    // the scripts run commands the CLI has: `gavel hook claude-code` and `gavel mcp`
    expect(readFileSync(pluginFile(entries[0].command), "utf8")).toMatch(/\/gavel" hook claude-code "\$@"/);
    expect(readFileSync(pluginFile(mcp.mcpServers.gavel.command), "utf8")).toMatch(/\/gavel" mcp "\$@"/);
  });

  it("the hook command runs the project's gavel, and without one exits 0 with one line on stderr", async () => {
    const hookCommand = hooks.hooks.UserPromptSubmit[0].hooks[0].command as string;
    const project = mkdtempSync(join(tmpdir(), "gavel-plugin-"));
    const stdin = JSON.stringify({ session_id: "s", cwd: project, hook_event_name: "UserPromptSubmit", prompt: "Extract the tables from report.pdf" });
    const none = await runAsClaudeCode(hookCommand, stdin, project);
    expect(none.code).toBe(0);
    expect(none.out).toBe("");
    expect(none.err.trim()).toBe(`gavel hook: gavel-router is installed neither in ${project} (npm install gavel-router) nor on PATH; nothing added to the prompt`);
    // with the project's install: the real hook runs (no server: it says so, exit 0)
    mkdirSync(join(project, "node_modules", ".bin"), { recursive: true });
    symlinkSync(cli, join(project, "node_modules", ".bin", "gavel"));
    const ran = await runAsClaudeCode(hookCommand, stdin, project);
    expect(ran.code).toBe(0);
    expect(ran.out).toBe("");
    expect(ran.err.trim()).toBe(`gavel hook: no gavel server runs for the bank ${join(project, ".gavel", "bank")} (start one with \`gavel serve\`); nothing added to the prompt`);
  });

  it("the MCP command starts the project's `gavel mcp` (which refuses a project without a bank)", async () => {
    const project = mkdtempSync(join(tmpdir(), "gavel-plugin-mcp-"));
    const command = `"${"$"}{CLAUDE_PLUGIN_ROOT}/scripts/gavel-mcp.sh"`;
    expect(pluginFile(mcp.mcpServers.gavel.command)).toBe(pluginFile(command));
    const none = await runAsClaudeCode(command, "", project);
    expect(none.code).toBe(1);
    expect(none.err).toMatch(/^gavel mcp: gavel-router is installed neither in /);
    mkdirSync(join(project, "node_modules", ".bin"), { recursive: true });
    symlinkSync(cli, join(project, "node_modules", ".bin", "gavel"));
    const ran = await runAsClaudeCode(command, "", project);
    expect(ran.code).toBe(1);
    expect(ran.err).toMatch(/no bank at .*\.gavel\/bank.*\[FILE_NOT_FOUND\]/);
  }, 120_000);
});
