"""What loads on first use: a package's names (PEP 562) and a module's patterns.

A package's ``__init__`` lists where each public name lives and binds
``__getattr__ = lazy_exports(__name__, WHERE, globals())``: importing the package, or one
name of it, then loads only the module that name is in, so a command starts with what it
uses (ledger, machines and heinzel's contract package do this).

``_name_re = lazy_pattern(r"...")`` is a regular expression a module compiles on its first
``_name_re()``, not at import: about 0.5 M instructions each that a process which never
matches with it (a drafted wake and most of hz's patterns) does not pay
(``tests/engine/test_wake_imports.py``, docs/daemon.md).
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable, Mapping, MutableMapping
from typing import AnyStr

__all__ = ["lazy_exports", "lazy_pattern"]


def lazy_exports(
    package: str, where: Mapping[str, str], namespace: MutableMapping[str, object]
) -> Callable[[str], object]:
    """A module ``__getattr__`` that imports ``where[name]`` on first use and keeps the value
    in ``namespace`` (the package's globals); a name that maps to ``package.name`` itself is
    that submodule."""

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        loaded = importlib.import_module(module)
        value = loaded if module == f"{package}.{name}" else getattr(loaded, name)
        namespace[name] = value
        return value

    return __getattr__


def lazy_pattern(pattern: AnyStr, flags: int = 0) -> Callable[[], re.Pattern[AnyStr]]:
    """A getter of ``re.compile(pattern, flags)``, compiled on its first call and kept
    (``functools.cache``: ``cache_info()`` says whether it was)."""
    return functools.cache(functools.partial(re.compile, pattern, flags))
