#!/usr/bin/env bash
# The larger backbone corpus (issue 14), one command from a clean clone:
#
#   bash scripts/backbone/corpus/build.sh OUT_DIR [build.ts options...]
#
# 1. fetch.sh: the pinned Debian packages of packages.txt -> OUT_DIR/cache (apt-get download +
#    dpkg-deb -x; nothing is installed system-wide). Skipped with CORPUS_SKIP_FETCH=1 (cache present).
# 2. build.ts: extraction, filters, dedup, SWE-Skills-Bench screen, shards and stats -> OUT_DIR/out.
#
# Needs: Debian/Ubuntu with apt-get + dpkg-deb and a Debian bookworm mirror (`apt-get update` done;
# the lent GPU machines reach no network, so fetch here and carry OUT_DIR/cache, or build here);
# node >= 20 with the repo's npm dependencies and its native addon built (npm ci; npm run build:native),
# models/gavel-mini.gguf (the tokenizer) and ../shared/data. OUT_DIR must be outside the repository.
# The CPU-heavy step runs on one core (nice 10).
set -euo pipefail
OUT="${1:?usage: build.sh OUT_DIR [build.ts options]}"
shift
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
case "$OUT/" in "$REPO"/*) echo "build.sh: OUT_DIR must be outside the repository" >&2; exit 1 ;; esac

start=$(date +%s)
if [ "${CORPUS_SKIP_FETCH:-0}" != 1 ]; then
  bash "$HERE/fetch.sh" "$OUT/cache"
fi
fetched=$(date +%s)
cd "$REPO"
nice -n 10 npx vite-node "$HERE/build.ts" -- --cache "$OUT/cache" --out "$OUT/out" "$@"
end=$(date +%s)
echo "build.sh: fetch $((fetched - start)) s, build $((end - fetched)) s -> $OUT/out"
