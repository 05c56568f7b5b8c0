"""Package surfaces that load a name's module on first use (PEP 562).

A package's ``__init__`` lists where each public name lives and binds
``__getattr__ = lazy_exports(__name__, WHERE, globals())``: importing the package, or one
name of it, then loads only the module that name is in, so a command starts with what it
uses (ledger, machines and heinzel's contract package do this).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping

__all__ = ["lazy_exports"]


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
