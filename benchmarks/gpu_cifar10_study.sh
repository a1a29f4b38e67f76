#!/usr/bin/env bash
# The deciding CIFAR-10 study of issue 35 on one GPU, in one call of at most BUDGET seconds.
#
# benchmarks/cifar10_study.py --budget $PROTOCOL (default deciding-augmented: the protocol is declared there), its parts side by
# side on one GPU: the tuning (6 jobs at a time) beside the map, then, with the time left, the
# transfers to VGG-16 and ResNet-18 (stam tune --transfer).  The job stores are packed into OUT/stores.tar.gz every 40 s, so
# that a run cut short resumes: unpack the archive into STUDY and run this again.
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
study=($PY benchmarks/cifar10_study.py --budget "${PROTOCOL:-deciding-augmented}" --data-dir "$DATA" --out "$W")
(while sleep 40; do snap; done) &
SNAP=$!
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$W/device.txt" 2>&1
timeout $(($(left) - 45)) "${study[@]}" --parts tune --workers "${TUNE_WORKERS:-6}" > "$W/tune.log" 2>&1 &
TUNE=$!
timeout $(($(left) - 45)) "${study[@]}" --parts map --workers 1 > "$W/map.log" 2>&1 &
MAP=$!
wait $TUNE; echo "tune exit $? at $(( $(date +%s) - t0 )) s" >> "$W/times.txt"
wait $MAP; echo "map exit $? at $(( $(date +%s) - t0 )) s" >> "$W/times.txt"
if [ -f "$W/tune/tune-cifar10.json" ] && [ "$(left)" -gt 120 ]; then
  timeout $(($(left) - 30)) "${study[@]}" --parts transfer --workers "${TUNE_WORKERS:-6}" > "$W/transfer.log" 2>&1
  echo "transfer exit $? at $(( $(date +%s) - t0 )) s" >> "$W/times.txt"
fi
kill $SNAP 2>/dev/null
snap
