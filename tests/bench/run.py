"""``make bench``: run every ``tests/bench/bench_*.py`` and print its figures.

Each bench module has a ``main() -> None`` that prints its own lines: a figure,
its baseline measured in the same run, and their ratio.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(selected: list[str]) -> None:
    for path in sorted(HERE.glob("bench_*.py")):
        if selected and not any(name in path.stem for name in selected):
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(f"== {path.stem}")
        module.main()
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
