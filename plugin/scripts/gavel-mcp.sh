#!/bin/sh
# The plugin's MCP server: `gavel mcp` (stdio) of the project's own install (node_modules/.bin/gavel
# under CLAUDE_PROJECT_DIR, else the working folder, where Claude Code starts it), else of a gavel on
# PATH. It serves the project's bank, .gavel/bank (GAVEL_BANK overrides it).
project="${CLAUDE_PROJECT_DIR:-$PWD}"
if [ -x "$project/node_modules/.bin/gavel" ]; then
  cd "$project" && exec "$project/node_modules/.bin/gavel" mcp "$@"
fi
if command -v gavel >/dev/null 2>&1; then
  cd "$project" && exec gavel mcp "$@"
fi
echo "gavel mcp: gavel-router is installed neither in $project (npm install gavel-router @modelcontextprotocol/sdk zod) nor on PATH" >&2
exit 1
