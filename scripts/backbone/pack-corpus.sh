#!/usr/bin/env bash
# Issue 14: the larger corpus -> xz pieces for the GPU machine (pack-corpus.ts says what and how).
#   bash scripts/backbone/pack-corpus.sh [pack-corpus.ts options: --corpus DIR --out DIR --max-tokens T
#                                          --chat-copies R --slice N --verify N …]
#   bash scripts/backbone/pack-corpus.sh --tools-only [--out DIR]      (step 3 alone)
# 1. prepare.ts --kinds bc --lens (the (b) render and (c) pair documents of the training skills, and the
#    held-out val*.bin, as gavel-mini's) -> .cache/corpus-pack/chat (kept; PACK_REDO_CHAT=1 redoes it);
# 2. pack-corpus.ts: tokenize, shuffle, segment, xz, split -> OUT/c1, c2, … + OUT/manifest.json;
# 3. OUT/tools: gguf-py and the SPM vocabulary (export.py's needs on the GPU machine), tools.tar.xz +
#    SHA256SUMS; carried beside c1.
# OUT defaults to .device/corpus (git-ignored). One core, nice 10. Needs the repo's node_modules and native
# addon, models/gavel-mini.gguf (the tokenizer), ../shared/data, the built corpus
# (scripts/backbone/corpus/build.sh) and build/llama.cpp (or GAVEL_LLAMA_DIR) for gguf-py.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUTDIR=.device/corpus
tools_only=0
prev=""
for x in "$@"; do
  [[ $prev == --out ]] && OUTDIR=$x
  [[ $x == --tools-only ]] && tools_only=1
  prev=$x
done
LL=${GAVEL_LLAMA_DIR:-build/llama.cpp}
[[ -f $LL/gguf-py/gguf/__init__.py && -f $LL/models/ggml-vocab-llama-spm.gguf ]] ||
  { echo "no gguf-py / vocabulary under $LL (set GAVEL_LLAMA_DIR)" >&2; exit 1; }

if [[ $tools_only == 0 ]]; then
  CHAT=${PACK_CHAT:-.cache/corpus-pack/chat}   # PACK_CHAT_LIMIT=N: the first N skills only (tests)
  mkdir -p .cache
  npx esbuild scripts/backbone/prepare.ts --bundle --platform=node --format=esm --packages=external \
    --outfile=.cache/prepare.mjs --log-level=warning
  npx esbuild scripts/backbone/pack-corpus.ts --bundle --platform=node --format=esm --packages=external \
    --outfile=.cache/pack-corpus.mjs --log-level=warning
  if [[ "${PACK_REDO_CHAT:-0}" == 1 || ! -f $CHAT/train.lens ]]; then
    mkdir -p "$CHAT"
    nice -n 10 node .cache/prepare.mjs --kinds bc --lens --tokenizer models/gavel-mini.gguf --out "$CHAT" \
      ${PACK_CHAT_LIMIT:+--limit $PACK_CHAT_LIMIT} > "$CHAT.log" 2>&1 || { tail -20 "$CHAT.log"; exit 1; }
    grep -E '^(skills|excluded|train skills)' "$CHAT.log"
  fi
  nice -n 10 node --max-old-space-size=8192 .cache/pack-corpus.mjs --chat "$CHAT" "$@"
fi

T=$OUTDIR/tools
tmp=$(mktemp -d)
mkdir -p "$tmp/gguf-py"
cp -r "$LL/gguf-py/gguf" "$tmp/gguf-py/"
find "$tmp/gguf-py" -name __pycache__ -prune -exec rm -rf {} +
cp "$LL/models/ggml-vocab-llama-spm.gguf" "$tmp/"
rm -rf "$T" && mkdir -p "$T"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$tmp" -cf - . | xz -9 -c > "$T/tools.tar.xz"
rm -rf "$tmp"
(cd "$T" && sha256sum tools.tar.xz > SHA256SUMS)

du -sb "$OUTDIR"/*/ | awk '{printf "%8.2f MiB  %s\n", $1/1048576, $2}'
# what one device call sends besides a group: the lead's tracked + untracked-not-ignored tree
tree=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } | xargs -0 du -cb 2>/dev/null | awk '/total$/{s+=$1} END{print s}')
awk -v t="$tree" 'BEGIN{printf "this tree: %.2f MiB (a call carries at most 64 MiB in all: slim the tree first, docs/BACKBONE.md)\n", t/1048576}'
