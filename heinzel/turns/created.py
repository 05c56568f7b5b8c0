"""The created turn (ADR 0049 statements 2 and 4): a contract written from a sentence.

`hz heinzel new "every Friday at three, ..."` creates the Heinzelmännchen under a
provisional name, then runs one turn of cause ``created`` (key ``<id>@created``):
gather holds the sentence, think asks the model for a contract text (a compile error
goes back to the model as a retry, at most ``retries`` times), and act stores it as
version 1 and records ``contract.proposed{version: 1, fingerprint, by: heinzel}``
through the effect ledger. The Heinzelmännchen is then ``proposed`` until
``hz approve``, under the contract's name.

A contract whose output is a file the sentence names as a source ("summarise notes.md
into today.md" reads ``notes.md``, writes ``today.md``) goes back to the model as a
retry (HZH291), whatever the model; so does one whose output or input is one of hz's own
files (HZH340, HZH341), and a sentence that names such a file is refused before any model
runs. A creation that fails leaves nothing behind, whatever failed: its session folder and
index rows are removed, and the error names the cause: the key (HZE003, before anything
is made), the provider (its fault's code, `heinzel.engine.faults`), the time limit
(HZE022), a cap (HZH331), Ctrl-C (HZH297), or the model's reply (HZH293, no contract hz
accepts); a name that is taken is HZH292.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic_ai.models import Model

from heinzel.capabilities.targets import Protected
from heinzel.contract import CompiledContract, compile_contract
from heinzel.engine import (
    Budget,
    Hold,
    InputSpec,
    Pricing,
    Purse,
    SpineView,
    TurnSpec,
    build_context,
    think,
)
from heinzel.engine.errors import TURN_TIME_UP, EngineError
from heinzel.engine.offline_create import named_files
from heinzel.engine.outcome import Outcome
from heinzel.errors import HeinzelError
from heinzel.store.contracts import store_version
from heinzel.store.home import Home
from heinzel.store.targets import check_targets
from heinzel.turns.failure import refusal
from heinzel.turns.record import EngineRecorder, SessionBody
from ledger.errors import HzError
from machines import Acted, Effect, Fail, LocalProbe, OutOfTime, TurnContext, run_sync
from machines.core.effects import recorded_in

__all__ = ["CREATED_BODY", "CreatedSteps", "check_created", "refuse_named"]

CREATED_BODY = """### Goal

Write the contract of a new Heinzelmännchen from the user's sentence (the input
`sentence`): a `.prose.md` text with YAML frontmatter and the sections Goal, Requires,
Maintains and Done when. Return it as the outcome's amendment, with why.
"""


def _norm(path: str) -> str:
    return path.strip().removeprefix("./")


def check_created(
    compiled: CompiledContract,
    sentence: str,
    origin: Path | None = None,
    protected: Protected | None = None,
) -> CompiledContract:
    """HZH291 when an output writes a file the sentence names as a source, or a file one of
    the contract's own inputs reads: an output is never one of its sources. HZH340 and
    HZH341 when an output or input resolves (against ``origin``) into one of hz's own
    files (``protected``, `heinzel.store.targets`)."""
    if protected is not None:
        check_targets(compiled, origin or Path(), protected)
    named = named_files(sentence)
    hz = compiled.frontmatter.hz
    read = {
        _norm(str(i.args.get("path")))
        for i in hz.inputs.values()
        if i.from_.startswith("files.") and i.args.get("path")
    }
    sources = {_norm(n) for n in named.sources} | read
    for output, spec in hz.outputs.items():
        kind, _, where = str(spec.asset).partition(":")
        if kind == "file" and _norm(where) in sources:
            wanted = ", ".join(named.targets) or "a file of its own"
            raise HeinzelError(
                "HZH291",
                f"the output {output!r} writes {where}, which the sentence names as a source",
                f"read {where} as an input and write the output into {wanted}",
            )
    return compiled


def refuse_named(sentence: str, origin: Path, protected: Protected) -> None:
    """HZH340 (HZH341) before any model runs, when a file the sentence names as where the
    output goes (as a source) resolves into one of hz's own places."""
    named = named_files(sentence)
    for code, names, role, rule in (
        ("HZH340", named.targets, "the output's document", "where no draft goes"),
        ("HZH341", named.sources, "a source", "which no input reads"),
    ):
        for name in names:
            why = protected.refusal(origin / Path(name).expanduser())
            if why is not None:
                raise HeinzelError(
                    code,
                    f"the sentence names {name} as {role}: it resolves to {why}, {rule}",
                    "name a file of your own: hz's spines, bodies, index and keys are "
                    "no contract's files",
                )


class CreatedSteps:
    """gather -> think -> outcome -> act of a created turn."""

    def __init__(
        self,
        *,
        home: Home,
        heinzel_id: str,
        sentence: str,
        body: SessionBody,
        model: Model,
        pricing: Pricing,
        cap: Decimal | None,
        clock: Callable[[], datetime],
        retries: int = 2,
        origin: Path | None = None,
        protected: Protected | None = None,
        day_usd: Decimal | None = None,
        hold_day: Hold | None = None,
    ) -> None:
        """``origin``: the folder the contract's relative paths resolve against (where
        ``hz heinzel new`` ran); ``protected``: hz's own places, no target of it."""
        self.origin = origin
        self.protected = protected
        self.home = home
        self.heinzel_id = heinzel_id
        self.sentence = sentence
        self.body = body
        self.model = model
        self.pricing = pricing
        self.cap = cap
        self.clock = clock
        self.retries = retries
        self.day_usd = day_usd
        self.hold_day = hold_day
        self.refused: HeinzelError | None = None
        """Why a cap refused the turn's request (HZH331), for the creation's error."""
        """The home's spend lock (`heinzel.session.spend.hold_day`): the day's cap holds
        for the created turn's requests too."""
        self.timeout = 600.0
        """Seconds the created turn may run (the machine's default timeout)."""
        self.failure: EngineError | None = None
        """Why the think step failed, when the provider or the time limit says so."""

    async def gather(self, ctx: TurnContext) -> Any:
        """The sentence, into the body."""
        return {"sentence": self.sentence, "started_at": self.clock().isoformat()}

    async def think(self, ctx: TurnContext, gathered: Any) -> Any:
        """The engine writes a contract text; the compiler checks it (errors are retries)."""
        spec = TurnSpec(
            turn=ctx.turn,
            cause="created",
            contract_name="new",
            contract_version=1,
            body=CREATED_BODY,
            started_at=datetime.fromisoformat(gathered["started_at"]),
            inputs=(InputSpec("sentence", gathered["sentence"], "user"),),
        )
        recorder = EngineRecorder(
            ctx.journal, self.body.bodies, ctx.turn, cap_usd=self.cap or Decimal(0)
        )
        budget = Budget(self.pricing, self.cap, self.day_usd)

        def spent() -> Decimal:
            return Decimal(str(ctx.state.spend_usd))

        purse = Purse(budget, spent, recorder.checkpoint, hold=self.hold_day)
        result = await think(
            spec,
            build_context(spec, SpineView()),
            model=self.model,
            recorder=recorder,
            budget=budget,
            purse=purse if self.hold_day is not None else None,
            history_body=self.body.records(ctx.turn),
            compile_contract=lambda text: check_created(
                compile_contract(text, source="created turn"),
                self.sentence,
                self.origin,
                self.protected,
            ),
            retries=self.retries,
            output_retries=self.retries,
            time_left=max(0.001, self.timeout - ctx.state.running_ms_at(self.clock()) / 1000),
        )
        if result.status == "cap" and purse.refused is not None:
            self.refused = refusal("new", budget, *purse.refused)
        if result.status == "timeout":
            self.failure = EngineError(
                TURN_TIME_UP,
                f"the created turn ran out of its time limit ({self.timeout:g} s) "
                "while the model was asked",
                "the provider is slow or hung: try again later",
            )
            raise OutOfTime
        if result.failure is not None and result.fault != "invalid-outcome":
            # nothing is kept to retry: the hint names the command that goes on
            again = f"run `hz heinzel new {json.dumps(self.sentence)}` again"
            failure = result.failure
            failure.hint = failure.hint.replace("`hz heinzel retry new`", again)
            self.failure = failure
        outcome = None if result.outcome is None else result.outcome.model_dump(mode="json")
        return {
            "status": result.status,
            "outcome": outcome,
            "error": result.error,
            "fault": result.fault,
        }

    async def outcome(self, ctx: TurnContext, thought: Any) -> Any:
        """A contract text, or the turn fails."""
        outcome = thought["outcome"]
        if thought["status"] == "cap":
            return Fail("cap")
        if thought["status"] != "outcome" or not outcome or not outcome.get("amendment"):
            return Fail(str(thought.get("fault") or "no-contract"))
        return outcome

    async def act(self, ctx: TurnContext, decided: Any) -> Acted | Fail:
        """Store version 1 and record ``contract.proposed`` (once, by key)."""
        outcome = Outcome.model_validate(decided)
        assert outcome.amendment is not None
        text = outcome.amendment.text
        compiled = compile_contract(text, source="created turn")

        async def propose(_key: str) -> str:
            return store_version(self.home, self.heinzel_id, 1, text, compiled).fingerprint

        key = f"{self.heinzel_id}@created:v1"
        data = {"version": 1, "fingerprint": compiled.fingerprint, "by": "heinzel"}
        probe = LocalProbe(recorded_in(ctx.journal, "contract.proposed"))
        await ctx.effect(Effect("propose_contract", key, propose, probe, "contract.proposed", data))
        return Acted("proposed", {"report": outcome.report[:200]})


def _created_model(service: Any) -> Any:
    """The created turn's model, pydantic-ai and the provider loaded as `machines.loading` does."""
    from machines.loading import loading

    with loading():
        from heinzel.turns.models import turn_model

        return turn_model(service, "created")


def run_created(
    service: Any, sentence: str, *, namespace: str = "me", name: str | None = None
) -> dict[str, Any]:
    """Create a Heinzelmännchen from ``sentence`` with a created turn; its row and turn.
    ``name`` (``--name``) is its name whatever the contract says, and is refused when
    taken before the model runs (HZH292: nothing spent, nothing made)."""
    from heinzel.ids import new_id, validate_name

    origin = Path.cwd()
    refuse_named(sentence, origin, service.protected)
    if name is not None:
        name = validate_name(name)
        if service.queries.find_by_name(namespace, name):
            raise _taken(name, namespace, sentence)
    model = _created_model(service)  # no key (HZE003): refused before anything is made
    heinzel_id = new_id(service.clock)
    provisional = validate_name("new-" + heinzel_id[-8:].lower())
    try:
        return _create(
            service, heinzel_id, provisional, sentence, namespace=namespace, model=model, name=name
        )
    except BaseException:
        discard(service, heinzel_id)  # whatever failed (Ctrl-C too): nothing left behind
        raise


def _taken(name: str, namespace: str, sentence: str) -> HeinzelError:
    return HeinzelError(
        "HZH292",
        f"a Heinzelmännchen named {name!r} already exists in namespace {namespace}",
        f"give it another name: `hz heinzel new {json.dumps(sentence)} --name NEW` "
        f"(or rename the one there: `hz heinzel rename {name} NEW`)",
    )


def _create(
    service: Any,
    heinzel_id: str,
    provisional: str,
    sentence: str,
    *,
    namespace: str,
    model: Model,
    name: str | None = None,
) -> dict[str, Any]:
    """`run_created`'s work under the new spine's lock; raises what failed (the caller
    removes what was made)."""
    import time

    from heinzel.ids import new_id, validate_name
    from heinzel.session.spend import hold_day
    from heinzel.turns.record import IndexedJournal
    from ledger.bodies import Bodies
    from machines import Pins, Session, Wake, crash_hook, keys
    from machines import Settings as MachineSettings

    config = service.settings.heinzel
    origin = Path.cwd()
    with service.hold_spine(heinzel_id, on_durable=[crash_hook()]) as spine:
        spine.append(
            "heinzel.created",
            {
                "name": provisional,
                "namespace": namespace,
                "owner": service.owner,
                "origin": str(origin),
            },
        )
        journal = IndexedJournal(spine, service.index.db, heinzel_id)
        steps = CreatedSteps(
            home=service.home,
            heinzel_id=heinzel_id,
            sentence=sentence,
            body=SessionBody(Bodies(service.home.session_dir(heinzel_id))),
            model=model,
            pricing=Pricing(at=service.clock()),
            cap=Decimal(str(config.max_usd)),
            clock=service.clock,
            origin=origin,
            protected=service.protected,
            day_usd=Decimal(str(config.max_usd_per_day)),
            hold_day=lambda: hold_day(
                service.index,
                service.home,
                service.clock,
                timeout=config.lock_timeout.total_seconds(),
                sleep=time.sleep,
            ),
        )

        async def no_sleep(_seconds: float) -> None:
            """Effects retry at once here."""

        session = Session(
            journal, steps.body, steps, MachineSettings(clock=service.clock, sleep=no_sleep)
        )
        turn = "tn-" + new_id(service.clock)[3:]
        wake = Wake("created", keys.created(heinzel_id))
        try:
            state = run_sync(session.start(turn, [wake], Pins()))
        finally:
            steps.body.close()
        row = service.queries.row(heinzel_id)
        wanted = provisional
        failure: HzError | None = None
        if state.error == "cap" and steps.refused is not None:
            failure = steps.refused
        elif state.disposition != "proposed" and steps.failure is not None:
            failure = steps.failure  # the provider or the time limit: not the sentence
        elif state.disposition == "abandoned" and state.reason == "stopped":
            failure = HeinzelError(
                "HZH297",
                "the created turn was stopped (Ctrl-C) before it wrote a contract; "
                "nothing was created",
                f"run it again when you want it: `hz heinzel new {json.dumps(sentence)}`",
            )
        elif state.disposition != "proposed" or not row["contract_name"]:
            failure = HeinzelError(
                "HZH293",
                f"the created turn wrote no contract hz accepts ({state.error or state.reason})",
                "say it again more plainly, or write the contract yourself: "
                "`hz heinzel new --from FILE`",
            )
        else:
            wanted = validate_name(name or row["contract_name"])
            if service.queries.find_by_name(namespace, wanted):
                failure = _taken(wanted, namespace, sentence)
            else:
                spine.append("heinzel.renamed", {"name": wanted})
    if failure is not None:
        raise failure
    shown = service.queries.row(heinzel_id)
    return {
        **shown,
        "turn": state.turn,
        "disposition": state.disposition,
        "turn_error": state.error,
    }


def discard(service: Any, heinzel_id: str) -> None:
    """Remove a failed creation: its session folder and its index rows."""
    import shutil

    shutil.rmtree(service.home.session_dir(heinzel_id), ignore_errors=True)
    service.index.forget(heinzel_id)
