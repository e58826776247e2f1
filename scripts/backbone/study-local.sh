#!/usr/bin/env bash
# Issue 14, this machine's side of the scaling study's device calls (study-run.sh is the GPU side).
#   bash scripts/backbone/study-local.sh slim        move models/, prebuilds/ and bench/results/ out of this
#                                                    checkout (to ../.study-slim-<repo>), so that a device
#                                                    call carries a 54 MiB group beside the tree
#   bash scripts/backbone/study-local.sh restore     move them back (run it after the staging calls)
#   bash scripts/backbone/study-local.sh size [PATH…]  what a call would send: the tree + the carried paths
#   bash scripts/backbone/study-local.sh assemble NAME OUT_FILE DIR…
#                                                    NAME.gguf from the pieces that `study-run.sh fetch NAME`
#                                                    sent into the device results DIR… (any order): piece and
#                                                    file sha256, then NAME.metrics.json beside OUT_FILE,
#                                                    `gavel info` and check-gguf.ts's logits check
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
SLIM=${STUDY_SLIM_DIR:-$(dirname "$REPO")/.study-slim-$(basename "$REPO")}
MOVE=(models prebuilds bench/results)
die() { echo "study-local.sh: $*" >&2; exit 1; }
tree_bytes() { { git ls-files -z; git ls-files -z --others --exclude-standard; } | { xargs -0 du -cb 2>/dev/null || true; } | awk '/total$/{s+=$1} END{print s+0}'; }

case "${1:-}" in
slim)
  [[ -e $SLIM ]] && die "$SLIM exists: already slim? (restore first)"
  mkdir -p "$SLIM"
  for p in "${MOVE[@]}"; do
    [[ -e $p ]] || continue
    mkdir -p "$SLIM/$(dirname "$p")"
    mv "$p" "$SLIM/$p"
    echo "moved $p -> $SLIM/$p"
  done
  awk -v t="$(tree_bytes)" 'BEGIN{printf "tree now %.2f MiB\n", t/1048576}'
  ;;
restore)
  [[ -d $SLIM ]] || die "nothing to restore ($SLIM missing)"
  for p in "${MOVE[@]}"; do
    [[ -e $SLIM/$p ]] || continue
    [[ -e $p ]] && die "$p exists here and in $SLIM: resolve by hand"
    mkdir -p "$(dirname "$p")"
    mv "$SLIM/$p" "$p"
    echo "restored $p"
  done
  find "$SLIM" -depth -type d -empty -delete
  [[ -e $SLIM ]] && die "$SLIM still holds files"
  git status --short | head -5
  ;;
size)
  shift
  t=$(tree_bytes)
  c=0
  for p in "$@"; do c=$((c + $(du -sb "$p" | cut -f1))); done
  awk -v t="$t" -v c="$c" 'BEGIN{printf "tree %.2f MiB + carried %.2f MiB = %.2f MiB (limit 64)\n", t/1048576, c/1048576, (t+c)/1048576; exit (t+c > 64*1048576)}'
  ;;
assemble)
  NAME=${2:?assemble NAME OUT_FILE DIR…}
  DST=${3:?assemble NAME OUT_FILE DIR…}
  shift 3
  (($#)) || die "no device result folders given"
  sums=$(find "$@" -name "$NAME.sha256" | head -1)
  [[ -n $sums ]] || die "no $NAME.sha256 under $*"
  tmp=$(mktemp -d)
  want=$(grep -c "  $NAME.gguf.xz.part-" "$sums")
  for part in $(grep -o "$NAME.gguf.xz.part-[0-9]*" "$sums"); do
    f=$(find "$@" -name "$part" | head -1)
    [[ -n $f ]] || die "piece $part missing (fetch it: study-run.sh fetch $NAME K)"
    h=$(sha256sum "$f" | cut -d' ' -f1)
    grep -q "^$h  $part\$" "$sums" || die "$part: sha256 $h does not match $sums"
    cp "$f" "$tmp/"
  done
  mkdir -p "$(dirname "$DST")"
  cat "$tmp/$NAME.gguf.xz".part-* | xz -dc > "$DST.tmp"
  rm -rf "$tmp"
  h=$(sha256sum "$DST.tmp" | cut -d' ' -f1)
  grep -q "^$h  $NAME.gguf\$" "$sums" || { rm -f "$DST.tmp"; die "$NAME.gguf: sha256 $h does not match"; }
  mv "$DST.tmp" "$DST"
  echo "$DST: $want pieces, $(stat -c %s "$DST") bytes, sha256 $h"
  m=$(find "$@" -name "$NAME.metrics.json" | head -1)
  [[ -n $m ]] && cp "$m" "${DST%.gguf}.metrics.json" && echo "metrics: ${DST%.gguf}.metrics.json"
  l=$(find "$@" -name "$NAME.train.log" | head -1)
  [[ -n $l ]] && cp "$l" "${DST%.gguf}.train.log"
  if [[ -f dist/cli/gavel.js ]]; then node dist/cli/gavel.js info "$DST"; fi
  npx esbuild scripts/backbone/check-gguf.ts --bundle --platform=node --format=esm --packages=external \
    --outfile=.cache/check-gguf.mjs --log-level=warning
  node .cache/check-gguf.mjs model "$DST"
  ;;
*)
  sed -n '2,14p' "$0"
  exit 2
  ;;
esac
