#!/usr/bin/env bash
# Runs ON the GPU machine, in the repo root, with .device/backbone/pack carried:
#   bash scripts/backbone/device-run.sh [--minutes 6] [train.py flags...]
# train (time budget) -> evaluate -> export Q8_0 GGUF -> $OUT: gavel-mini.gguf.part-00, -01 (15 MiB
# pieces), gavel-mini.gguf.sha256, metrics.json, train.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?OUT must be set (the device tool sets it)}"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 GGUF_PY="$PWD/.device/backbone/pack/gguf-py"
W=/tmp/gavel-mini
rm -rf "$W" && mkdir -p "$W"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee "$OUT/train.log"
python3 scripts/backbone/train.py --data .device/backbone/pack/data --out "$W" "$@" 2>&1 | tee -a "$OUT/train.log"
rc=${PIPESTATUS[0]}
[[ -f "$W/metrics.json" ]] && cp "$W/metrics.json" "$OUT/"
if [[ -f "$W/gavel-mini.gguf" ]]; then
  (cd "$W" && sha256sum gavel-mini.gguf > "$OUT/gavel-mini.gguf.sha256")
  split -b 15M -d "$W/gavel-mini.gguf" "$OUT/gavel-mini.gguf.part-"
fi
ls -la "$OUT"
exit "$rc"
