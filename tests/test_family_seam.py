"""One seam per kind of model: outside the families (``ablate/family.py``, ``ablate/families/``), no line of
the package asks which architecture a config, model, batch or table has; it asks the family instead.

The questions are found by their spellings: comparing ``arch`` (or ``stack``) to a name, reading
``"arch"`` out of a mapping, ``isinstance`` against a model class, a table's ``language_model`` flag, or
``"src" in batch``. A line that *sets* an architecture (the model contract building a language model of a
variant) is not a question. Run ``python tests/test_family_seam.py`` to print the lines found.
"""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ablate"
FAMILY_FILES = ("family.py", "families/")
QUESTION = re.compile(
    r"""\barch\s*[!=]=\s*["']"""  # arch == "decoder"
    r"""|["']arch["']\s*\)\s*[!=]="""  # .get("arch") == ...
    r"""|\bstack\s*[!=]=\s*["']"""  # stack == "lm"
    r"""|isinstance\([^)]*\b(LanguageModel|Transformer|MaskedLM)\b"""  # which model class
    r"""|\blanguage_model\b"""  # a table's old flag
    r"""|["'](src|tgt_in)["']\s+(not\s+)?in\s+batch"""  # which batch shape
)
MAX_QUESTIONS = 6  # the ceiling; there are none today (31 before the families)


def questions(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(FAMILY_FILES):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if QUESTION.search(line.split("#")[0]):
                found.append(f"{rel}:{number}: {line.strip()}")
    return found


def test_the_package_asks_the_family_not_the_architecture() -> None:
    assert len(questions()) <= MAX_QUESTIONS, "\n".join(questions())
    assert questions() == []  # none left: a new one is a branch a third family would have to add to


def test_the_finder_finds_each_spelling(tmp_path: Path) -> None:
    spellings = [
        'if cfg.model.arch == "decoder":',
        'lm = (config.get("model") or {}).get("arch") == "decoder"',
        'if stack == "lm":',
        "lm = isinstance(model, LanguageModel)",
        'unit = "blocks" if table.language_model else "sentences"',
        'inputs = (batch["src"],) if "src" in batch else ()',
    ]
    (tmp_path / "a.py").write_text("\n".join(spellings) + "\n")
    (tmp_path / "families").mkdir()
    (tmp_path / "families" / "x.py").write_text(spellings[0] + "\n")  # a family may ask of itself
    assert len(questions(tmp_path)) == len(spellings)


if __name__ == "__main__":
    print("\n".join(questions()) or "no architecture questions outside the families")
