set -x
cd "/root/gavel"
export GAVEL_LOG=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
lscpu | grep -E "Model name|^CPU\(s\)"; free -g | head -2
for s in 1000000,64 100000,200; do
  GLANCE_KERNELS=default node scripts/device/glance-twins.mjs --timings-only --scale $s,256,20/200/1300
done
for s in 100000,200 1000000,64; do
  GAVEL_GLANCE_DEVICE=cpu node bench/kivf.bench.mjs synth --skills ${s%,*} --keys ${s#*,} --nq 200,20 --tasks 3 --reps 3 \
    --nprobe d --prune on --i8 on --keytype f16 --noise-pool 65536
done
echo chain-done
