"""The documents `ablate tokenize` reads: local ``.txt``, ``.jsonl`` and ``.parquet`` files, or a Hugging Face
``datasets`` dataset streamed (so a corpus larger than memory or disk cache is fine).

Every input is checked before anything is written (the file is there and readable, its kind is known,
the text field or column is present in its first record), so a bad one is one line and exit 2. A
record further in that lacks the field is found while reading; its line names the file and line.

A document is one line of a ``.txt`` (or one blank-line-separated paragraph with ``txt_docs="paragraphs"``),
the ``field`` of a JSON line, parquet row or dataset example. Empty and whitespace-only documents are
skipped (they would be a separator alone), so document indices count non-empty documents only. The
order is the inputs' order, then the file's: the shards are a function of the inputs and options.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ablate.data.errors import DataError

KINDS = (".txt", ".jsonl", ".parquet")
TXT_DOCS = ("lines", "paragraphs")
EXTRA_HINT = "pip install 'ablate[lm]'"
PARQUET_BATCH = 1_024  # rows read at a time: memory stays flat however large the file


@dataclass(frozen=True)
class DatasetSpec:
    """A Hugging Face dataset named as ``datasets.load_dataset`` takes it (a hub name or a local folder)."""

    name: str
    config: str | None = None  # the dataset's configuration (e.g. FineWeb's "sample-10BT")
    split: str = "train"  # the dataset's own split to read


@dataclass(frozen=True)
class Sources:
    """The checked inputs: local files, or one streamed dataset; iterate :meth:`documents` any number of times."""

    files: tuple[Path, ...]
    dataset: DatasetSpec | None
    field: str
    txt_docs: str

    def documents(self) -> Iterator[str]:
        """Every non-empty document, in order (each call starts again from the first)."""
        if self.dataset is not None:
            yield from _dataset_documents(self.dataset, self.field)
            return
        for path in self.files:
            yield from _file_documents(path, self.field, self.txt_docs)

    def fingerprint(self) -> dict[str, Any]:
        """What identifies the inputs for a resumed run: names, and for files their size and mtime."""
        if self.dataset is not None:
            spec = self.dataset
            return {"dataset": spec.name, "config": spec.config, "split": spec.split, "field": self.field}
        files = []
        for path in self.files:
            stat = path.stat()
            files.append({"path": str(path), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns})
        return {"files": files, "field": self.field, "txt_docs": self.txt_docs}


def open_sources(
    inputs: list[str], dataset: DatasetSpec | None, field: str = "text", txt_docs: str = "lines"
) -> Sources:
    """Check every input (a DataError, one line, for the first bad one); nothing is read past the first record."""
    if txt_docs not in TXT_DOCS:
        raise DataError(f"--txt-docs {txt_docs!r}: expected one of {', '.join(TXT_DOCS)}")
    if bool(inputs) == (dataset is not None):
        raise DataError("give INPUT files (.txt, .jsonl, .parquet) or --dataset NAME, one of the two")
    if dataset is not None:
        _first_example(dataset, field)
        return Sources((), dataset, field, txt_docs)
    files = tuple(_check_file(Path(name), field) for name in inputs)
    return Sources(files, None, field, txt_docs)


def _check_file(path: Path, field: str) -> Path:
    kind = path.suffix.lower()
    if kind not in KINDS:
        raise DataError(f"{path}: unknown input kind {path.suffix or '(no extension)'!r}; expected {', '.join(KINDS)}")
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if kind == ".parquet":
        _check_parquet(path, field)
    elif kind == ".jsonl":
        first = next(_jsonl_documents(path, field), None)
        if first is None:
            raise DataError(f"{path}: no JSON line in the file")
    else:
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(head) - 4:  # not just a character cut by the 64 KiB read
                raise DataError(f"{path}: not UTF-8 text (byte {exc.start}); convert it first") from None
    return path.resolve()


def _file_documents(path: Path, field: str, txt_docs: str) -> Iterator[str]:
    kind = path.suffix.lower()
    if kind == ".jsonl":
        docs = _jsonl_documents(path, field)
    elif kind == ".parquet":
        docs = _parquet_documents(path, field)
    elif txt_docs == "paragraphs":
        docs = _paragraphs(path)
    else:
        docs = _lines(path)
    for doc in docs:
        if doc.strip():
            yield doc


def _text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line without its line break); a byte that is not UTF-8 is one line naming where."""
    number = 0
    try:
        with open(path, encoding="utf-8", newline=None) as fh:
            for number, line in enumerate(fh, 1):
                yield number, line.rstrip("\n")
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text after line {number}; convert it first") from None


def _lines(path: Path) -> Iterator[str]:
    for _, line in _text_lines(path):
        yield line


def _paragraphs(path: Path) -> Iterator[str]:
    """Blank-line-separated documents; the line breaks inside one are kept."""
    lines = (line for _, line in _text_lines(path))
    for blank, group in itertools.groupby(lines, key=lambda line: not line.strip()):
        if not blank:
            yield "\n".join(group)


def _jsonl_documents(path: Path, field: str) -> Iterator[str]:
    for number, line in _text_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
        yield _field_of(record, field, f"{path}:{number}")


def _field_of(record: Any, field: str, where: str) -> str:
    if not isinstance(record, dict) or field not in record:
        keys = ", ".join(map(str, record)) if isinstance(record, dict) else type(record).__name__
        raise DataError(f"{where}: no field {field!r} (found: {keys}); name the text field with --field")
    text = record[field]
    if text is None:
        return ""
    if not isinstance(text, str):
        raise DataError(f"{where}: field {field!r} is a {type(text).__name__}, not text")
    return text


def _pyarrow_parquet() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(f"reading .parquet needs the pyarrow package: {EXTRA_HINT}") from None
    return pq


def _check_parquet(path: Path, field: str) -> None:
    pq = _pyarrow_parquet()
    try:
        schema = pq.ParquetFile(path).schema_arrow
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a file that is not parquet
        raise DataError(f"{path}: not a parquet file ({_first_line(exc)})") from None
    if field not in schema.names:
        raise DataError(f"{path}: no column {field!r} (found: {', '.join(schema.names)}); name it with --field")
    kind = str(schema.field(field).type)
    if kind not in ("string", "large_string", "string_view"):
        raise DataError(f"{path}: column {field!r} holds {kind}, not text")


def _parquet_documents(path: Path, field: str) -> Iterator[str]:
    pq = _pyarrow_parquet()
    for batch in pq.ParquetFile(path).iter_batches(batch_size=PARQUET_BATCH, columns=[field]):
        for text in batch.column(0).to_pylist():
            yield text or ""


def _load_dataset(spec: DatasetSpec) -> Any:
    try:
        import datasets
    except ImportError:
        raise DataError(f"--dataset needs the datasets package: {EXTRA_HINT}") from None
    try:
        return datasets.load_dataset(spec.name, spec.config, split=spec.split, streaming=True)
    except Exception as exc:  # noqa: BLE001 - not found, no network, a bad config or split: all one line
        raise DataError(f"--dataset {spec.name}: cannot open it ({_first_line(exc)})") from None


def _first_example(spec: DatasetSpec, field: str) -> None:
    try:
        first = next(iter(_load_dataset(spec)), None)
    except DataError:
        raise
    except Exception as exc:  # noqa: BLE001 - the stream's first read fails for the same reasons as opening it
        raise DataError(f"--dataset {spec.name}: cannot read it ({_first_line(exc)})") from None
    if first is None:
        raise DataError(f"--dataset {spec.name}: split {spec.split!r} is empty")
    _field_of(first, field, f"--dataset {spec.name} example 1")


def _dataset_documents(spec: DatasetSpec, field: str) -> Iterator[str]:
    for number, example in enumerate(_load_dataset(spec), 1):
        text = _field_of(example, field, f"--dataset {spec.name} example {number}")
        if text.strip():
            yield text


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
