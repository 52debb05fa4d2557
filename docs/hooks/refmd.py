"""The Markdown helpers that every Reference page of docs/hooks/reference.py is written with.

:func:`md` escapes text, :func:`code` makes a code span, :func:`table` a table and :func:`page` a whole page
under its title; :func:`field_comments`, :func:`annotations` and :func:`own_doc` read what a page documents
(a field's ``# ...`` comment, its annotation, a class's own docstring) from the source.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import tokenize
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

GENERATED = (
    "*Generated from the code by `docs/hooks/reference.py` each time the site is built: it cannot fall "
    "behind the code.*"
)

_CODE_SPAN = re.compile(r"(`+)(?:.+?)(?<!`)\1(?!`)")
_ESCAPE = str.maketrans({c: "\\" + c for c in "\\*_[]|"} | {"<": "&lt;", ">": "&gt;"})


def md(text: Any) -> str:
    """``text`` as inline Markdown that shows as written (in a table cell too): characters Markdown would
    read as emphasis, links, HTML or a cell break are escaped outside code spans."""
    text = " ".join(str(text).split())
    out, last = [], 0
    for m in _CODE_SPAN.finditer(text):
        out += [text[last : m.start()].translate(_ESCAPE), m.group(0)]
        last = m.end()
    out.append(text[last:].translate(_ESCAPE))
    return "".join(out)


def code(value: Any) -> str:
    """``value`` as one code span (backticks inside it handled)."""
    text = str(value)
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table; the cells are Markdown already (see :func:`md`)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell or " " for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def page(title: str, *blocks: str) -> str:
    return "\n\n".join([f"# {title}", GENERATED, *(b for b in blocks if b)]) + "\n"


def field_comments(path: Path) -> dict[str, dict[str, str]]:
    """{class name: {field: its comment}} of the dataclass-style fields in a source file: the ``# ...``
    comments on the lines of each annotated assignment in a class body (a trailing comment, or one
    inside the parentheses of a value written over several lines)."""
    source = path.read_text(encoding="utf-8")
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    out: dict[str, dict[str, str]] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        fields = out.setdefault(node.name, {})
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                lines = range(item.lineno, (item.end_lineno or item.lineno) + 1)
                fields[item.target.id] = " ".join(comments[n] for n in lines if n in comments)
    return out


def annotations(path: Path) -> dict[str, dict[str, str]]:
    """{class name: {field: its annotation as written}} of the classes in a source file."""
    out: dict[str, dict[str, str]] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef):
            out[node.name] = {
                item.target.id: ast.unparse(item.annotation)
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
    return out


def own_doc(cls: type) -> str:
    """The class's own docstring (a dataclass without one gets its signature as ``__doc__``: not that)."""
    source = Path(inspect.getfile(cls)).read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            return inspect.cleandoc(ast.get_docstring(node) or "")
    return ""
