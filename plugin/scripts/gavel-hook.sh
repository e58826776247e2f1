#!/bin/sh
# The plugin's UserPromptSubmit hook: `gavel hook claude-code` of the project's own install
# (node_modules/.bin/gavel under CLAUDE_PROJECT_DIR), else of a gavel on PATH. Without either it says
# so in one line on stderr and exits 0: a hook must never block the user's prompt (exit 2 would).
project="${CLAUDE_PROJECT_DIR:-$PWD}"
if [ -x "$project/node_modules/.bin/gavel" ]; then
  exec "$project/node_modules/.bin/gavel" hook claude-code "$@"
fi
if command -v gavel >/dev/null 2>&1; then
  exec gavel hook claude-code "$@"
fi
cat >/dev/null
echo "gavel hook: gavel-router is installed neither in $project (npm install gavel-router) nor on PATH; nothing added to the prompt" >&2
exit 0
