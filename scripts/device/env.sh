# Sourced by the GPU machine's run scripts (full-eval.sh, layer-scan.sh) from the repository root of
# a device call: the staged package's paths and environment, and the inputs unpacked under $HOME.
#   $G  the staged package (gpu-build.sh or gpu-stage.sh)   $L  the library and tasks
#   $W  work files that later calls of a warm machine reuse  $OUT what comes back
OUT=${OUT:-/tmp/gavel-out}
G="$HOME/gavel"; L="$HOME/lib"; W="${WORK_DIR:-$HOME/work}"   # WORK_DIR: one per backbone (issue 14)
mkdir -p "$OUT" "$L" "$W"
export PATH="$HOME/bin:$PATH"
export GAVEL_ADDON=$(cat "$G/addon-path")
export LD_LIBRARY_PATH="$HOME/gavel-cuda/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# the model: tracked, carried by the tree when present; a call that left it out has stage-b's copy
if [ -f models/gavel-mini.gguf ]; then cp models/gavel-mini.gguf "$W/"; fi
[ -f "$W/gavel-mini.gguf" ] || cp .device/stage-b/gavel-mini.gguf "$W/"
# the packed library (pack-gpu.sh), unpacked once
if [ -f .device/lib/mit.jsonl.xz ] && [ ! -f "$L/mit.jsonl" ]; then xz -dc .device/lib/mit.jsonl.xz > "$L/mit.jsonl.tmp" && mv "$L/mit.jsonl.tmp" "$L/mit.jsonl"; fi
# (if, not &&: a missing last file would leave the loop's status 1, and a `set -e` script that sources
# this file would stop at once, silently; two device calls were once lost to it)
for f in golds.jsonl tasks.jsonl offdomain.jsonl also.jsonl extra.jsonl; do if [ -f ".device/lib/$f" ]; then cp ".device/lib/$f" "$L/"; fi; done
