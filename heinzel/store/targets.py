"""hz's own files are no contract's target: checked where a contract is accepted.

`protected_places` names a home's protected places for `heinzel.capabilities.targets`:
hz's folders in the home (``heinzel/``, ``web/``, ``team/``: `Home.own_dirs`; a folder
of the user's inside the home stays the user's) and the credential store (its folder
``<config dir>/hz/``, or the file ``HZ_CREDENTIALS`` names, whose folder is the user's).
`check_targets` refuses a contract whose ``file:`` output (HZH340) or local input
(HZH341: ``files.read``'s path, ``documents.read``'s doc, a git repository) resolves into
one of them, or into any home's spines, bodies or index; `hz heinzel new` (``--from`` and
a sentence), every amendment (the user's, a chat's, the Heinzelmännchen's own) and
`hz approve` call it. The adapters check again when they read or write (a link planted
after approval).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from heinzel.capabilities.documents import absolute_asset
from heinzel.capabilities.targets import Protected
from heinzel.errors import HeinzelError
from heinzel.store.credentials import credentials_path
from heinzel.store.home import Home
from heinzel.store.sources import PATH_ARGS, absolute_args
from ledger.spine import read_events

if TYPE_CHECKING:
    from heinzel.contract import CompiledContract

__all__ = ["check_targets", "created_origin", "protected_places"]


def protected_places(home: Home, env: Mapping[str, str]) -> Protected:
    """The home's protected places: hz's folders in the home (`Home.own_dirs`) and the
    credential store of ``env``."""
    credentials = credentials_path(env)
    places = [(folder, "hz's home") for folder in home.own_dirs]
    if not env.get("HZ_CREDENTIALS"):
        places.append((credentials.parent, "the credential store's folder"))
    places.append((credentials, "the credential store"))  # its inode: a hard link to it
    return Protected(places)


def created_origin(home: Home, heinzel_id: str) -> Path:
    """The folder a Heinzelmännchen was created from (``heinzel.created``'s ``origin``),
    which its contract's relative paths resolve against."""
    for event in read_events(home.spine_path(heinzel_id)):
        if event.kind == "heinzel.created":
            return Path(str(event.data.get("origin") or "."))
    return Path()


def check_targets(contract: CompiledContract, origin: Path, protected: Protected) -> None:
    """HZH340 for a ``file:`` output, HZH341 for a local input, that resolves (against
    ``origin``, the contract's folder) into one of hz's own places."""
    # the contract's types load pydantic: `protected_places` (a tick's) needs none of it
    from heinzel.contract.types import split_method

    for name, output in sorted(contract.hz.outputs.items()):
        scheme, _, written = absolute_asset(output.asset, origin).partition(":")
        why = protected.refusal(written) if scheme == "file" and written else None
        if why is not None:
            raise HeinzelError(
                "HZH340",
                f"output {name}: {output.asset} resolves to {why}, where no draft goes",
                "write the output into a document of your own, e.g. asset: file:report.md",
            )
    for name, spec in sorted(contract.hz.inputs.items()):
        capability, method = split_method(spec.from_)
        arg = PATH_ARGS.get((capability, method))
        value = absolute_args(capability, method, spec.args, origin).get(arg) if arg else None
        if not isinstance(value, str) or not value:
            continue
        scheme, _, asset = value.partition(":")
        path = value if arg != "doc" else asset if scheme == "file" else ""
        why = protected.refusal(path) if path else None
        if why is not None:
            raise HeinzelError(
                "HZH341",
                f"input {name}: {value} resolves to {why}, which no input reads",
                "read a file of your own; hz's spines, bodies, index and keys are never inputs",
            )
