#!/usr/bin/env bash
# The optional peers' matrix: the packed gavel-router against each major (and the lowest release) its
# peerDependencies declare, each in a scratch project outside the repository.
#
# For each row: `npm install <the packed tarball> <the peers of the row> vitest@<the repo's>` in a fresh
# folder (npm's own peer resolution, no --legacy-peer-deps), then
#   - adapters (ai-sdk, langchain, mastra): this repository's test/e2e/adapters-<x>.test.ts and its router
#     fixture, rewritten to import gavel-router from the installed package (prepare-tests.mjs), run with
#     vitest there; and a user's file (consumer-<x>.ts) type-checked with this repository's tsc
#     (strict, nodenext, skipLibCheck);
#   - mcp: `gavel mcp` under the installed SDK's client (mcp-client.mjs).
# Prints one line a row and exits 1 if any row failed.
#
#   npx tsup && bash scripts/check/peer-matrix.sh              # every row
#   bash scripts/check/peer-matrix.sh ai5-zod3 mcp-zod3         # some rows
#   bash scripts/check/peer-matrix.sh 'probe|langchain|langchain@1.0 @langchain/core@1.2'   # a row of your own
#   KEEP=1 bash scripts/check/peer-matrix.sh …                  # keep the scratch folders (their path is printed)
#
# Record: bench/results/2026-11-29-cpu-peers/. Needs node, npm and the registry.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/scripts/check/peer-matrix"
[ -f "$ROOT/dist/index.js" ] || { echo "peer-matrix: dist/ is missing (npx tsup first)" >&2; exit 2; }
VITEST="$(node -p "require('$ROOT/node_modules/vitest/package.json').version")"
TSC="$ROOT/node_modules/typescript/bin/tsc"

# name | adapter test (ai-sdk, langchain, mastra or mcp; "!" before it: a row outside the declared
# range, expected to fail, which keeps the range's floor honest) | packages to install beside the tarball
ROWS=(
  "ai5-zod3|ai-sdk|ai@5 zod@3.25.76"
  "ai5-zod4|ai-sdk|ai@5 zod@4"
  "ai5.0.0-zod3|ai-sdk|ai@5.0.0 zod@3.25.76"
  "ai5-zod4.1.8|ai-sdk|ai@5 zod@4.1.8"
  "ai6-zod3|ai-sdk|ai@6 zod@3.25.76"
  "ai6-zod4|ai-sdk|ai@6 zod@4"
  "ai7-zod3|ai-sdk|ai@7 zod@3.25.76"
  "ai7-zod4|ai-sdk|ai@7 zod@4"
  "langchain1.0.1|langchain|langchain@1.0.1 @langchain/core@1"
  "langchain1.0-core1.1.48|langchain|langchain@1.0 @langchain/core@1.1.48"
  "langchain1.0-core1.0|!langchain|langchain@1.0 @langchain/core@1.0"
  "langchain1|langchain|langchain@1 @langchain/core@1"
  "mastra1.0|mastra|@mastra/core@1.0 zod@4"
  "mastra1|mastra|@mastra/core@1 zod@4"
  "mastra1-ai7|mastra|@mastra/core@1 ai@7 zod@4"
  "mcp-zod3.25.0|!mcp|@modelcontextprotocol/sdk@1.32.2 zod@3.25.0"
  "mcp-zod3.25.76|mcp|@modelcontextprotocol/sdk@1.32.2 zod@3.25.76"
  "mcp-zod4.1.8|mcp|@modelcontextprotocol/sdk@1.32.2 zod@4.1.8"
  "mcp-zod4|mcp|@modelcontextprotocol/sdk@1 zod@4"
)

WORK="$(mktemp -d "${TMPDIR:-/tmp}/gavel-peers-XXXXXX")"
[ -n "${KEEP:-}" ] && echo "scratch: $WORK" || trap 'rm -rf "$WORK"' EXIT

echo "peer matrix: $(date -u +%FT%TZ), node $(node --version), npm $(npm --version), vitest $VITEST, typescript $(node "$TSC" --version | cut -d' ' -f2), $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
(cd "$ROOT" && npm pack --ignore-scripts --silent --pack-destination "$WORK" >/dev/null)
TARBALL="$(ls "$WORK"/gavel-router-*.tgz)"
echo "tarball: $(basename "$TARBALL") ($(du -h "$TARBALL" | cut -f1))"

# arguments: row names, or rows of one's own ("name|kind|packages")
want=()
for a in "$@"; do
  if [[ "$a" == *"|"* ]]; then ROWS+=("$a"); want+=("${a%%|*}"); else want+=("$a"); fi
done
FAILED=0
for row in "${ROWS[@]}"; do
  IFS='|' read -r name kind pkgs <<<"$row"
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " == *" $name "* ]]; then continue; fi
  outside=""
  if [[ "$kind" == "!"* ]]; then kind="${kind#!}"; outside=1; fi
  dir="$WORK/$name"
  mkdir -p "$dir"
  log="$dir/log.txt"
  echo '{"name":"peer-scratch","private":true,"type":"module"}' >"$dir/package.json"
  # shellcheck disable=SC2086
  if ! (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "$TARBALL" $pkgs "vitest@$VITEST" >"$log" 2>&1); then
    why="$(grep -m1 -E 'ERESOLVE|ERR' "$log" || tail -1 "$log")"
    if [ -n "$outside" ]; then echo "ok   $name: npm install $pkgs refused, as expected outside the declared peer range: $why"; continue; fi
    echo "FAIL $name: npm install $pkgs: $why"; FAILED=1; continue
  fi
  # the versions npm resolved (the row's packages, by name)
  resolved=""
  for p in $pkgs; do
    n="${p%@*}"; [ -z "$n" ] && n="$p"
    resolved+="$n@$(node -p "require('$dir/node_modules/$n/package.json').version") "
  done
  if [ "$kind" = mcp ]; then
    cp "$HERE/mcp-client.mjs" "$dir/"
    if [ -n "$outside" ]; then
      if out="$(cd "$dir" && node mcp-client.mjs 2>&1)"; then
        echo "NOTE $name: $resolved| passes although outside the declared peer range (the range could widen)"
      else
        echo "ok   $name: $resolved| fails, as expected outside the declared peer range: $(echo "$out" | grep -m1 -E 'Error|error' | cut -c1-200)"
      fi
    elif out="$(cd "$dir" && node mcp-client.mjs 2>&1)"; then
      echo "ok   $name: $resolved| $(echo "$out" | tail -1)"
    else
      echo "FAIL $name: $resolved| $(echo "$out" | tail -3 | tr '\n' ' ')"; FAILED=1
    fi
    continue
  fi
  ai=""
  [[ "$resolved" == ai@5.* ]] && ai="--ai 5"
  # shellcheck disable=SC2086
  node "$HERE/prepare-tests.mjs" "$dir" "$kind" $ai >/dev/null
  tests="failed"
  if (cd "$dir" && ./node_modules/.bin/vitest run >"$dir/vitest.txt" 2>&1); then tests="passed"; fi
  summary="$(grep -E '^ +Tests ' "$dir/vitest.txt" | sed 's/^ *//' | tr -s ' ' || true)"
  cp "$HERE/consumer-$kind.ts" "$dir/consumer.ts"
  cat >"$dir/tsconfig.json" <<'EOF'
{ "compilerOptions": { "strict": true, "module": "nodenext", "moduleResolution": "nodenext", "target": "es2022", "skipLibCheck": true, "noEmit": true, "types": [] }, "files": ["consumer.ts"] }
EOF
  types="ok"
  if ! (cd "$dir" && node "$TSC" -p tsconfig.json >"$dir/tsc.txt" 2>&1); then types="errors: $(head -c 300 "$dir/tsc.txt" | tr '\n' ' ')"; fi
  if [ -n "$outside" ]; then
    if [ "$tests" = passed ] && [ "$types" = ok ]; then
      echo "NOTE $name: $resolved| passes although outside the declared peer range (the range could widen)"
    else
      echo "ok   $name: $resolved| fails, as expected outside the declared peer range: $(grep -m1 -E 'Error' "$dir/vitest.txt" | sed 's/^ *//' | cut -c1-220)"
    fi
  elif [ "$tests" = passed ] && [ "$types" = ok ]; then
    echo "ok   $name: $resolved| test/e2e/adapters-$kind.test.ts $summary | types ok"
  else
    echo "FAIL $name: $resolved| test/e2e/adapters-$kind.test.ts $tests ($summary) | types $types"
    grep -E "FAIL|AssertionError|Error:" "$dir/vitest.txt" | head -8 | sed 's/^/     /'
    FAILED=1
  fi
done
exit $FAILED
