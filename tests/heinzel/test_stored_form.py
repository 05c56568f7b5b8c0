"""A turn reads an approved version's compiled form from ``contract/v<n>.json`` instead of
compiling its text again, and compiles when that form is missing or not the text's."""

from __future__ import annotations

import json
from pathlib import Path

from heinzel.contract.compiler import (
    CompiledContract,
    compile_contract,
    fingerprint,
    stored_fingerprint,
)
from heinzel.errors import ContractError
from heinzel.service import Service
from heinzel.store.contracts import approved_text, compiled_version


def _approved(service: Service, weekly: Path) -> tuple[str, str]:
    [row] = service.create_from_files([str(weekly)])
    service.approve(str(row["name"]))
    return str(row["id"]), str(service.queries.row(str(row["id"]))["fingerprint"])


def test_the_stored_form_is_read_without_compiling(service: Service, weekly: Path) -> None:
    """With ``v1.json`` in place the approved contract comes back without a compile."""
    heinzel_id, approved = _approved(service, weekly)
    compiled_version.cache_clear()
    compiled, text = approved_text(service.home, heinzel_id, 1, approved)
    assert compiled_version.cache_info().misses == 0
    assert compiled == compiled_version(text, 1)
    assert compiled.fingerprint == approved


def test_an_unreadable_stored_form_is_compiled_again(service: Service, weekly: Path) -> None:
    """A damaged ``v1.json`` costs a compile of the text, never the turn."""
    heinzel_id, approved = _approved(service, weekly)
    service.home.contract_json_path(heinzel_id, 1).write_text("{not json", encoding="utf-8")
    compiled_version.cache_clear()
    compiled, _text = approved_text(service.home, heinzel_id, 1, approved)
    assert compiled_version.cache_info().misses == 1
    assert compiled.fingerprint == approved


def test_the_stored_form_keeps_the_declared_order(service: Service, weekly: Path) -> None:
    """The inputs come back in the order the contract declares them (the model reads them
    in that order), not sorted."""
    heinzel_id, approved = _approved(service, weekly)
    compiled_version.cache_clear()
    compiled, text = approved_text(service.home, heinzel_id, 1, approved)
    declared = list(compiled_version(text, 1).hz.inputs)
    assert declared != sorted(declared)  # the fixture would not tell orders apart otherwise
    assert list(compiled.hz.inputs) == declared


def test_a_form_written_with_sorted_keys_is_compiled_again(service: Service, weekly: Path) -> None:
    """A ``v1.json`` from before the order was kept (sorted keys, no ``order``) is not run."""
    heinzel_id, approved = _approved(service, weekly)
    path = service.home.contract_json_path(heinzel_id, 1)
    payload = json.loads(path.read_text(encoding="utf-8"))
    del payload["order"]
    path.write_text(json.dumps(payload, sort_keys=True, indent=1), encoding="utf-8")
    compiled_version.cache_clear()
    compiled, text = approved_text(service.home, heinzel_id, 1, approved)
    assert compiled_version.cache_info().misses == 1
    assert list(compiled.hz.inputs) == list(compiled_version(text, 1).hz.inputs)


def test_a_form_edited_after_it_was_read_is_not_believed(service: Service, weekly: Path) -> None:
    """A ``v1.json`` read once in this process and then edited (a goal changed, its
    fingerprint field left as approved) is checked again, found not to be the approved
    intent, and the text is compiled: the process keeps a verdict per file content."""
    heinzel_id, approved = _approved(service, weekly)
    first, _ = approved_text(service.home, heinzel_id, 1, approved)
    path = service.home.contract_json_path(heinzel_id, 1)
    payload = json.loads(path.read_text(encoding="utf-8"))
    goal = payload["compiled"]["body"]["goal"]["text"]
    payload["compiled"]["body"]["goal"]["text"] = goal + " and mail it to everyone"
    path.write_text(json.dumps(payload), encoding="utf-8")
    compiled_version.cache_clear()
    compiled, _ = approved_text(service.home, heinzel_id, 1, approved)
    assert compiled_version.cache_info().misses == 1
    assert compiled.body.goal.text == first.body.goal.text == goal


def test_a_stored_schedule_that_is_no_cron_expression_is_not_believed(
    service: Service, weekly: Path
) -> None:
    """A stored form's schedule is not given to croniter again, but one edited into no
    cron expression is no longer the approved intent: the text is compiled and run."""
    heinzel_id, approved = _approved(service, weekly)
    path = service.home.contract_json_path(heinzel_id, 1)
    payload = json.loads(path.read_text(encoding="utf-8"))
    schedule = payload["compiled"]["frontmatter"]["hz"]["schedule"]
    payload["compiled"]["frontmatter"]["hz"]["schedule"] = "61 99 * * *"
    path.write_text(json.dumps(payload), encoding="utf-8")
    compiled_version.cache_clear()
    compiled, _ = approved_text(service.home, heinzel_id, 1, approved)
    assert compiled_version.cache_info().misses == 1
    assert compiled.hz.schedule == schedule


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_the_stored_fingerprint_is_the_compilers() -> None:
    """For every contract the fixtures hold, the fingerprint computed from a stored form
    (`stored_fingerprint`, through the compiled contract's serializer) is the one the
    compiler gave it from its own frontmatter and body."""
    checked = 0
    for path in sorted(FIXTURES.rglob("*.prose.md")):
        try:
            compiled = compile_contract(path.read_text(encoding="utf-8"), source=str(path))
        except ContractError:
            continue
        kept = CompiledContract.from_json(compiled.to_json())
        assert stored_fingerprint(kept) == compiled.fingerprint, path
        assert fingerprint(kept.frontmatter, kept.body) == compiled.fingerprint, path
        checked += 1
    assert checked >= 20
