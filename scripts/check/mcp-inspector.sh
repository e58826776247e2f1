#!/usr/bin/env bash
# `gavel mcp` under the MCP Inspector's CLI (@modelcontextprotocol/inspector, `--cli` mode), over stdio,
# over stdio through a running `gavel serve`, and over streamable HTTP (`gavel mcp --port`).
#
# The Inspector (~111 MB, 120 packages) is not a devDependency: this script installs it into a temp folder
# from the npm registry, installs examples/skills into a temp bank with the embedded gavel-mini pair
# (context 2048), and runs one Inspector call per method: initialize, tools/list (and --strict),
# tools/call of each tool (a good call, an unknown skill, a bad argument), resources/list,
# resources/templates/list, resources/read (a skill, a traversal attempt), prompts/list, prompts/get (a
# skill, with a task, a traversal attempt), and, over HTTP, a call without the token and one with a wrong
# token. Each answer is checked (tool names, output schemas, the routed skill, the body read against
# load_skill's, the error codes, the Inspector's exit code); the script prints a line a check and exits 1
# if any answer was wrong.
#
#   npx tsup && bash scripts/check/mcp-inspector.sh            # INSPECTOR_VERSION=2.12.0 by default
#   INSPECTOR_VERSION=latest bash scripts/check/mcp-inspector.sh
#
# Needs node, npm and the registry; nothing is written in the repository. Record:
# bench/results/2026-11-29-cpu-mcp-inspector/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VERSION="${INSPECTOR_VERSION:-2.12.0}"
GAVEL="$ROOT/dist/cli/gavel.js"
[ -f "$GAVEL" ] || { echo "mcp-inspector: $GAVEL is missing (npx tsup first)" >&2; exit 2; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/gavel-inspector-XXXXXX")"
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "mcp-inspector check: $(date -u +%FT%TZ), node $(node --version), npm $(npm --version), $(nproc) × $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //' || uname -m)"

# 1. The Inspector, in its own folder (its postinstall is a no-op outside a source checkout).
mkdir -p "$WORK/inspector"
(cd "$WORK/inspector" && npm init -y >/dev/null && npm install --no-audit --no-fund --loglevel=error "@modelcontextprotocol/inspector@$VERSION" >/dev/null)
INSPECTOR="$WORK/inspector/node_modules/.bin/mcp-inspector"
echo "inspector: @modelcontextprotocol/inspector $("$INSPECTOR" --cli --version 2>/dev/null || node -p "require('$WORK/inspector/node_modules/@modelcontextprotocol/inspector/package.json').version") ($(du -sh "$WORK/inspector/node_modules" | cut -f1) installed)"

# 2. A bank of the 24 example skills with the embedded model.
BANK="$WORK/project/.gavel/bank"
mkdir -p "$WORK/project"
node "$GAVEL" install "$ROOT/examples/skills" --bank "$BANK" --context 2048 >/dev/null 2>&1
echo "bank: examples/skills, $(ls "$ROOT/examples/skills" | wc -l) skills, gavel-mini, context 2048"

FAILS=0
OUT="$WORK/out.json"
ERR="$WORK/err.txt"
TARGET=()   # the server, as the Inspector takes it (a command, or a URL and its flags)

# run <label> <expected exit> <JS condition over r (stdout as JSON), e (stderr text)> -- <Inspector args…>
run() {
  local label="$1" want="$2" cond="$3"; shift 4
  local rc=0
  "$INSPECTOR" --cli --format json -q "${TARGET[@]}" "$@" >"$OUT" 2>"$ERR" || rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL [$MODE] $label: exit $rc, expected $want"; head -c 600 "$OUT"; echo; head -c 600 "$ERR"; echo
    FAILS=$((FAILS + 1)); return 0
  fi
  if OUT="$OUT" ERR="$ERR" COND="$cond" node -e '
    const fs = require("fs");
    const text = fs.readFileSync(process.env.OUT, "utf8");
    const r = text.trim() ? JSON.parse(text) : null;
    const e = fs.readFileSync(process.env.ERR, "utf8");
    const ok = new Function("r", "e", "return (" + process.env.COND + ");")(r, e);
    process.exit(ok ? 0 : 1);'; then
    echo "ok   [$MODE] $label (exit $rc)"
  else
    echo "FAIL [$MODE] $label: wrong answer"; head -c 800 "$OUT"; echo; head -c 400 "$ERR"; echo
    FAILS=$((FAILS + 1))
  fi
}

TASK="Turn the product photos into WebP thumbnails"
BODY_FILE="$WORK/body.txt"

checks() {
  run "initialize: server name, tools, resources and prompts capabilities" 0 \
    'r.result.serverInfo.name === "gavel-router" && r.result.capabilities.tools && r.result.capabilities.resources && r.result.capabilities.prompts && /search_skills/.test(r.result.instructions)' -- --method initialize
  run "tools/list: search_skills and load_skill, read-only, each with an outputSchema" 0 \
    'JSON.stringify(r.result.tools.map(t => t.name).sort()) === "[\"load_skill\",\"search_skills\"]" && r.result.tools.every(t => t.outputSchema && t.outputSchema.type === "object" && t.annotations.readOnlyHint === true && t.annotations.openWorldHint === false)' -- --method tools/list
  run "tools/list --strict: no schema portability error" 0 'true' -- --method tools/list --strict
  run "tools/call search_skills: routes the WebP task to image-resizing, k=3" 0 \
    'r.result.isError !== true && r.result.structuredContent.chosen === "image-resizing" && r.result.structuredContent.skills.length === 3 && r.result.structuredContent.skills[0].id === "image-resizing" && r.result.content[0].text.startsWith("Best skill: image-resizing.")' \
    -- --method tools/call --tool-name search_skills --tool-arg "task=$TASK" k=3
  run "tools/call load_skill: the installed record" 0 \
    'r.result.structuredContent.name === "image-resizing" && r.result.structuredContent.body.length > 100 && /^[0-9a-f]{64}$/.test(r.result.structuredContent.contentHash) && r.result.content[0].text.startsWith("# Skill: image-resizing")' \
    -- --method tools/call --tool-name load_skill --tool-arg skill=image-resizing
  node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).result.structuredContent.body)' "$OUT" >"$BODY_FILE"
  run "tools/call load_skill of an unknown skill: isError, SKILL_NOT_FOUND (Inspector exit 5)" 5 \
    'r.result.isError === true && /\[SKILL_NOT_FOUND\]$/.test(r.result.content[0].text)' \
    -- --method tools/call --tool-name load_skill --tool-arg skill=no-such-skill
  run "tools/call search_skills with k=0: isError, -32602 input validation (Inspector exit 5)" 5 \
    'r.result.isError === true && /-32602/.test(r.result.content[0].text)' \
    -- --method tools/call --tool-name search_skills --tool-arg task=x k=0
  run "resources/list: 24 skill:// resources, text/markdown" 0 \
    'r.result.resources.length === 24 && r.result.resources.every(x => x.uri === "skill://" + encodeURIComponent(x.name) && x.mimeType === "text/markdown" && x.description) && r.result.resources.some(x => x.uri === "skill://image-resizing")' \
    -- --method resources/list
  run "resources/templates/list: skill://{id}" 0 \
    'r.result.resourceTemplates.length === 1 && r.result.resourceTemplates[0].uriTemplate === "skill://{id}"' -- --method resources/templates/list
  run "resources/read skill://image-resizing: the body load_skill gave" 0 \
    'r.result.contents.length === 1 && r.result.contents[0].mimeType === "text/markdown" && r.result.contents[0].text === require("fs").readFileSync(process.env.BODY_FILE, "utf8")' \
    -- --method resources/read --uri skill://image-resizing
  run "resources/read skill://..%2F..%2Fetc: -32002 SKILL_NOT_FOUND (Inspector exit 1)" 1 \
    '/-32002/.test(e) && /SKILL_NOT_FOUND/.test(e)' -- --method resources/read --uri 'skill://..%2F..%2Fetc'
  run "prompts/list: 24 skills as prompts, each with an optional task argument" 0 \
    'r.result.prompts.length === 24 && r.result.prompts.every(p => p.description && p.arguments.length === 1 && p.arguments[0].name === "task" && !p.arguments[0].required) && r.result.prompts.some(p => p.name === "image-resizing")' \
    -- --method prompts/list
  run "prompts/get image-resizing: the body load_skill gave" 0 \
    'r.result.messages.length === 1 && r.result.messages[0].role === "user" && r.result.messages[0].content.text === require("fs").readFileSync(process.env.BODY_FILE, "utf8")' \
    -- --method prompts/get --prompt-name image-resizing
  run "prompts/get image-resizing with a task: the body, then the task" 0 \
    'r.result.messages.length === 2 && r.result.messages[1].content.text === "Make WebP thumbnails"' \
    -- --method prompts/get --prompt-name image-resizing --prompt-args "task=Make WebP thumbnails"
  run "prompts/get ../../etc/passwd: -32602 SKILL_NOT_FOUND (Inspector exit 1)" 1 \
    '/-32602/.test(e) && /SKILL_NOT_FOUND/.test(e)' -- --method prompts/get --prompt-name ../../etc/passwd
}
export BODY_FILE

# 3a. stdio: the Inspector spawns `gavel mcp`, which loads the model itself (no server runs).
MODE=stdio
TARGET=(node "$GAVEL" mcp --bank "$BANK" --context 2048)
checks

# 3b. stdio through a running `gavel serve` (the MCP process loads no model).
MODE=stdio+serve
node "$GAVEL" serve --bank "$BANK" --context 2048 >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
for _ in $(seq 600); do grep -q "listening on" "$WORK/serve.out" 2>/dev/null && break; sleep 0.1; done
grep -q "listening on" "$WORK/serve.out" || { echo "FAIL: gavel serve did not listen"; cat "$WORK/serve.err"; exit 1; }
# -q hides the server's stderr: ask once without it
"$INSPECTOR" --cli --format json "${TARGET[@]}" --method tools/list >/dev/null 2>"$ERR" || true
if grep -q "through its running gavel serve" "$ERR"; then
  echo "ok   [$MODE] gavel mcp answers through the running gavel serve (its stderr says so)"
else
  echo "FAIL [$MODE] gavel mcp did not say it answers through gavel serve"; FAILS=$((FAILS + 1))
fi
checks
kill "${PIDS[-1]}" 2>/dev/null || true; wait "${PIDS[-1]}" 2>/dev/null || true

# 3c. streamable HTTP: `gavel mcp --port 0`, the URL and token from <bank>/mcp.http.json.
MODE=http
node "$GAVEL" mcp --bank "$BANK" --context 2048 --port 0 2>"$WORK/http.err" &
PIDS+=($!)
for _ in $(seq 600); do [ -s "$BANK/mcp.http.json" ] && break; sleep 0.1; done
[ -s "$BANK/mcp.http.json" ] || { echo "FAIL: gavel mcp --port wrote no mcp.http.json"; cat "$WORK/http.err"; exit 1; }
URL="$(node -p "require('$BANK/mcp.http.json').url")"
TOKEN="$(node -p "require('$BANK/mcp.http.json').token")"
echo "http: $URL"
TARGET=("$URL" --transport http --header "Authorization: Bearer $TOKEN")
checks
TARGET=("$URL" --transport http --stored-auth-only)
run "no bearer token: 401, auth_required (Inspector exit 3)" 3 '/auth_required/.test(e) && /missing or wrong bearer token/.test(e)' -- --method tools/list
TARGET=("$URL" --transport http --stored-auth-only --header "Authorization: Bearer wrong-token")
run "a wrong bearer token: 401, auth_required (Inspector exit 3)" 3 '/auth_required/.test(e)' -- --method tools/list

if [ "$FAILS" -gt 0 ]; then echo "mcp-inspector: $FAILS check(s) failed"; exit 1; fi
echo "mcp-inspector: all checks passed"
