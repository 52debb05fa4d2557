"""progress.json's ETA: the sooner of the step budget and the wall-clock budget."""

from __future__ import annotations

from types import SimpleNamespace

from lightning.pytorch.callbacks import Timer

from ablate.train.monitor import _sooner, _time_left


def test_eta_is_capped_by_max_time() -> None:
    trainer = SimpleNamespace(callbacks=[Timer(duration={"minutes": 1})])
    left = _time_left(trainer)
    assert left is not None and 0 < left <= 60
    assert _sooner(17 * 3600.0, left) == left  # a 30-minute run once showed a 17-hour ETA
    assert _time_left(SimpleNamespace(callbacks=[])) is None
    assert _sooner(None, 5.0) == 5.0 and _sooner(3.0, None) == 3.0 and _sooner(None, None) is None


def test_atomic_open_leaves_the_old_file_on_a_crash(tmp_path) -> None:
    import pytest

    from ablate.atomic import atomic_open, atomic_write_bytes

    target = tmp_path / "last.ckpt"
    atomic_write_bytes(target, b"old")
    with pytest.raises(RuntimeError), atomic_open(target) as f:
        f.write(b"half of the new")
        raise RuntimeError("disk full")
    assert target.read_bytes() == b"old"  # never torn
    assert [p.name for p in tmp_path.iterdir()] == ["last.ckpt"]  # no temp file left behind


def test_the_progress_line_shows_a_dash_before_the_first_validation() -> None:
    from ablate.train.monitor import progress_info

    before = progress_info({"train/loss": 4.5, "lr": 1e-4, "val/ppl": None}, 1234.0)
    assert "val/ppl -" in before and "nan" not in before and "loss 4.500" in before
    after = progress_info({"train/loss": 4.5, "lr": 1e-4, "val/ppl": 88.123}, 1234.0)
    assert "val/ppl 88.12" in after and "1,234 tok/s" in after
