"""``hz heinzel migrate PATH...``: today's contracts become Heinzelmännchen (ADR 0049, plan
step 2).

Every ``.prose.md`` responsibility under the paths (a file, or a folder searched in name
order) becomes a Heinzelmännchen at v1, asleep: created and approved at once, as it was
already in use, its ``file:`` documents found relative to its folder as ``hz heinzel new``
finds them. A file that does not compile, or whose creation or approval hz refuses, is
listed with its code and skipped; the others go on. One already migrated (its name in its
namespace, from the same folder) is left as it is, so a second run writes nothing: the
home's files keep their bytes. ``dry_run`` compiles and checks, and writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heinzel.errors import HeinzelError
from ledger.errors import HzError

if TYPE_CHECKING:
    from heinzel.service import Service

__all__ = ["migrate"]

SUFFIX = ".prose.md"


def contract_files(paths: Sequence[str], home: Path) -> list[Path]:
    """Each ``.prose.md`` under ``paths`` once, in the order given (a folder's in name
    order, hz's own home left out); HZH461 for a path that is not there, HZH462 when none
    is found."""
    found: dict[Path, None] = {}
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise HeinzelError(
                "HZH461",
                f"{raw}: no such file or folder; nothing was migrated",
                "give the folders or .prose.md files of the contracts in use",
            )
        for file in _walk(path.resolve(), home.resolve()):
            found.setdefault(file, None)
    if not found:
        raise HeinzelError(
            "HZH462",
            f"no {SUFFIX} file under {', '.join(paths)}; nothing was migrated",
            f"give the folders that hold the contracts ({SUFFIX} files)",
        )
    return list(found)


def _walk(path: Path, home: Path) -> Iterator[Path]:
    if path.is_file():
        if path.name.endswith(SUFFIX):
            yield path
        return
    for file in sorted(path.rglob(f"*{SUFFIX}")):
        if file.is_file() and not file.is_relative_to(home):
            yield file


def migrate(service: Service, paths: Sequence[str], *, dry_run: bool = False) -> dict[str, Any]:
    """What became of each file: ``migrated`` (id, name), ``already`` (id, name) or
    ``skipped`` (code, message); with ``dry_run``, ``would`` instead of ``migrated``."""
    from heinzel.contract import compile_contract
    from heinzel.contract.compiler import read_contract_text
    from heinzel.service.outputs import check_outputs

    files = contract_files(paths, service.home.root)
    done: list[dict[str, Any]] = []
    claimed: set[tuple[str, str]] = set()
    for file in files:
        one: dict[str, Any] = {"file": str(file)}
        done.append(one)
        try:
            contract = compile_contract(read_contract_text(file, str(file)), source=str(file))
            name, namespace = contract.name, contract.frontmatter.hz.namespace
            one["name"] = name
            row = service.queries.find_by_name(namespace, name) if service.home_exists else None
            if row is not None and _origin(service, str(row["id"])) == str(file.parent):
                one.update(result="already", id=row["id"], state=row["state"])
                continue
            if row is not None or (namespace, name) in claimed:
                raise HeinzelError(
                    "HZH072",
                    f"the name {name!r} is taken in namespace {namespace} by a contract "
                    "of another folder",
                    "rename one of them (its name: line), then migrate again",
                )
            claimed.add((namespace, name))
            if dry_run:
                check_outputs(contract, file.parent, service.protected)
                one["result"] = "would"
                continue
            (created,) = service.create_from_files([str(file)])
            one["id"] = created["id"]
            approved = service.approve(str(created["id"]))
            one.update(result="migrated", state=approved["state"])
        except HzError as error:
            one.update(result="skipped", code=error.code, message=error.message)
    counts = {r: sum(1 for d in done if d["result"] == r) for r in _RESULTS}
    return {"files": done, "dry_run": dry_run, **counts}


_RESULTS = ("migrated", "would", "already", "skipped")


def _origin(service: Service, heinzel_id: str) -> str | None:
    found = service.read_db.execute(
        "SELECT origin FROM tick_origins WHERE heinzel = ?", [heinzel_id]
    ).fetchone()
    return None if found is None else str(found[0])
