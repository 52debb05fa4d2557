#!/usr/bin/env bash
# The outputs of the read commands on every sweep file under sweeps/, into OUTDIR: run it before and after
# a change that must not change them (a refactor), then `diff -r BEFORE AFTER`. Writes nothing else.
#   bash benchmarks/snapshot_outputs.sh /tmp/before   # on the old commit
#   bash benchmarks/snapshot_outputs.sh /tmp/after    # on the new one
#   diff -r /tmp/before /tmp/after
# Run from the repository root with ablate installed. Each file: the dry run (text and JSON: trial ids,
# params, FLOPs, cost), `ablate status` and `ablate table`, with their exit codes. The checkout's own
# folder is written as <repo>, so two checkouts in different folders compare equal.
set -u
out=${1:?usage: snapshot_outputs.sh OUTDIR}
mkdir -p "$out"
export WANDB_MODE=offline
for f in sweeps/*.yaml; do
  n=$(basename "$f" .yaml)
  ablate sweep "$f" --dry-run >"$out/$n.dry" 2>&1; echo "rc=$?" >>"$out/$n.dry"
  ablate sweep "$f" --dry-run --json >"$out/$n.json" 2>&1; echo "rc=$?" >>"$out/$n.json"
  ablate status "$f" >"$out/$n.status" 2>&1; echo "rc=$?" >>"$out/$n.status"
  ablate table "$f" >"$out/$n.table" 2>&1; echo "rc=$?" >>"$out/$n.table"
done
root=$(pwd)
for f in "$out"/*; do sed -i "s#$root#<repo>#g" "$f"; done
