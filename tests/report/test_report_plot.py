"""The PNG: written, a real image, one bar pair per row, taller with more rows."""

from __future__ import annotations

import struct
from pathlib import Path

from ablate.report.plot import plot_table
from ablate.report.table import build_table


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])  # IHDR width, height


def test_plot_writes_a_readable_png(tmp_path: Path, snapshot_results) -> None:
    out = plot_table(build_table(snapshot_results, name="snap"), tmp_path / "sub" / "t.png")
    assert out.is_file() and out.stat().st_size > 20_000  # a drawn figure, not an empty canvas
    width, height = _png_size(out)
    assert 1000 <= width <= 2000 and 300 <= height <= 2000


def test_plot_grows_with_rows(tmp_path: Path, make_trial) -> None:
    few = [
        make_trial("base", "base", "base", ppl=5.0, bleu=20.0),
        make_trial("h=1", "A", "A1", ppl=5.5, bleu=19.0, **{"model.n_heads": 1}),
    ]
    many = few + [
        make_trial(f"N={n}", "C", None, ppl=5.0 + n, bleu=20.0 - n, **{"model.n_layers": n})
        for n in (1, 2, 4, 5, 6, 7, 8)
    ]
    h_few = _png_size(plot_table(build_table(few), tmp_path / "few.png"))[1]
    h_many = _png_size(plot_table(build_table(many), tmp_path / "many.png"))[1]
    assert h_many > h_few + 200
