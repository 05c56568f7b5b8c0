"""Shared fixtures of the ledger tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture
def hostile_umask() -> Iterator[None]:
    """Run a test with umask 000, under which new files would be world-writable."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)
