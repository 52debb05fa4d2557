"""The Ray launcher without a cluster: its settings, what a trial asks Ray for, Ray missing, the dry run."""

from __future__ import annotations

import sys

import pytest
from sweep_harness import one_line_error

from ablate.cli import main
from ablate.errors import SweepError
from ablate.sweep.launch.ray_jobs import RayLauncher, job_client, room, trial_resources


@pytest.mark.parametrize(
    ("cfg", "said"),
    [
        ({"address": "ray://head:10001"}, "address must be auto or the dashboard's http://host:8265"),
        ({"devices_per_trial": 2, "trials_per_device": 2}, "trials_per_device > 1 packs one-device trials"),
        ({"max_running": 0}, "max_running must be a positive integer"),
        ({"slots": 2}, "unknown key 'slots'"),
    ],
)
def test_bad_ray_settings_are_one_line(cfg, said):
    with pytest.raises(SweepError, match=said.replace("(", r"\(").replace(")", r"\)")):
        RayLauncher.validate({"name": "ray", **cfg}, "s.yaml: launcher")


def test_a_trial_asks_its_share_of_a_device():
    assert trial_resources({}, gpu=False) == {"num_cpus": 1.0}
    assert trial_resources({"devices_per_trial": 4}, gpu=False) == {"num_cpus": 4.0}
    assert trial_resources({"trials_per_device": 4}, gpu=True) == {"num_gpus": 0.25, "num_cpus": 1.0}
    assert trial_resources({"memory_gb": 2}, gpu=False)["memory"] == 2 * 2**30


def test_the_cluster_holds_what_fits_on_each_node():
    nodes = [{"CPU": 16.0, "GPU": 2.0}, {"CPU": 4.0}]
    assert room({"num_gpus": 0.25, "num_cpus": 1.0}, nodes) == 8  # 8 packed trials on the 2 GPUs
    assert room({"num_cpus": 4.0}, nodes) == 5
    assert room({"num_gpus": 4.0, "num_cpus": 1.0}, nodes) == 0  # no node has 4 GPUs


def test_without_ray_the_launcher_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray.job_submission", None)
    with pytest.raises(
        SweepError, match=r'launcher ray needs Ray, which is not installed here: pip install -e "\.\[ray\]"'
    ):
        job_client("auto", "s.yaml: launcher ray")


def test_a_ray_sweep_without_ray_is_refused_before_anything_is_stored(monkeypatch, write_sweep, capsys):
    monkeypatch.setitem(sys.modules, "ray.job_submission", None)
    path = write_sweep(launcher={"name": "ray"})
    assert main(["sweep", str(path)]) == 2
    assert 'pip install -e ".[ray]"' in one_line_error(capsys)
    assert not (path.parent / ".ablate").exists()


def test_the_dry_run_says_what_a_ray_cluster_needs(monkeypatch, write_sweep, capsys):
    monkeypatch.setitem(sys.modules, "ray.job_submission", None)
    path = write_sweep(launcher={"name": "ray"})
    assert main(["sweep", str(path), "--dry-run"]) == 0
    out, err = capsys.readouterr()
    needs = [line for line in out.splitlines() if line.startswith("launcher ray needs: ")]
    assert len(needs) == 3 and "on a file system the Ray cluster's nodes share" in needs[0]
    assert "on a file system the Ray cluster's nodes share" in needs[1]
    assert 'pip install -e ".[ray]"' in err  # what the real run would refuse, as a note


def test_a_local_sweep_cannot_detach(write_sweep, capsys):
    path = write_sweep()
    assert main(["sweep", str(path), "--detach"]) == 2
    assert "--detach needs launcher slurm or ray" in one_line_error(capsys)


def test_the_command_line_launcher_replaces_the_files(write_sweep, capsys):
    path = write_sweep(launcher={"name": "local", "slots": 2})
    assert main(["sweep", str(path), "--dry-run", "--json", "--launcher", "{name: ray, trials_per_device: 4}"]) == 0
    assert '"launcher": "ray"' in capsys.readouterr().out


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("{name: ray", "--launcher '{name: ray': not YAML"),
        ("[ray]", "--launcher '[ray]': launcher must be a name or {name: local|slurm|ray, ...}"),
        ("kubernetes", "unknown launcher 'kubernetes'"),
        ("{name: ray, slots: 2}", "unknown key 'slots'"),
    ],
)
def test_a_bad_command_line_launcher_is_one_line(write_sweep, capsys, spec, said):
    path = write_sweep()
    assert main(["sweep", str(path), "--dry-run", "--launcher", spec]) == 2
    assert said in one_line_error(capsys)


def test_table3_runs_on_ray_without_its_slurm_time_limits(monkeypatch, capsys):
    """The README's command: sweeps/table3.yaml on Ray. Its big row's SLURM time limit is left out, said once."""
    from pathlib import Path

    monkeypatch.setitem(sys.modules, "ray.job_submission", None)
    table3 = Path(__file__).resolve().parents[2] / "sweeps" / "table3.yaml"
    launcher = "{name: ray, devices_per_trial: 1, cpus_per_trial: 8}"
    assert main(["sweep", str(table3), "--dry-run", "--launcher", launcher]) == 0
    out, err = capsys.readouterr()
    assert "row 'big': resource key(s) timeout_min are for launcher slurm; --launcher ray leaves them out" in err
    assert "launcher ray" in out.splitlines()[0]


class _Gone:
    """A job client whose cluster has stopped answering (what `ray stop --force` leaves)."""

    def list_jobs(self):
        raise ConnectionError("Failed to connect to Ray at address: http://127.0.0.1:8265.")

    def submit_job(self, **_kwargs):
        raise ConnectionError("Failed to connect to Ray at address: http://127.0.0.1:8265.")


def test_a_lost_cluster_marks_its_running_trials_lost_in_one_line(monkeypatch, write_sweep):
    from ablate.sweep.file.spec import load_sweep
    from ablate.sweep.launch import ray_jobs
    from ablate.sweep.store.state import free_retry
    from ablate.sweep.store.store import SweepStore

    sweep = load_sweep(write_sweep(launcher={"name": "ray", "max_running": 2}, seeds=[1, 2]))  # no Ray needed
    store = SweepStore.for_sweep(sweep)
    store.sync(sweep)
    running, waiting = store.attempts()
    store.set_attr(running.storage_id, "ray_job", "ablate-t-1-abc")
    assert store.claim(running.storage_id, "ray:ablate-t-1-abc")
    launcher = RayLauncher(sweep, store)
    launcher._client = _Gone()
    launcher.poll()  # a first miss: the dashboard may be restarting; nothing is marked yet
    launcher.start([waiting])  # a submission that is not answered leaves the trial waiting
    assert store.get(running.storage_id).state == "RUNNING" and store.get(waiting.storage_id).state == "WAITING"
    monkeypatch.setattr(ray_jobs, "LOST_AFTER_S", 0.0)  # the cluster has now been silent long enough
    with pytest.raises(SweepError) as lost:
        launcher.poll()
    said = str(lost.value)
    assert "\n" not in said and "the Ray cluster at auto has not answered" in said and "1 running trial(s)" in said
    gone = store.get(running.storage_id)
    assert gone.state == "FAIL" and gone.kind == "killed"
    assert free_retry(gone) is not None  # the rerun resumes it from its checkpoint without spending a retry
    assert store.get(waiting.storage_id).state == "WAITING"  # still waiting, under its recorded job id
