#!/usr/bin/env bash
# The lent-GPU side of scripts/train_lm_checker.py, one call per payload part, to one warm machine:
#
#   scripts/train_lm_checker_gpu.sh PART [MINUTES [WAIT]]    (carry: .whl and .lmgpu/pPART)
#   scripts/train_lm_checker_gpu.sh collect                  (a later call: wait for the runs, return them)
#
# Each call installs the gguf wheel (.whl, `pip download gguf` here), copies its part into /tmp/lmpay;
# once every part is there (the last part holds payload.json), it trains two variants side by side on
# the one GPU for MINUTES each (default 7): `a` on the payload's base rows (recipe v1, the shipped
# adapter's data) and `b` on all of them (v2's extra rows too). The runs write to /tmp/lmres, in a
# session of their own so that they outlive the call: the call waits WAIT seconds at most (default 570)
# and copies what is there to $OUT (8 files: the most one call returns); `collect` waits for the rest.
set -euo pipefail
part=${1:?usage: train_lm_checker_gpu.sh PART [MINUTES [WAIT]] | collect}
minutes=${2:-7}
wait_s=${3:-570}
res=/tmp/lmres

collect() {  # until both runs have ended (or $1 seconds), then their files to $OUT
  local t=0
  while [ "$t" -lt "$1" ] && pgrep -f "train_lm_checker.py train" >/dev/null; do sleep 5; t=$((t + 5)); done
  cp -r "$res/." "$OUT/" 2>/dev/null || true
  tail -n 4 "$res"/a.log "$res"/b.log || true
}
if [ "$part" = collect ]; then collect "$wait_s"; exit 0; fi

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
mkdir -p /tmp/lmpay "$res"
cp -rL ".lmgpu/p$part/." /tmp/lmpay/
ls -la /tmp/lmpay
[ -f /tmp/lmpay/payload.json ] || { echo "part $part copied; payload.json comes with the last part"; exit 0; }
want=$(python3 -c 'import json; print(json.load(open("/tmp/lmpay/payload.json"))["parts"])')
for k in $(seq 1 "$want"); do
  [ -f "/tmp/lmpay/weights$k.npz" ] || { echo "weights$k.npz missing: send part $k first"; exit 3; }
done
# the code the runs read, copied out of the checkout (a later call replaces it; lmcheck.py is read by path)
rm -rf /tmp/lmrepo && mkdir -p /tmp/lmrepo && cp -r scripts citegraph /tmp/lmrepo/
nvidia-smi --query-gpu=name,memory.used --format=csv
for v in a:base b:all; do
  name=${v%%:*}
  setsid nohup python3 /tmp/lmrepo/scripts/train_lm_checker.py train --payload /tmp/lmpay --out "$res/$name" \
    --device cuda --parts "${v#*:}" --epochs 3 --time-budget "$minutes" --workers 7 >"$res/$name.log" 2>&1 </dev/null &
done
sleep 5
collect "$wait_s"
