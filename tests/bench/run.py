"""``make bench``: run every ``tests/bench/bench_*.py`` and print its figures.

Each bench module has a ``main() -> None`` that prints its own lines: a figure,
its baseline measured in the same run, and their ratio. A figure with a target is also
printed as one verdict line, ``PASS <target>: <figure> (target <value>)`` or ``MISS ...``;
this runner keeps each such line as it passes through and prints them all again at the
end, with their count, so one screen says what holds.
"""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path
from typing import TextIO

HERE = Path(__file__).resolve().parent
VERDICTS = ("PASS ", "MISS ")


class Verdicts(io.TextIOBase):
    """A stdout that writes through to ``out`` and keeps every whole line that starts
    with a verdict, under the bench that printed it."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.bench, self.partial = out, "", ""
        self.kept: list[tuple[str, str]] = []

    def write(self, text: str) -> int:
        self.out.write(text)
        lines = (self.partial + text).split("\n")
        self.partial = lines.pop()
        self.kept += [(self.bench, line) for line in lines if line.startswith(VERDICTS)]
        return len(text)

    def flush(self) -> None:
        self.out.flush()

    def summary(self) -> list[str]:
        """The kept lines, each with its bench, and their count."""
        if self.partial.startswith(VERDICTS):
            self.kept.append((self.bench, self.partial))
            self.partial = ""
        passed = sum(line.startswith("PASS ") for _, line in self.kept)
        missed = len(self.kept) - passed
        return [
            f"== verdicts: {len(self.kept)} targets, {passed} PASS, {missed} MISS",
            *(f"{line}   [{bench}]" for bench, line in self.kept),
        ]


def main(selected: list[str]) -> None:
    out = sys.stdout
    verdicts = Verdicts(out)
    sys.stdout = verdicts
    try:
        for path in sorted(HERE.glob("bench_*.py")):
            if selected and not any(name in path.stem for name in selected):
                continue
            spec = importlib.util.spec_from_file_location(path.stem, path)
            assert spec and spec.loader
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            verdicts.bench = path.stem
            print(f"== {path.stem}")
            module.main()
            sys.stdout.flush()
    finally:
        sys.stdout = out
    for line in verdicts.summary():
        print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
