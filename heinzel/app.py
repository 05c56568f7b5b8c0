"""`App`: what the surfaces share (the command line, the demo, the daemon; later the web
head and MCP): one home's `Service`, its `Turns`, the user's `Verbs` and the `Tick`.

It sits above all of them and composes them, so that none of the operations imports
another: the service never calls the turn host, and the tick reaches turns only through
the `TurnRunner` it is handed. Building an `App` loads no engine; the turn host and
pydantic-ai load when a turn runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from heinzel.service import Service
from heinzel.turns.operations import Turns

if TYPE_CHECKING:
    from heinzel.team import Team
    from heinzel.tick.tick import Tick
    from heinzel.tick.verbs import Verbs

__all__ = ["App"]


class App:
    """One home's operations, composed: `service`, `turns`, `verbs()` and `tick()`."""

    def __init__(self, service: Service, adapters: Mapping[str, object] | None = None) -> None:
        """``adapters`` replace the configured read and document adapters (tests)."""
        self.service = service
        self.turns = Turns(service)
        self._adapters = adapters

    @classmethod
    def from_environment(cls, home_option: str | None, env: Mapping[str, str]) -> App:
        """The application a command runs with: ``--home``/``HZ_HOME``, ``HZ_NOW``, the
        configuration (`heinzel.session.Sessions.from_environment`)."""
        return cls(Service.from_environment(home_option, env))

    @cached_property
    def adapters(self) -> Mapping[str, object]:
        """The configured adapters (``[heinzel] fixture_sources`` or ``HZ_FIXTURE_SOURCES``
        adds the worked example's file-backed sources), built on first use: a refusal or
        a tick with nothing to read loads none of them."""
        if self._adapters is not None:
            return self._adapters
        return _Deferred(self._default_adapters)

    def _default_adapters(self) -> Mapping[str, object]:
        settings = self.service.settings
        if not settings.adapters:  # no [adapters.*] table: no table models (pydantic) to load
            from heinzel.capabilities.builtin import builtin_adapters

            return builtin_adapters(
                approver=settings.heinzel.approver or settings.team.handle or "owner",
                fixtures=settings.heinzel.fixture_sources,
                asset_names=self.service.home.heinzel_dir / "assets",
                protected=self.service.protected,
            )
        from heinzel.turns.inputs import default_adapters

        return default_adapters(self.service.settings, protected=self.service.protected)

    def create_from_sentence(
        self, sentence: str, *, namespace: str | None = None, name: str | None = None
    ) -> dict[str, Any]:
        """``hz heinzel new "a sentence"`` (`Turns.create_from_sentence`), with the warnings
        ``new --from`` gives (``warnings``: an adapter or a skill this machine lacks,
        HZH104 and HZC052), said of the contract the model wrote."""
        from heinzel.service.doctor import stored_warnings

        row = self.turns.create_from_sentence(sentence, namespace=namespace, name=name)
        warnings = stored_warnings(self.service, str(row["id"]), 1)
        return {**row, "warnings": warnings} if warnings else row

    def verbs(self) -> Verbs:
        """chat, resume, stop and retry, running turns through `turns` (a chat while a
        question is open answers it through `Turns.answer_text`)."""
        from heinzel.tick.verbs import Verbs

        return Verbs(
            self.service,
            self.turns,
            self.adapters,
            answer=lambda heinzel_id, text, recorded, request_id: self.turns.answer_text(
                heinzel_id, text, adapters=self.adapters, recorded=recorded, request_id=request_id
            ),
        )

    def tick(self, sleep: Callable[[float], None]) -> Tick:
        """One tick over the home, waking through `turns`; with ``[team] repository``
        set, the `heinzel.team.Team` hook decides who runs the team Heinzelmännchen."""
        from heinzel.tick.tick import Tick

        team = self.team()
        return Tick(self.service, self.turns, self.adapters, sleep=sleep, team=team)

    def team(self) -> Team | None:
        """The home's part in the team repository, or None when ``[team]`` is not set (and
        the team's modules are not loaded)."""
        if not self.service.settings.team.joined:
            return None
        from heinzel.team import Team

        return Team(self.service)


class _Deferred(Mapping[str, object]):
    """A mapping built by ``build`` the first time it is read."""

    def __init__(self, build: Callable[[], Mapping[str, object]]) -> None:
        self._build = build

    @cached_property
    def _built(self) -> Mapping[str, object]:
        return self._build()

    def __getitem__(self, key: str) -> object:
        return self._built[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built)

    def __len__(self) -> int:
        return len(self._built)
