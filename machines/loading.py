"""Loading large libraries (pydantic-ai, a provider's SDK, a host's agent module) once per
process, cheaply.

Importing pydantic-ai makes hundreds of thousands of objects; with the cyclic garbage
collector on, every few hundred of them start a collection that walks what exists, so
the collector costs a third of an offline turn's start. `loading` pauses it while a
block imports, then freezes what exists (`gc.freeze`) if the block loaded modules, so
no later collection walks the libraries' objects again. A block that loads nothing new
freezes nothing: a long-lived process (the daemon, `hz system serve`) freezes once per
library it loads, never once per turn.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["loading"]


@contextmanager
def loading() -> Iterator[None]:
    """Run a block that may import large libraries with the collector paused; if it loaded
    modules, freeze every object that exists when it ends."""
    before = len(sys.modules)
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if len(sys.modules) > before:
            gc.freeze()
        if enabled:
            gc.enable()
