#!/usr/bin/env bash
# On the GPU machine: stages the package without building, from a CUDA build that an earlier
# `PACK_LIBS=1 gpu-build.sh` sent back (three xz pieces under 16 MiB). Two calls, because node and the
# pieces together exceed one call's 64 MiB:
#   part a, carrying .device/stage-a (node.xz, pieces aa and ab, dist, the runtime packages, the
#           CPU reference and stories260K): unpacks node and stages $HOME/gavel;
#   part b, carrying .device/stage-b (piece ac and the model, which then stays out of the tree of
#           part a, too large beside node): unpacks the build and checks the CUDA glance against its
#           CPU twin on small banks.
# Then scripts/device/full-eval.sh runs on the staged package.
set -euo pipefail
cd "$(dirname "$0")/../.."
G="$HOME/gavel"
mkdir -p "$HOME/bin" "$HOME/parts" "$G"
export PATH="$HOME/bin:$PATH"
case "${1:-}" in
  a)
    S=.device/stage-a
    [ -x "$HOME/bin/node" ] || xz -dc $S/node.xz > "$HOME/bin/node"
    chmod +x "$HOME/bin/node"
    cp $S/cuda-build.tar.xz.part-* "$HOME/parts/"
    bash "$0" package $S
    node --version
    ;;
  b)
    cp .device/stage-b/cuda-build.tar.xz.part-* "$HOME/parts/"
    bash "$0" unpack
    cd "$G"
    export LD_LIBRARY_PATH="$HOME/gavel-cuda/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    GAVEL_ADDON="$HOME/gavel-cuda/gavel.node" node scripts/device/compare.mjs check .device | tail -2
    GAVEL_ADDON="$HOME/gavel-cuda/gavel.node" node scripts/device/glance-twins.mjs --scale 2000,100,256,500 | tail -3
    ;;
  package)
    # the runnable package from a folder holding dist/, node_modules/, cpu-ref.json and stories.gguf
    S=${2:?folder}
    rm -rf "$G/dist" "$G/node_modules" "$G/scripts"
    cp -r $S/dist "$G/dist"
    cp -r $S/node_modules "$G/node_modules"
    cp -r scripts "$G/scripts"
    cp package.json CMakeLists.txt "$G/"
    mkdir -p "$G/.device" && cp $S/cpu-ref.json $S/stories.gguf "$G/.device/"
    ;;
  unpack)
    # the build from the pieces under $HOME/parts, then the addon's path for the run scripts
    mkdir -p "$HOME/gavel-cuda"
    cat "$HOME"/parts/cuda-build.tar.xz.part-* | xz -dc | tar -xf - -C "$HOME/gavel-cuda"
    # the libraries came back under their linker names; the addon asks for the sonames (libllama.so.0 …)
    # (a static build, CMakeLists.txt's, brings none)
    if [ -d "$HOME/gavel-cuda/bin" ]; then (cd "$HOME/gavel-cuda/bin" && for f in lib*.so; do if [ -e "$f" ]; then ln -sf "$f" "$f.0"; fi; done); fi
    echo "$HOME/gavel-cuda/gavel.node" > "$G/addon-path"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    ;;
  *) echo "usage: gpu-stage.sh a|b|package DIR|unpack"; exit 2 ;;
esac
