"""The adapters every home has, with no ``[adapters.*]`` table: files, git, documents,
and the worked example's fixture sources when a folder is given.

Kept apart from `heinzel.capabilities.configured`, whose table models load pydantic: a
tick that fetches one file input over a home with no adapter tables builds these alone
(issue 42: a nothing-moved tick)."""

from __future__ import annotations

from pathlib import Path

from heinzel.capabilities.documents import LocalDocuments
from heinzel.capabilities.files import FilesCapability
from heinzel.capabilities.fixture_sources import fixture_sources
from heinzel.capabilities.git import GitCapability
from heinzel.capabilities.targets import Protected

__all__ = ["builtin_adapters"]


def builtin_adapters(
    *,
    approver: str,
    fixtures: Path | None = None,
    asset_names: Path | None = None,
    protected: Protected | None = None,
) -> dict[str, object]:
    """files, git and documents; the fixture sources when ``fixtures`` is set.
    ``protected``: hz's own places, which files and documents never read or write."""
    adapters: dict[str, object] = {
        "files": FilesCapability(protected=protected),
        "git": GitCapability(),
        "documents": LocalDocuments(approver, names=asset_names, protected=protected),
    }
    if fixtures is not None:
        adapters.update(fixture_sources(fixtures, protected))
    return adapters
