"""Reading a ``.prose.md`` text: split frontmatter from body, load YAML with line numbers.

`split` finds the frontmatter between the opening and closing ``---`` lines; `load_yaml`
parses it with PyYAML's safe loader and builds a `LineMap` from the composed node tree,
so any key path (``("hz", "inputs", "merged_prs", "window")``) maps to the file line it
was written on. Duplicate keys and anchors/aliases are refused here, because PyYAML would
silently keep the last duplicate and aliases can multiply a small file into a huge one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from heinzel.errors import ContractError
from ledger.records import frozen_record

if TYPE_CHECKING:  # PyYAML loads when a frontmatter is parsed (a turn reads a stored form)
    import yaml

__all__ = ["LineMap", "Path_", "Split", "load_yaml", "split"]

Path_ = tuple[str | int, ...]
"""A key path into the frontmatter: mapping keys as text, sequence positions as ints."""

_FENCE = "---"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@frozen_record
class Split:
    """A text cut in two: the YAML between the fences and the Markdown after them.

    ``yaml_line`` is the file line of the YAML's first line; ``body_line`` that of the
    body's first line (both 1-based).
    """

    yaml_text: str
    body: str
    yaml_line: int
    body_line: int


def split(text: str, *, source: str) -> Split:
    """Cut ``text`` at its frontmatter fences, or raise ``HZC001``."""
    lines = _LINE_BREAK.split(text.removeprefix("\ufeff"))
    if not lines or lines[0].rstrip() != _FENCE:
        raise ContractError(
            "HZC001",
            "the file does not start with YAML frontmatter",
            "start the file with a line '---', the frontmatter (name, kind, hz:), and '---'",
            file=source,
            line=1,
        )
    for index in range(1, len(lines)):
        if lines[index].rstrip() in (_FENCE, "..."):
            return Split(
                yaml_text="\n".join(lines[1:index]),
                body="\n".join(lines[index + 1 :]),
                yaml_line=2,
                body_line=index + 2,
            )
    raise ContractError(
        "HZC001",
        "the frontmatter is not closed",
        "end the frontmatter with a line '---' before the Markdown body",
        file=source,
        line=1,
    )


class LineMap:
    """File lines of the key paths of one YAML document."""

    def __init__(self, offset: int) -> None:
        self._offset = offset
        self._lines: dict[Path_, int] = {(): offset}

    def add(self, path: Path_, yaml_line: int) -> None:
        """Record that ``path`` starts on 0-based line ``yaml_line`` of the YAML."""
        self._lines[path] = yaml_line + self._offset

    def line(self, path: Sequence[str | int]) -> int:
        """The line of ``path``, or of its longest recorded prefix."""
        key = tuple(path)
        while key not in self._lines:
            key = key[:-1]
        return self._lines[key]


def load_yaml(text: str, *, offset: int, source: str) -> tuple[Any, LineMap]:
    """Parse ``text`` (safe loader) into plain data and the `LineMap` of its keys.

    Raises ``HZC002`` for YAML that does not parse, with the line PyYAML reports, and for
    duplicate keys, anchors or aliases.
    """
    import yaml

    lines = LineMap(offset)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is not None:
            _walk(node, (), lines, set(), source)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = None if mark is None else mark.line + offset
        problem = exc.problem or "the YAML does not parse"
        raise ContractError(
            "HZC002", f"invalid YAML: {problem}", _YAML_HINT, file=source, line=line
        ) from None
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ContractError("HZC002", f"invalid YAML: {problem}", _YAML_HINT, file=source) from None
    return data, lines


_YAML_HINT = "fix the frontmatter's YAML (indentation, quotes around values with ':' or '#')"


def _walk(node: yaml.Node, path: Path_, lines: LineMap, seen: set[int], source: str) -> None:
    import yaml

    if id(node) in seen:
        raise ContractError(
            "HZC002",
            "anchors and aliases are not allowed in a contract",
            "write each value out in full",
            file=source,
            line=lines.line(path[:-1] if path and isinstance(path[-1], int) else path),
        )
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key in keys:
                raise ContractError(
                    "HZC003",
                    f"the key {key!r} is written twice",
                    "keep one of them; YAML would silently drop the first",
                    file=source,
                    line=key_node.start_mark.line + lines.line(()),
                )
            keys.add(key)
            lines.add((*path, key), key_node.start_mark.line)
            _walk(value_node, (*path, key), lines, seen, source)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines.add((*path, index), item.start_mark.line)
            _walk(item, (*path, index), lines, seen, source)
