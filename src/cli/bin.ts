// The `gavel` executable (package.json "bin": dist/cli/gavel.cjs, one CommonJS file). The Claude Code
// hook runs once per prompt, and node's start is most of its time, so `gavel hook claude-code` runs
// here without node's ES module loader, the CLI's chunks or the addon: the hook (commands/hook-run.ts)
// is bundled into this file and loads node:net and little else. Every other command is the CLI of
// dist/cli/gavel.js (ESM), imported as is.
import { isClaudeCodeHook } from "./hook-argv.js";

const argv = process.argv.slice(2);
if (isClaudeCodeHook(argv)) {
  void import("./commands/hook-run.js")
    .then(({ runClaudeCodeHook }) => runClaudeCodeHook(argv.slice(2)))
    .then((code) => {
      process.exitCode = code;
    });
} else {
  // beside this file in dist/cli; a computed specifier, so the bundle imports the file instead of carrying it
  void import(new URL("./gavel.js", import.meta.url).href);
}
