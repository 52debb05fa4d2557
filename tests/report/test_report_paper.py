"""The paper's Table 3 as data: every value against the paper, no misprints, settings read from configs."""

from __future__ import annotations

import pytest

from ablate.report.errors import ReportError
from ablate.report.paper import BASE_SETTINGS, COLUMN_KEYS, PAPER, changed_settings, paper_delta, paper_row, settings_of

# (PPL, BLEU, params x10^6) as printed in Vaswani et al. 2017, Table 3 (None: no value printed).
PRINTED = {
    "base": (4.92, 25.8, 65),
    "A1": (5.29, 24.9, None),
    "A2": (5.00, 25.5, None),
    "A3": (4.91, 25.8, None),
    "A4": (5.01, 25.4, None),
    "B1": (5.16, 25.1, 58),
    "B2": (5.01, 25.4, 60),
    "C1": (6.11, 23.7, 36),
    "C2": (5.19, 25.3, 50),
    "C3": (4.88, 25.5, 80),
    "C4": (5.75, 24.5, 28),
    "C5": (4.66, 26.0, 168),
    "C6": (5.12, 25.4, 53),
    "C7": (4.75, 26.2, 90),
    "D1": (5.77, 24.6, None),
    "D2": (4.95, 25.5, None),
    "D3": (4.67, 25.3, None),
    "D4": (5.47, 25.7, None),
    "E": (4.92, 25.7, None),
    "big": (4.33, 26.4, 213),
}


def test_every_row_and_value_matches_the_paper() -> None:
    assert list(PAPER) == list(PRINTED)  # the paper's order: base, A1..A4, B1, B2, C1..C7, D1..D4, E, big
    for key, (ppl, bleu, params) in PRINTED.items():
        row = PAPER[key]
        assert (row.ppl, row.bleu, row.params_m) == (ppl, bleu, params), key


def test_no_row_carries_the_known_misprint() -> None:
    # Some write-ups print the base (h=8) row as BLEU 25.9 / PPL 4.91; the paper has 25.8 / 4.92.
    assert (PAPER["base"].ppl, PAPER["base"].bleu) == (4.92, 25.8)
    assert not any(r.bleu == 25.9 for r in PAPER.values())
    assert not any((r.ppl, r.bleu) == (4.91, 25.9) for r in PAPER.values())


def test_changed_settings_of_each_group() -> None:
    assert PAPER["A1"].changes == {"h": 1, "d_k": 512, "d_v": 512}
    assert PAPER["A4"].changes == {"h": 32, "d_k": 16, "d_v": 16}
    assert PAPER["B1"].changes == {"d_k": 16}  # h = 8 and d_v = 64 stay: only the keys shrink
    assert PAPER["C4"].changes == {"d_model": 256, "d_k": 32, "d_v": 32}
    assert PAPER["D3"].changes == {"eps_ls": 0.0}
    assert PAPER["E"].changes == {"positional": "learned"}
    assert PAPER["big"].changes == {"d_model": 1024, "d_ff": 4096, "h": 16, "P_drop": 0.3, "train_steps": 300_000}
    for row in PAPER.values():  # in row A the attention computation stays constant: h * d_k = d_model
        if row.group == "A":
            s = row.settings
            assert s["h"] * s["d_k"] == s["d_model"] == s["h"] * s["d_v"]
    assert set(BASE_SETTINGS) == set(COLUMN_KEYS)


def test_deltas_against_the_paper_base() -> None:
    assert paper_delta("A1") == (0.37, -0.9)
    assert paper_delta("C1") == (1.19, -2.1)
    assert paper_delta("E") == (0.0, -0.1)
    assert paper_delta("big") == (-0.59, 0.6)


def test_unknown_row_is_a_one_line_error() -> None:
    with pytest.raises(ReportError, match=r"unknown Table 3 row 'A5' \(valid: base, A1"):
        paper_row("A5")


def test_settings_of_a_resolved_config() -> None:
    cfg = {
        "model": {
            "n_layers": 6,
            "d_model": 512,
            "d_ff": 2048,
            "n_heads": 8,
            "d_k": None,
            "d_v": None,
            "dropout": 0.1,
            "positional": {"name": "learned", "args": {}},
        },
        "train": {"label_smoothing": 0.1, "max_steps": 100_000},
    }
    assert settings_of(cfg) == BASE_SETTINGS | {"positional": "learned"}  # d_k, d_v default to d_model / h
    cfg["model"]["positional"] = {"name": "rope", "args": {"base": 500}}
    assert settings_of(cfg)["positional"] == "rope(base=500)"
    assert changed_settings(settings_of(cfg), BASE_SETTINGS) == {"positional": "rope(base=500)"}


def test_settings_of_follows_the_configs_depth_and_head_rules() -> None:
    cfg = {
        "model": {
            "n_layers": 6,
            "n_enc_layers": 4,
            "n_dec_layers": None,
            "d_model": 256,
            "d_ff": 1024,
            "n_heads": 4,
            "d_k": 32,
            "d_v": None,
            "dropout": 0.1,
            "positional": "sinusoidal",
        },
        "train": {"label_smoothing": 0.1, "max_steps": 10},
    }
    settings = settings_of(cfg)
    assert settings["N"] == "4/6" and (settings["d_k"], settings["d_v"]) == (32, 64)
