#!/usr/bin/env bash
# Fills the git-ignored .device/backbone/pack (the one folder the device call carries): the token streams
# (prepare.ts; run it first, or pass --prepare), a copy of the bundled gguf-py and the SPM vocabulary.
# Prints the sizes: pack + the tracked/untracked tree must stay under the device call's 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/../.."
P=.device/backbone/pack
if [[ "${1:-}" == "--prepare" ]]; then
  [[ -f .device/backbone/test/tiny-q8_0.gguf ]] || python3 scripts/backbone/selftest.py
  npx esbuild scripts/backbone/prepare.ts --bundle --platform=node --format=esm --packages=external \
    --outfile=.cache/prepare.mjs --log-level=warning
  node .cache/prepare.mjs --out "$P/data"
fi
for f in train.bin val.bin val_chat.bin val_verdict.bin meta.json; do
  [[ -f "$P/data/$f" ]] || { echo "missing $P/data/$f: run prepare.ts (or pack.sh --prepare)" >&2; exit 1; }
done
rm -rf "$P/gguf-py"
mkdir -p "$P/gguf-py"
cp -r build/llama.cpp/gguf-py/gguf "$P/gguf-py/"
find "$P/gguf-py" -name __pycache__ -prune -exec rm -rf {} +
cp build/llama.cpp/models/ggml-vocab-llama-spm.gguf "$P/"
du -sb "$P"/* | awk '{printf "%8.2f MiB  %s\n", $1/1048576, $2}'
tree=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } | xargs -0 du -cb 2>/dev/null | awk '/total$/{s+=$1} END{print s}')
pack=$(du -sb "$P" | cut -f1)
awk -v t="$tree" -v p="$pack" 'BEGIN{printf "tree %.2f MiB + pack %.2f MiB = %.2f MiB of 64\n", t/1048576, p/1048576, (t+p)/1048576}'
