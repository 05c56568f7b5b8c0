"""A host's own words: the dispositions its act step reports and the causes that wake it.

The turn machine's own names (steps, event kinds, skip and abandon reasons,
``woken_by``) are fixed in `machines.vocabulary`. What a turn *did* and what *woke*
it belong to the host: a deploy bot's act reports ``deployed``, and a release
wakes it, not ``asked``. A host registers them once as a `Vocabulary` and passes
it in `Settings.vocabulary` and to each `Wake`; hz's words are one such
registration (`HZ`, the default).

A vocabulary is compatibility data, like hz's: frozen per host, its lists only
grow, a name is never reused for a new meaning. A name that must change is
renamed: ``renamed={"old": "new"}`` and every reader (`fold`) sees the new name
where the spine holds the old one; the file is never rewritten. A later version
names the one before as ``earlier``, and is refused (HZM080) when it drops a word
of it (neither listed nor renamed), keeps no rename of it, changes the name, or
does not raise the version. A turn records its vocabulary's name and version in
its pins, and is resumed only under the same name (HZM009) and a version no older
than its own (HZM081).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field, replace
from types import MappingProxyType
from typing import Any

from ledger.event import Event
from ledger.records import frozen_record
from machines.errors import MachineError
from machines.vocabulary import ACT_DISPOSITIONS, CAUSES, DISPOSITIONS, VOCABULARY_VERSION

_NAME = re.compile(r"[a-z][a-z0-9-]{0,39}")
_MACHINE_DISPOSITIONS = frozenset(DISPOSITIONS) - frozenset(ACT_DISPOSITIONS)


def _bad(what: str) -> MachineError:
    return MachineError(
        "HZM009",
        f"this vocabulary cannot be registered: {what}",
        "names are lowercase letters, digits and '-', unique, and not skipped, failed "
        "or abandoned (the machine's own)",
    )


@frozen_record
class Vocabulary:
    """One host's words: act dispositions, causes in priority order, and renames."""

    name: str
    version: int
    dispositions: tuple[str, ...]
    causes: tuple[str, ...]
    renamed: Mapping[str, str] = field(default_factory=dict)
    earlier: Vocabulary | None = field(default=None, compare=False, repr=False)
    """The version before this one, whose words this one must keep (HZM080)."""

    def __post_init__(self) -> None:
        words = (self.name, *self.dispositions, *self.causes, *self.renamed, *self.renamed.values())
        if not all(isinstance(w, str) and _NAME.fullmatch(w) for w in words):
            raise _bad(f"a name of {self.name!r} is not a lowercase word")
        if not self.dispositions or not self.causes:
            raise _bad("it needs at least one disposition and one cause")
        if len(set(self.dispositions)) != len(self.dispositions) or len(set(self.causes)) != len(
            self.causes
        ):
            raise _bad("a disposition or cause is listed twice")
        if _MACHINE_DISPOSITIONS & set(self.dispositions):
            raise _bad("a disposition is one of the machine's own")
        if not set(self.renamed.values()) <= set(self.dispositions) | set(self.causes):
            raise _bad("a rename points at a name the vocabulary does not list")
        object.__setattr__(self, "renamed", MappingProxyType(dict(self.renamed)))
        if self.earlier is not None:
            self._keeps(self.earlier)

    def _keeps(self, earlier: Vocabulary) -> None:
        """HZM080 unless this is a later version of ``earlier`` that drops none of its
        words: each of its dispositions and causes is listed here or renamed to one."""
        why = None
        if earlier.name != self.name:
            why = f"it is named {self.name!r}, the version before {earlier.name!r}"
        elif self.version <= earlier.version:
            why = f"version {self.version} does not follow version {earlier.version}"
        else:
            for what, before, now in (
                ("disposition", earlier.dispositions, self.dispositions),
                ("cause", earlier.causes, self.causes),
            ):
                old = [o for o, new in earlier.renamed.items() if new in before]
                gone = [w for w in (*before, *old) if self.current(w) not in now]
                if gone:
                    why = f"it drops the {what} {', '.join(repr(w) for w in gone)}"
                    break
        if why is not None:
            raise MachineError(
                "HZM080",
                f"version {self.version} of vocabulary {self.name} cannot follow "
                f"version {earlier.version}: {why}",
                "a vocabulary's lists only grow: keep every word of the version before, "
                "or rename it (renamed={'old': 'new'}), and raise the version",
            )

    def current(self, name: Any) -> Any:
        """``name`` as this vocabulary says it now (renames followed)."""
        seen = 0
        while isinstance(name, str) and name in self.renamed and seen < len(self.renamed):
            name, seen = self.renamed[name], seen + 1
        return name

    def pins(self) -> dict[str, Any]:
        """What ``turn.started.pins`` records of the vocabulary (hz's stays the bare
        version number it always was)."""
        if self.name == "hz":
            return {"vocabulary": self.version}
        return {"vocabulary": self.version, "vocabulary_name": self.name}

    def check_cause(self, cause: str) -> None:
        """HZM004 when ``cause`` is not one of this vocabulary's causes."""
        if cause not in self.causes:
            raise MachineError(
                "HZM004",
                f"{cause!r} is not a cause of vocabulary {self.name}",
                f"causes are {', '.join(self.causes)}",
            )

    def migrate(self, event: Event) -> Event:
        """``event`` with renamed causes and dispositions read as their new names."""
        if not self.renamed or event.kind not in _NAMED:
            return event
        data = dict(event.data)
        for name in ("cause", "disposition"):
            if name in data:
                data[name] = self.current(data[name])
        if isinstance(data.get("causes"), list):
            data["causes"] = [
                {**c, "cause": self.current(c.get("cause"))} if isinstance(c, dict) else c
                for c in data["causes"]
            ]
        return replace(event, data=data)


_NAMED = frozenset({"turn.started", "turn.finished", "turn.skipped", "turn.requested"})

HZ = Vocabulary("hz", VOCABULARY_VERSION, ACT_DISPOSITIONS, CAUSES)
"""hz's own registration: drafted, asked, learned, proposed; the causes of ADR 0049."""


def pinned_name(pins: Mapping[str, Any]) -> str:
    """The vocabulary a turn was started under, from its pins (hz when unnamed)."""
    return str(pins.get("vocabulary_name") or "hz")
