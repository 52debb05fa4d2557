#!/usr/bin/env bash
# The runs behind docs/results/transfer.md: sweeps/table3-multi30k.yaml's recipe, unchanged, on two
# corpora it was not tuned on (only the corpus changes; each run gets its own copy of the sweep file,
# so its own store and W&B group); then the same rows on the synthetic corpus against Multi30k, for
# Table 3 and for "Table 3 revisited", side by side with `ablate compare`.
#
#   bash docs/results/transfer.sh MULTI30K_DIR NEWSTEST_DIR [WORK_DIR]
#
# MULTI30K_DIR: train.en/.de, valid.en/.de, test2016.en/.de (the Multi30k task-1 raw files)
# NEWSTEST_DIR: newstest2013.en/.de and newstest2014.en/.de (WMT's news test sets)
# WORK_DIR (default sweeps/runs/transfer): the corpora's slices, the sweep copies and their stores.
set -euo pipefail
m30k=$(cd "$1" && pwd)
news=$(cd "$2" && pwd)
work=${3:-sweeps/runs/transfer}
repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work/multi30k-b"
work=$(cd "$work" && pwd)

# 1. Multi30k, another slice: training pairs 10,001-20,000 (the recipe uses the first 10,000).
for side in en de; do
  sed -n '10001,20000p' "$m30k/train.$side" > "$work/multi30k-b/train.$side"
  cp "$m30k/valid.$side" "$m30k/test2016.$side" "$work/multi30k-b/"
done

# 2. News: the recipe on 3,003 real news pairs (newstest2014) with newstest2013 (the paper's dev set)
#    as the dev set: a corpus far harder and smaller than the one the recipe was made for.
copy() {  # copy NAME: the sweep file under another name, its experiment path made absolute
  sed -e "s|^name: table3-multi30k|name: $1|" -e "s|^experiment: .*|experiment: $repo/experiments/mini.yaml|" \
    "$repo/sweeps/table3-multi30k.yaml" > "$work/$1.yaml"
}
copy table3-news
copy table3-multi30k-b

ablate sweep "$work/table3-news.yaml" data.corpus=textfiles "data.root=$news" data.args.train=newstest2014 \
  data.args.valid=newstest2013 data.test_split=valid
ablate sweep "$work/table3-multi30k-b.yaml" "data.root=$work/multi30k-b"
for name in table3-news table3-multi30k-b; do
  ablate table "$work/$name.yaml" --format md --plot "$work/$name.png" > "$work/$name.md"
done
ablate compare "$work/table3-multi30k-b.yaml" "$work/table3-news.yaml" --format md > "$work/compare.md"

# 3. The same rows on the synthetic corpus (the main job) and on Multi30k: which keep their direction.
(cd "$repo" && ablate sweep sweeps/table3-mini.yaml)
ablate compare "$repo/sweeps/table3-mini.yaml" "$work/table3-multi30k-b.yaml" --format md \
  --plot "$work/transfer-mini-vs-multi30k.png" > "$work/compare-mini-multi30k.md"

# 4. "Table 3 revisited" on both corpora: every row with a Narang et al. figure, Multi30k's recipe.
(cd "$repo" && ablate sweep sweeps/revisited-mini.yaml && ablate sweep sweeps/revisited-multi30k.yaml "data.root=$m30k")
ablate compare "$repo/sweeps/revisited-mini.yaml" "$repo/sweeps/revisited-multi30k.yaml" --format md \
  --plot "$work/transfer-revisited.png" > "$work/compare-revisited.md"
