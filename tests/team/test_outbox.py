"""The outbox keeps every refused receipt, each beside its reason."""

from __future__ import annotations

from pathlib import Path

from heinzel.team.outbox import Outbox


def test_refused_receipts_never_overwrite_each_other(tmp_path: Path) -> None:
    """The outbox's numbers start again once it is empty, so two receipts refused at
    different ticks carry the same name: both are kept in refused/, each with a reason."""
    outbox = Outbox(tmp_path / "team")
    for _ in range(3):
        outbox.put([{"id": "rc-x"}])
        [path] = sorted(outbox.dir.glob("*.json"))
        path.write_text("{torn", encoding="utf-8")  # a receipt no longer readable
        assert outbox.pending() == []
    assert outbox.refused() == 3
    refusals = outbox.refusals()
    assert len({r["file"] for r in refusals}) == 3
    assert all(r["reason"] == "not a readable receipt" for r in refusals)
