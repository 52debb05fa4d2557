"""Dev/test sentences longer than a fixed positional table are refused before training, in one line."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from ablate.config import ConfigError, load_config, model_section
from ablate.model.build import build_model
from ablate.train.lengths import check_positions


class _Prepared:
    def __init__(self, src: list[int], tgt: list[int]) -> None:
        self.shard = SimpleNamespace(src_lengths=np.array(src), tgt_lengths=np.array(tgt), __len__=None)

    def split(self, name: str) -> object:
        shard = self.shard

        class _Shard:
            src_lengths, tgt_lengths = shard.src_lengths, shard.tgt_lengths

            def __len__(self) -> int:
                return len(shard.src_lengths)

        return _Shard()


def _cfg(positional: str):
    overrides = [f"model.positional={positional}", "model.max_positions=128", "data.max_len=50"]
    overrides += ["eval.max_len_a=1.0", "eval.max_len_b=20", "eval.test=false", "model.d_model=16", "model.n_heads=2"]
    overrides += ["model.d_ff=32", "model.n_layers=1"]
    return load_config(overrides=overrides)


def test_a_long_dev_sentence_and_a_learned_table_is_one_config_error() -> None:
    cfg = _cfg("learned")
    model = build_model(model_section(cfg.model), vocab_size=32)
    with pytest.raises(ConfigError) as err:
        check_positions(cfg, _Prepared(src=[10, 134], tgt=[12, 120]), model)
    msg = str(err.value)
    assert "\n" not in msg and "'valid'" in msg and "134 source" in msg and "model.max_positions=155" in msg
    check_positions(cfg, _Prepared(src=[10, 100], tgt=[12, 100]), model)  # 100 + 1 + 20 = 121 fits


@pytest.mark.parametrize("positional", ["sinusoidal", "rope", "alibi", "t5", "none"])
def test_encodings_that_extrapolate_accept_any_length(positional: str) -> None:
    cfg = _cfg(positional)
    check_positions(cfg, _Prepared(src=[500], tgt=[480]), build_model(model_section(cfg.model), vocab_size=32))
