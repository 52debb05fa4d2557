"""prepare_data: shards match the text, the cache is reused, concurrent and failed runs leave it valid."""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path

import numpy as np
import pytest

from ablate.config import ConfigError, load_config
from ablate.data.errors import DataError
from ablate.data.prepare import Prepared, prepare_data
from ablate.data.tokenizer import EOS_ID


def test_builtin_prepares_and_round_trips(data_cfg, cache: Path) -> None:
    prepared = prepare_data(data_cfg(), progress=False)
    assert not prepared.cache_hit and prepared.dir.parent == cache / "prepared"
    assert prepared.vocab_size == 600 and prepared.tokenizer.vocab_size == 600
    train = prepared.split("train")
    assert len(train) == 3000 and prepared.split("valid").n == 200
    src_raw, tgt_raw = prepared.raw("train", "src"), prepared.raw("train", "tgt")
    assert len(src_raw) == len(train)
    tok = prepared.tokenizer
    for i in (0, 1, 1234, 2999):
        assert tok.decode(train.src(i)) == src_raw[i]
        assert tok.decode(train.tgt(i)) == tgt_raw[i]
        assert train.src_lengths[i] == len(tok.encode(src_raw[i]))
    assert EOS_ID not in np.asarray(train.src_ids[:1000])  # specials are added at batch time only
    assert train.src_ids.dtype == np.uint16 and isinstance(train.src_ids, np.memmap)
    text = "\n".join(prepared.summary_lines())
    for needle in ("prepared", "vocabulary 600", "3,000 pairs", "dropped", "padding", "max_tokens=4096"):
        assert needle in text


def test_second_call_is_a_cache_hit(data_cfg, cache: Path) -> None:
    first = prepare_data(data_cfg(), progress=False)
    stamp = (first.dir / "meta.json").stat().st_mtime_ns
    again = prepare_data(data_cfg(), progress=False)
    assert again.cache_hit and again.dir == first.dir and (again.dir / "meta.json").stat().st_mtime_ns == stamp
    assert "cache hit" in again.summary_lines()[0]
    other = prepare_data(data_cfg("data.vocab_size=500"), progress=False)  # tokenizer settings are in the key
    assert other.dir != first.dir and not other.cache_hit
    moved = prepare_data(data_cfg("data.args.seed=7"), progress=False)  # so is the corpus identity
    assert moved.dir != first.dir
    reopened = Prepared.load(first.dir)
    assert reopened.key == first.key and reopened.split("test").n == 200


def test_cache_dir_setting_wins_over_the_environment(data_cfg, tmp_path: Path) -> None:
    prepared = prepare_data(data_cfg(f"data.cache_dir={tmp_path / 'elsewhere'}"), progress=False)
    assert prepared.dir.parent == tmp_path / "elsewhere" / "prepared"


def test_a_cache_where_no_folder_can_be_made_is_one_line(data_cfg, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    with pytest.raises(DataError) as exc:
        prepare_data(data_cfg(f"data.cache_dir={tmp_path / 'afile'}"), progress=False)
    assert str(exc.value) == (
        f"{tmp_path / 'afile'}: cannot use it as the data cache (Not a directory); "
        "set data.cache_dir or ABLATE_CACHE to a writable folder"
    )
    assert (tmp_path / "afile").read_text() == "x"


def test_max_len_drops_and_counts_and_raw_stays_aligned(data_cfg) -> None:
    full = prepare_data(data_cfg(), progress=False)
    cut = prepare_data(data_cfg("data.max_len=20", "data.max_tokens=4096"), progress=False)
    lengths = np.maximum(full.split("train").src_lengths, full.split("train").tgt_lengths)
    expected_drop = int((lengths > 20).sum())
    train = cut.split("train")
    assert expected_drop > 0 and train.dropped == expected_drop and len(train) == 3000 - expected_drop
    assert int(max(train.src_lengths.max(), train.tgt_lengths.max())) <= 20
    raw = cut.raw("train", "tgt")
    all_raw = full.raw("train", "tgt")
    for row in (0, len(train) // 2, len(train) - 1):
        assert raw[row] == all_raw[int(train.line[row])] == cut.tokenizer.decode(train.tgt(row))
    assert cut.split("valid").n == 200  # dev/test keep every sentence (BLEU needs the whole set)
    assert f"{expected_drop:,} dropped" in "\n".join(cut.summary_lines())


def test_max_train_pairs_keeps_the_first_pairs_and_the_whole_dev_set(data_cfg) -> None:
    full = prepare_data(data_cfg(), progress=False)
    cut = prepare_data(data_cfg("data.max_train_pairs=500"), progress=False)
    assert cut.dir != full.dir and len(cut.split("train")) == 500
    assert cut.raw("train", "tgt") == full.raw("train", "tgt")[:500]
    assert cut.split("valid").n == full.split("valid").n == 200 and cut.split("test").n == 200
    assert cut.unigram_floor("valid") != full.unigram_floor("valid")  # the floor of what it trains on
    again = prepare_data(data_cfg("data.max_train_pairs=null"), progress=False)
    assert again.dir == full.dir  # unset: the folders prepared before the setting existed are reused
    with pytest.raises(ConfigError, match=r"data\.max_train_pairs: must be a positive number, got 0"):
        data_cfg("data.max_train_pairs=0")


def test_textfiles_bad_input_leaves_nothing_in_the_cache(tmp_path: Path, cache: Path, write_pair) -> None:
    write_pair(tmp_path, "train", ["a b", "c d", "e"], ["A B", "", "E"])
    cfg = load_config(
        overrides=[
            "data.corpus=textfiles",
            f"data.root={tmp_path}",
            "data.args.train=train",
            "data.args.valid=train",
            "data.args.test=train",
            "data.vocab_size=40",
        ]
    ).data
    with pytest.raises(DataError, match=r"train\.de:2: empty line"):
        prepare_data(cfg, progress=False)
    assert [p.name for p in (cache / "prepared").iterdir() if not p.name.endswith(".lock")] == []


def test_empty_corpus_and_vocab_too_large(tmp_path: Path, cache: Path, write_pair, data_cfg) -> None:
    write_pair(tmp_path, "train", [], [])
    cfg = load_config(
        overrides=[
            "data.corpus=textfiles",
            f"data.root={tmp_path}",
            "data.args.train=train",
            "data.valid_split=train",
            "data.test_split=train",
            "data.vocab_size=40",
        ]
    ).data
    with pytest.raises(DataError, match=r"split train is empty"):
        prepare_data(cfg, progress=False)
    with pytest.raises(DataError, match=r"data\.vocab_size: 90000 is too large .* set data\.vocab_size=\d+ or less"):
        prepare_data(data_cfg("data.vocab_size=90000"), progress=False)
    assert [p.name for p in (cache / "prepared").iterdir() if not p.name.endswith(".lock")] == []


def test_unknown_split_is_refused_at_load(data_cfg) -> None:
    with pytest.raises(ConfigError, match=r"command line: data\.valid_split: corpus builtin has no split 'dev'"):
        data_cfg("data.valid_split=dev")


def _prepare_in_child(cache: str, queue) -> None:
    import os

    os.environ["ABLATE_CACHE"] = cache
    cfg = load_config(
        overrides=["data.args.n_train=3000", "data.args.n_valid=100", "data.args.n_test=100", "data.vocab_size=600"]
    ).data
    p = prepare_data(cfg, progress=False)
    queue.put((str(p.dir), p.cache_hit))


def test_concurrent_preparation_gives_one_valid_cache(cache: Path) -> None:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_prepare_in_child, args=(str(cache), queue)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    dirs = {d for d, _ in results}
    assert len(dirs) == 1 and sorted(hit for _, hit in results) == [False, True]  # one built, one reused
    entries = [p for p in (cache / "prepared").iterdir() if not p.name.endswith(".lock")]
    assert [p.name for p in entries] == [Path(next(iter(dirs))).name]  # no temporary folder left behind
    prepared = Prepared.load(next(iter(dirs)))
    assert prepared.split("train").n == 3000 and json.loads((prepared.dir / "meta.json").read_text())["key"]


def test_multi30k_prepares_from_the_shared_folder(multi30k_root: Path, cache: Path) -> None:
    cfg = load_config(
        overrides=["data.corpus=multi30k", f"data.root={multi30k_root}", "data.vocab_size=8000", "data.max_tokens=4096"]
    ).data
    prepared = prepare_data(cfg, progress=False)
    assert [prepared.split(s).n for s in ("train", "valid", "test")] == [29_000, 1_014, 1_000]
    refs = prepared.raw("test", "tgt")
    assert refs[0] == (multi30k_root / "test2016.de").read_text(encoding="utf-8").split("\n")[0]
    tok, shard = prepared.tokenizer, prepared.split("valid")
    src = prepared.raw("valid", "src")
    exact = sum(tok.decode(shard.src(i)) == src[i] for i in range(len(src)))
    assert exact >= 0.99 * len(src)  # identity normalization: decoding gives back the raw text
