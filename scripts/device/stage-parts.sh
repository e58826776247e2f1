#!/usr/bin/env bash
# On the GPU machine: stages the package from a CUDA build that an earlier `PACK_LIBS=1 gpu-build.sh`
# sent back (three xz pieces of ≤ 15 MiB), in calls small enough to ride beside the whole tracked tree
# (the model included, so nobody's tree has to lose it): each call carries one folder.
#   here:   bash scripts/device/stage-parts.sh pack <folder with cuda-build.tar.xz.part-*>
#   call 0: carry [".device/node.xz"]  bash scripts/device/stage-parts.sh node
#   call 1: carry [".device/s1"]       bash scripts/device/stage-parts.sh 1   (piece aa, dist, runtime packages)
#   call 2: carry [".device/s2"]       bash scripts/device/stage-parts.sh 2   (piece ab)
#   call 3: carry [".device/s3"]       bash scripts/device/stage-parts.sh 3   (piece ac; unpacks; a CUDA glance check)
# The calls must follow each other within the machine's idle release (30 s). Then train-full.sh and
# full-eval.sh run as after gpu-build.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
G="$HOME/gavel"
mkdir -p "$HOME/bin" "$HOME/parts" "$G"
export PATH="$HOME/bin:$PATH"
case "${1:-}" in
  pack)
    P=${2:?folder of the pieces}
    rm -rf .device/s1 .device/s2 .device/s3 && mkdir -p .device/s1 .device/s2 .device/s3
    cp "$P"/cuda-build.tar.xz.part-aa .device/s1/
    cp -r .device/run/dist .device/run/node_modules .device/run/cpu-ref.json .device/run/stories.gguf .device/s1/
    cp "$P"/cuda-build.tar.xz.part-ab .device/s2/
    cp "$P"/cuda-build.tar.xz.part-ac .device/s3/
    du -sh .device/s1 .device/s2 .device/s3
    ;;
  node)
    [ -x "$HOME/bin/node" ] || xz -dc .device/node.xz > "$HOME/bin/node"
    chmod +x "$HOME/bin/node" && node --version
    ;;
  1)
    S=.device/s1
    cp $S/cuda-build.tar.xz.part-* "$HOME/parts/"
    bash scripts/device/gpu-stage.sh package $S
    ;;
  2) cp .device/s2/cuda-build.tar.xz.part-* "$HOME/parts/" ;;
  3)
    cp .device/s3/cuda-build.tar.xz.part-* "$HOME/parts/"
    bash scripts/device/gpu-stage.sh unpack
    cd "$G"
    export LD_LIBRARY_PATH="$HOME/gavel-cuda/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    GAVEL_ADDON="$HOME/gavel-cuda/gavel.node" node scripts/device/glance-twins.mjs --scale 2000,100,256,500 | tail -3
    ;;
  *) echo "usage: stage-parts.sh pack DIR | node | 1 | 2 | 3"; exit 2 ;;
esac
