#!/usr/bin/env bash
# The deciding CIFAR-10 study of issue 35 on one GPU, in one call of at most BUDGET seconds.
#
# The same commands as the CPU study (benchmarks/cifar10_study.py --budget deciding), run side by side
# on one GPU: the equal-budget tuning of VGG-11 at width 1/8 (30 epochs, 16 Sobol trials per algorithm
# with successive halving by 3, the warm-up-cosine step schedule for every algorithm, the standard
# recipe for Float, 5 fresh paired seeds, the paper's rows), the STAM map (gamma*lambda from 0.3 to 300
# at lambda = 1, the step 1/beta in 0.1, 0.01, 0.001, 2 seeds, 10 epochs), and, with the time left,
# VGG-16 and ResNet-18 at width 1/8 with the tuned settings transferred (3 seeds, 30 epochs).
# The job stores are packed into OUT/stores.tar.gz every 40 s, so that a run cut short resumes
# (unpack into the study folder and run the same commands again).
#
#   OUT=dir BUDGET=540 bash benchmarks/gpu_cifar10_study.sh     (DATA: the JPEG copy, default .gpu-data)
set -u
: "${OUT:?set OUT to the output folder}"
BUDGET=${BUDGET:-540}
DATA=${DATA:-.gpu-data/cifar10-jpeg.tar.gz}
W=${STUDY:-/tmp/study}
PY=${PY:-python3}
mkdir -p "$W" "$OUT"
t0=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - t0))); }
snap() { tar czf "$OUT/stores.tmp" -C "$W" . 2>/dev/null && mv "$OUT/stores.tmp" "$OUT/stores.tar.gz"; }
common=(--dataset cifar10 --data-dir "$DATA" --width 0.125 --no-progress --force)
(while sleep 40; do snap; done) &
SNAP=$!
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$W/device.txt" 2>&1
timeout $(($(left) - 45)) $PY -m stam tune "${common[@]}" --epochs 30 --trials 16 --halving 3 --n-seeds 5 \
  --schedule warmup-cosine --recipe standard --workers "${TUNE_WORKERS:-6}" --out "$W/tune" > "$W/tune.log" 2>&1 &
TUNE=$!
timeout $(($(left) - 45)) $PY -m stam map "${common[@]}" --epochs 10 --n-seeds 2 --gamma-range 0.3:300:7 --lams 1 \
  --betas 10,100,1000 --region benchmarks/results/lyapunov_region.json --workers 1 --out "$W/map" > "$W/map.log" 2>&1 &
MAP=$!
wait $TUNE; echo "tune exit $? at $(( $(date +%s) - t0 )) s" >> "$W/times.txt"
wait $MAP; echo "map exit $? at $(( $(date +%s) - t0 )) s" >> "$W/times.txt"
NLEFT=2
for model in vgg16 resnet18; do
  if [ -f "$W/tune/tune-cifar10.json" ] && [ "$(left)" -gt 120 ]; then
    $PY benchmarks/gpu_width1.py --out "$W/transfer-$model" --data "$DATA" --settings "$W/tune/tune-cifar10.json" \
      --model "$model" --width 0.125 --epochs 30 --seeds 3 --budget-s $((($(left) - 60) / ${NLEFT:-1})) > "$W/transfer-$model.log" 2>&1
    rc=$?; NLEFT=1
    echo "transfer $model exit $rc at $(( $(date +%s) - t0 )) s" >> "$W/times.txt"
  fi
done
kill $SNAP 2>/dev/null
snap
