"""Checks made once at load (ablate/config/check.py): corpus options, cross-section length limits, the
layer an error names; from_dict's structural rebuild; the light, acyclic corpus registry."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import ablate.config.check
from ablate.config import ConfigError, from_dict, load_config, to_dict
from ablate.data.catalog import CORPORA
from ablate.data.registry import resolve_options

ROOT = Path(__file__).resolve().parents[1]


def _one_line_error(*args, **kwargs) -> str:
    with pytest.raises(ConfigError) as exc:
        load_config(*args, **kwargs)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_a_corpus_option_typo_names_key_layer_and_nearest(tmp_path: Path) -> None:
    exp = tmp_path / "exp.yaml"
    exp.write_text("data:\n  corpus: builtin\n")
    msg = _one_line_error(exp, layers=[("sweep.yaml: row 'x'", ["data.args.n_trian=100"])])
    assert msg == "sweep.yaml: row 'x': data.args.n_trian: not an option of the builtin corpus; did you mean n_train?"
    msg = _one_line_error(overrides=["data.corpus=multi30k", "data.args.n_train=5"])
    assert msg.startswith("command line: data.args.n_train: not an option of the multi30k corpus (valid: download)")


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (["data.args.n_train=many"], r"^command line: data\.args\.n_train: must be an int, got 'many'$"),
        (["data.args.n_train=0"], r"^command line: data\.args\.n_train: must be >= 1, got 0$"),
        (["data.args.seed=true"], r"data\.args\.seed: must be an int, got True"),
        (["data.corpus=multi30k", "data.args.download=maybe"], r"data\.args\.download: must be a bool"),
        (["data.corpus=wmt14_en_de", "data.args.x=1"], r"data\.args\.x: not an option of the wmt14_en_de corpus"),
        (["data.corpus=textfiles"], r"^command line: data\.args\.train: the textfiles corpus needs this option$"),
        (["data.corpus=textfiles", "data.args.train=[a]"], r"data\.args\.train: give a file prefix"),
        (["data.corpus=textfiles", "data.args.train=t"], r"data\.valid_split: corpus textfiles has no split 'valid'"),
        (["data.corpus=multi31k"], r"^command line: data\.corpus: unknown corpus 'multi31k'; did you mean 'multi30k'"),
    ],
)
def test_corpus_options_are_checked_at_load(overrides: list[str], match: str) -> None:
    assert pytest.raises(ConfigError, load_config, overrides=overrides).match(match)


def test_textfiles_takes_any_split_name() -> None:
    cfg = load_config(
        overrides=[
            "data.corpus=textfiles",
            "data.args={train: t, dev: d, test2: [a.en, a.de]}",
            "data.valid_split=dev",
            "data.test_split=test2",
        ]
    )
    assert cfg.data.args.dev == "d"


def test_positions_must_cover_max_len() -> None:
    msg = _one_line_error(overrides=["model.max_positions=16", "data.max_len=256"])
    assert msg.startswith("command line: model.max_positions: 16 positions cannot hold a data.max_len=256 sentence")
    assert "(257)" in msg and "raise model.max_positions or lower data.max_len" in msg


def test_positions_must_cover_the_longest_translation(tmp_path: Path) -> None:
    exp = tmp_path / "exp.yaml"
    exp.write_text("model:\n  max_positions: 300\n")
    msg = _one_line_error(exp)  # max_len 256 fits, but decoding may reach 1.0 * 257 + 50 = 307 positions
    assert msg.startswith(f"{exp}: model.max_positions: 300 positions cannot hold the longest translation")
    assert "eval.max_len_a * 257 + eval.max_len_b = 307" in msg
    assert load_config(exp, overrides=["eval.max_len_b=43"]).model.max_positions == 300  # 257 + 43 = 300 fits


def test_from_dict_rebuilds_without_checking_again(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = load_config(overrides=["model.n_heads=4", "data.args.n_train=10"])
    stored = to_dict(cfg)
    monkeypatch.setattr(ablate.config.check._Checker, "fail", lambda *a, **k: pytest.fail("checked again"))
    assert from_dict(stored) == cfg
    with pytest.raises(ConfigError, match=r"run/config\.yaml: unknown key 'model\.n_head'"):
        from_dict({"model": {"n_head": 2}}, source="run/config.yaml")  # still structural: keys and types


@pytest.mark.parametrize("name", CORPORA.names())
def test_every_corpus_declares_options_its_defaults_pass(name: str) -> None:
    cls = CORPORA.get(name)
    required = {k: "x" for k, o in cls.options.items() if o.required}
    options = resolve_options(name, cls, required)
    assert set(cls.split_names_for(options)) >= {"train"}


def test_the_corpus_registry_and_its_checks_import_no_torch() -> None:
    code = (
        "import sys\n"
        "from ablate.data.catalog import CORPORA, check_corpus\n"
        "import ablate.data, ablate.config.check\n"
        "check_corpus('builtin', {'n_train': 5}, {'data.valid_split': 'valid'})\n"
        "assert len(CORPORA) >= 4\n"
        "print(sorted(m for m in ('torch', 'lightning', 'sentencepiece') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def _imports(module_file: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(module_file.read_text(encoding="utf-8"))):  # lazy imports count too
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_corpus_registration_has_no_import_cycle() -> None:
    data = ROOT / "ablate" / "data"
    assert "ablate.data.wmt14" not in _imports(data / "corpora.py")  # no registration by a bottom import
    registry = _imports(data / "registry.py")
    assert not {"ablate.data.corpora", "ablate.data.wmt14", "ablate.data.catalog"} & registry
    assert "torch" not in registry
    for impl in ("corpora.py", "wmt14.py"):
        assert "ablate.data.registry" in _imports(data / impl) and "ablate.data.catalog" not in _imports(data / impl)


def test_model_registries_do_not_import_the_config() -> None:
    model = ROOT / "ablate" / "model"
    for name in ("positional.py", "attention.py", "norm.py", "ffn.py", "slots.py", "transformer.py"):
        # the torch-free catalogue (config.variants, config.size, config.schema) imports no model code;
        # loading and checking (config.load, config.check) import the model registries to check names:
        # a cycle if the model imported them back.
        back = {
            m for m in _imports(model / name) if m in ("ablate.config", "ablate.config.load", "ablate.config.check")
        }
        assert not back, name


def test_special_ids_are_defined_once() -> None:
    from ablate.data import special, tokenizer

    assert (tokenizer.PAD_ID, tokenizer.UNK_ID, tokenizer.BOS_ID, tokenizer.EOS_ID) == (0, 1, 2, 3)
    assert tokenizer.EOS_ID is special.EOS_ID
    for folder in ("data", "model"):
        for path in (ROOT / "ablate" / folder).glob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            assigned = {
                t.id
                for n in ast.walk(tree)
                if isinstance(n, ast.Assign)
                for t in n.targets
                if isinstance(t, ast.Name) and t.id.endswith("_ID")
            }
            assert not assigned or path.name == "special.py", f"{path.name} defines {assigned}"


@pytest.mark.parametrize(
    ("override", "line"),
    [
        ("logging.tags={a: 1}", "command line: logging.tags: must be a list"),
        ("data.args=[1, 2]", "command line: data.args: must be a mapping"),
        ("logging.tags=${model.d_model}", "command line: logging.tags: Invalid value assigned: int is not a"),
        ("model.d_ff=${model.nope}", "command line: model.d_ff: Interpolation key 'model.nope' not found"),
    ],
)
def test_a_value_of_the_wrong_kind_is_one_line(override: str, line: str) -> None:
    # OmegaConf raises a bare TypeError ("Cannot merge incompatible container types") for the first two,
    # and its interpolation errors only when the config is resolved: each was a traceback from e.g.
    # `ablate train experiments/mini.yaml "logging.tags={a: 1}"` (found by tests/test_config_compose.py)
    with pytest.raises(ConfigError) as err:
        load_config(ROOT / "experiments" / "mini.yaml", overrides=[override])
    assert str(err.value).startswith(line) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("layer", "key", "kind"),
    [
        ({"model": 5}, "model", "mapping"),
        ({"data": "x"}, "data", "mapping"),
        ({"train": [1, 2]}, "train", "mapping"),
        ({"eval": True}, "eval", "mapping"),
        ({"logging": {"tags": 5}}, "logging.tags", "list"),
        ({"logging": {"tags": {"a": 1}}}, "logging.tags", "list"),
    ],
)
def test_a_value_of_the_wrong_kind_names_its_key(tmp_path: Path, layer: dict, key: str, kind: str) -> None:
    """A section given a number (OmegaConf's error has no key and no message) or a list field given a
    number says which key and what it must be, from a file and from the command line alike."""
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(layer))
    from_file = _one_line_error(exp)
    assert from_file == f"{exp}: {key}: must be a {kind} (see the schema's default)"
    dotted, value = key, layer
    for part in key.split("."):
        value = value[part]
    from_line = _one_line_error(None, overrides=[f"{dotted}={yaml.safe_dump(value, default_flow_style=True).strip()}"])
    assert from_line == f"command line: {key}: must be a {kind} (see the schema's default)"


def test_a_folder_or_an_unreadable_file_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _one_line_error(tmp_path) == f"{tmp_path}: a folder, not a config file (name a .yaml file in it)"
    exp = tmp_path / "exp.yaml"
    exp.write_text("model: {d_model: 64}\n")

    def refuse(self: Path, *args: object, **kwargs: object) -> str:
        raise PermissionError(13, "Permission denied")  # what chmod 000 gives a user who is not root

    monkeypatch.setattr(Path, "read_text", refuse)
    assert _one_line_error(exp) == f"{exp}: cannot be read (Permission denied); check its permissions"


def test_an_output_dir_where_no_run_can_go_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ablate.cli import main

    (tmp_path / "afile").write_text("x")
    assert main(["train", str(ROOT / "experiments" / "mini.yaml"), f"logging.output_dir={tmp_path / 'afile'}"]) == 2
    err = capsys.readouterr().err.strip()
    where = f"logging.output_dir={tmp_path / 'afile'}"
    assert err == f"error: {where}: cannot create it (a file, not a folder); set it to a writable folder"
