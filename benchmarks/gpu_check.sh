#!/usr/bin/env bash
# One call on a lent GPU machine, prepared and tried on CPU first (a lease is minutes, not hours).
# In order of what the open measurements need, each stage under its own time limit (seconds):
#   1. BENCH_S=240  throughput (benchmarks/bench_gpu.py): base, big and a GPT-2-small-shaped language
#                   model at 25,000 tokens a side on one GPU (the train.global_tokens split of
#                   sweeps/table3.yaml; 24 blocks of 1,024 for the language model), eager, CUDA graphs, compiled,
#                   then at 6,250; MFU, peak memory against the split's memory model, the dry run's
#                   predicted step. The JSON keeps every measurement finished before the limit.
#   2. GRAPHS_S=90  a real trial with CUDA graphs: `ablate train experiments/mini.yaml` with bucketed
#                   batches and train.cuda_graphs=true (Lightning, bf16-mixed, dev PPL and BLEU).
#   3. COLD_S=90, WARM_S=60  the same trial with train.compile=true twice over one empty compile cache:
#                   the second start-up is the one a sweep's later trials get (runs/<sweep>/.compile-cache).
#   4. PACK_S=0     (off unless set) packed trials: benchmarks/bench_packing.py, 8 mini rows at 1 / 4 / 8.
# About 480 s in all by default: under 8 minutes. Lower a stage's limit to fit a shorter lease.
# Usage there:  bash benchmarks/gpu_check.sh OUTDIR   (OUTDIR receives the logs and JSON; at most 12 files)
# Packages the machine lacks travel as wheels in .whl/ (installed into a private folder, not its Python).
set -u
out=${1:?usage: gpu_check.sh OUTDIR}
mkdir -p "$out"
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

timeout "${BENCH_S:-240}" python3 benchmarks/bench_gpu.py --steps 20 --warmup 8 --out "$out/bench_gpu.json" \
    2>&1 | tee "$out/bench_gpu.log"

trial() {  # name, time limit, overrides...: one mini trial, its exit, time and metrics
    local name=$1 limit=$2
    shift 2
    local start
    start=$(date +%s)
    timeout -k 15 "$limit" python3 -m ablate.cli train --output "/tmp/run-$name" experiments/mini.yaml \
        logging.output_dir=/tmp/runs "$@" >"$out/train_$name.log" 2>&1
    echo "train $name: exit $? in $(($(date +%s) - start)) s"
    tail -n 4 "$out/train_$name.log"
    cp "/tmp/run-$name/metrics.json" "$out/metrics_$name.json" 2>/dev/null
}
buckets="data.bucket_ratio=1.1 data.batch_multiple=8"
# shellcheck disable=SC2086
trial graphs "${GRAPHS_S:-90}" $buckets train.cuda_graphs=true
export TORCHINDUCTOR_CACHE_DIR=/tmp/compile-cache
rm -rf "$TORCHINDUCTOR_CACHE_DIR"
# shellcheck disable=SC2086
trial compiled-cold "${COLD_S:-90}" $buckets train.compile=true
# shellcheck disable=SC2086
trial compiled-warm "${WARM_S:-60}" $buckets train.compile=true
unset TORCHINDUCTOR_CACHE_DIR
python3 - "$out" <<'EOF'
import json, sys
from pathlib import Path
for p in sorted(Path(sys.argv[1]).glob("metrics_*.json")):
    m = json.loads(p.read_text())
    print(p.stem, {k: m.get(k) for k in ("val/ppl", "val/bleu", "tokens_per_sec", "train_time_s", "step", "startup_s", "eval_time_s")})
EOF

if [ "${PACK_S:-0}" -gt 0 ]; then
    timeout "$PACK_S" python3 benchmarks/bench_packing.py --rows 8 --packs 1 4 8 --steps 200 \
        --out "$out/packing.json" 2>&1 | tee "$out/packing.log"
fi
