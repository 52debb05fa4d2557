#!/usr/bin/env bash
# One call on a lent GPU machine, prepared and tried on CPU first (a lease is minutes, not hours):
#   1. the throughput benchmark (benchmarks/bench_gpu.py: base and big, eager and compiled);
#   2. a real trial end to end on the GPU: `ablate train experiments/mini.yaml` (data preparation,
#      bf16-mixed training through Lightning, dev PPL, beam-search BLEU, W&B offline, metrics.json),
#      then the same trial with train.compile=true, and with bucketed batches (data.bucket_ratio=1.1,
#      data.batch_multiple=8: few shapes for cuDNN and the compiler);
#   3. packed trials (benchmarks/bench_packing.py: 8 mini rows, 1 / 4 / 8 trials at once on the GPU).
# Time: about 330 + 3 x 120 + 150 s at most (BENCH_S, TRAIN_S, PACK_S); lower them to fit a lease.
# Usage there:  bash benchmarks/gpu_check.sh OUTDIR   (OUTDIR receives the logs and JSON; at most 8 files)
# Packages the machine lacks travel as wheels in .whl/ (installed into a private folder, not its Python).
set -u
out=${1:?usage: gpu_check.sh OUTDIR}
export PYTHONUNBUFFERED=1 WANDB_MODE=offline ABLATE_CACHE=/tmp/ablate-cache
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || exit 1
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD
fi
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
python3 -c "import torch, lightning; print('torch', torch.__version__, 'lightning', lightning.__version__)"
uptime

timeout "${BENCH_S:-330}" python3 benchmarks/bench_gpu.py --steps 30 --warmup 10 --out "$out/bench_gpu.json" \
    2>&1 | tee "$out/bench_gpu.log"

for mode in eager compiled bucketed; do
    extra="train.compile=false"
    [ "$mode" = compiled ] && extra="train.compile=true"
    [ "$mode" = bucketed ] && extra="data.bucket_ratio=1.1 data.batch_multiple=8"
    start=$(date +%s)
    # shellcheck disable=SC2086
    timeout "${TRAIN_S:-120}" python3 -m ablate.cli train --output "/tmp/run-$mode" experiments/mini.yaml \
        $extra logging.output_dir=/tmp/runs >"$out/train_$mode.log" 2>&1
    echo "train $mode: exit $? in $(($(date +%s) - start)) s"
    tail -n 4 "$out/train_$mode.log"
    cp "/tmp/run-$mode/metrics.json" "$out/metrics_$mode.json" 2>/dev/null
done
cp /tmp/run-eager/metrics.csv "$out/metrics_eager.csv" 2>/dev/null
python3 - "$out" <<'EOF'
import json, sys
from pathlib import Path
for p in sorted(Path(sys.argv[1]).glob("metrics_*.json")):
    m = json.loads(p.read_text())
    print(p.stem, {k: m.get(k) for k in ("val/ppl", "val/bleu", "tokens_per_sec", "train_time_s", "step", "startup_s", "eval_time_s")})
EOF

timeout "${PACK_S:-150}" python3 benchmarks/bench_packing.py --rows 8 --packs 1 4 8 --steps 200 \
    --out "$out/packing.json" 2>&1 | tee "$out/packing.log"
