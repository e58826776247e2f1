#!/usr/bin/env bash
# Here, after the device call: reassemble the GGUF from the folder the device tool returned and check it.
#   bash scripts/backbone/fetch.sh /work/.device/<n> models/gavel-mini.gguf
set -euo pipefail
src=${1:?usage: fetch.sh DEVICE_RESULT_DIR OUT_FILE}
dst=${2:?usage: fetch.sh DEVICE_RESULT_DIR OUT_FILE}
cd "$(dirname "$0")/../.."
# the tool may keep the $OUT layout one level down
d=$(dirname "$(find "$src" -name 'gavel-mini.gguf.part-00' | head -1)")
[[ -f "$d/gavel-mini.gguf.part-00" ]] || { echo "no gavel-mini.gguf.part-00 under $src" >&2; exit 1; }
mkdir -p "$(dirname "$dst")"
cat "$d"/gavel-mini.gguf.part-* > "$dst.tmp"
want=$(cut -d' ' -f1 "$d/gavel-mini.gguf.sha256")
got=$(sha256sum "$dst.tmp" | cut -d' ' -f1)
[[ "$want" == "$got" ]] || { echo "sha256 mismatch: $got != $want" >&2; rm -f "$dst.tmp"; exit 1; }
mv "$dst.tmp" "$dst"
echo "$dst: $(stat -c %s "$dst") bytes, sha256 $got"
[[ -f "$d/metrics.json" ]] && cp "$d/metrics.json" "${dst%.gguf}.metrics.json" && echo "metrics: ${dst%.gguf}.metrics.json"
node dist/cli/gavel.js info "$dst"
npx esbuild scripts/backbone/check-gguf.ts --bundle --platform=node --format=esm --packages=external \
  --outfile=.cache/check-gguf.mjs --log-level=warning
node .cache/check-gguf.mjs model "$dst"
