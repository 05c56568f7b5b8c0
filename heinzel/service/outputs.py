"""Where a contract's drafts will go, checked when the user creates or approves it.

A ``file:`` output is created by its first draft (`heinzel.capabilities.documents`), so the
one thing that must already be true is its folder: a missing one is refused at ``hz
heinzel new`` and ``hz approve`` (HZH251) with the command that fixes it, rather than
failing the first turn after the model ran. An asset in another scheme (``doc:``) has no
adapter that writes it yet: ``new`` and ``approve`` of a contract that publishes drafts
warn about it (HZH252; every draft of it would fail HZH130). A warning, not a refusal,
because the spec's worked example names its report ``doc:checkout/weekly-report``.

Before either, hz's own files: an output or a local input that resolves into the home's
own folders, the credential store or any home's spines, bodies and index is refused
(HZH340, HZH341: `heinzel.store.targets`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from heinzel.capabilities.documents import absolute_asset, remember_asset
from heinzel.capabilities.targets import Protected
from heinzel.contract import CompiledContract, compile_contract
from heinzel.errors import HeinzelError
from heinzel.store.home import Home
from heinzel.store.targets import check_targets, created_origin

__all__ = ["check_outputs", "check_stored_outputs", "grant", "remember_outputs"]


def check_outputs(contract: CompiledContract, origin: Path, protected: Protected) -> list[str]:
    """HZH340 and HZH341 for a target among hz's own files (``protected``), HZH251 for a
    ``file:`` output whose folder does not exist; the warnings (HZH252) for assets no
    adapter writes, if the contract publishes drafts."""
    check_targets(contract, origin, protected)
    drafts = "documents.place_draft" in contract.hz.publishes
    warnings = []
    for name, output in sorted(contract.hz.outputs.items()):
        asset = absolute_asset(output.asset, origin)
        scheme, _, written = asset.partition(":")
        if scheme != "file":
            if drafts:
                warnings.append(
                    f"HZH252: output {name}: no adapter writes {scheme}: assets "
                    f"({output.asset}), so its drafts will fail; write it as a local file, "
                    f"e.g. asset: file:{name}.md"
                )
            continue
        folder = Path(written).expanduser().parent
        if not folder.is_dir():
            raise HeinzelError(
                "HZH251",
                f"output {name}: the folder {folder} of {output.asset} does not exist",
                f"create it (mkdir -p {folder}) or fix the output's asset path",
            )
    return warnings


def check_stored_outputs(
    home: Home, heinzel_id: str, version: int, protected: Protected
) -> list[str]:
    """`check_outputs` of a stored version, against the folder it was created from."""
    text = home.contract_text_path(heinzel_id, version).read_text(encoding="utf-8")
    origin = created_origin(home, heinzel_id)
    return check_outputs(compile_contract(text, source=f"v{version}"), origin, protected)


def remember_outputs(home: Home, heinzel_id: str, version: int) -> None:
    """Record each ``file:`` output of a stored version, made absolute against the folder it
    was created from, in ``<home>/heinzel/assets`` (`remember_asset`): done when the version
    is approved, before its line, so its turns' drafts write no record of their own."""
    text = home.contract_text_path(heinzel_id, version).read_text(encoding="utf-8")
    origin = created_origin(home, heinzel_id)
    for output in compile_contract(text, source=f"v{version}").hz.outputs.values():
        asset = absolute_asset(output.asset, origin)
        if asset.partition(":")[0] == "file":
            remember_asset(home.heinzel_dir / "assets", asset)


def grant(path: Path) -> dict[str, Any]:
    """What approving the contract at ``path`` grants, as a user reads it before approving:
    its schedule, what it reads (with the args), keeps, publishes, who approves, its caps,
    and the file itself."""
    hz = compile_contract(path.read_text(encoding="utf-8"), source=str(path)).hz
    return {
        "contract_file": str(path),
        "schedule": f"{hz.schedule} ({hz.timezone})" if hz.schedule else None,
        "requires": list(hz.requires),
        "inputs": {
            name: {"from": spec.from_, "args": dict(spec.args)} for name, spec in hz.inputs.items()
        },
        "outputs": {name: out.asset for name, out in hz.outputs.items()},
        "publishes": list(hz.publishes),
        "approvers": list(hz.approvers),
        "max_usd": hz.agent.max_usd,
    }
