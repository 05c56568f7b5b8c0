"""The MCP tools of ``hz mcp``, each a few lines over `heinzel.app.App`, served over stdio.

Tools are named like the verbs (``heinzel_list`` is ``hz heinzel list``); read-only ones are
annotated so. A coded error comes back as a tool error (``is_error``) whose text carries
``CODE: message`` and the hint line, exactly as the command line prints them. Each call opens
the app afresh, as each ``hz`` command does, so another process's changes are seen. Only the
protocol goes to stdout; logs go to stderr.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from heinzel.app import App
from heinzel.errors import HeinzelError
from heinzel.index.plain import plain_rows
from heinzel.mcp.models import (
    Approved,
    Changed,
    ChatSent,
    Created,
    Drafts,
    Listing,
    Shown,
    Stopped,
    Tried,
    TurnRun,
)
from ledger.errors import HzError

__all__ = ["MAX_NAME", "MAX_TEXT", "build_server"]

MAX_NAME = 4096
MAX_TEXT = 20_000

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

NAME_PATTERN = r"^(?:(?:me|team)/)?[a-z][a-z0-9]*(?:-[a-z0-9]+)*$|^hz-[0-9A-HJKMNP-TV-Z]{26}$"
"""A name slug (lowercase letters, digits, single hyphens), optionally `me/` or `team/`
before it, or an `hz-` id: what `hz` resolves (`heinzel.ids`)."""
REQUEST_PATTERN = r"^rq-[0-9A-Za-z]{1,64}$"
TURN_PATTERN = r"^tn-[0-9A-HJKMNP-TV-Z]{26}$"

Name = Annotated[
    str,
    Field(
        description="A name (`weekly-report`), `me/NAME` or `team/NAME`, or an `hz-` id.",
        pattern=NAME_PATTERN,
        json_schema_extra={"maxLength": MAX_NAME},
    ),
]
Item = Annotated[
    str,
    Field(
        description="A name or `hz-` id (its proposed v1 or pending amendment), or a draft's "
        "key from `drafts`.",
        json_schema_extra={"maxLength": MAX_NAME},
    ),
]
Filter = Annotated[str | None, Field(json_schema_extra={"maxLength": MAX_NAME})]
State = Annotated[
    Filter,
    Field(
        description="Only those in this state: proposed, asleep, awake, waiting, paused or retired."
    ),
]
Artifact = Annotated[
    Filter,
    Field(
        description="Only those that read or write this asset ref (`doc:checkout/weekly-report`)."
    ),
]
ContractFilter = Annotated[
    Filter,
    Field(description="Only those under this contract: `NAME`, `NAME@VERSION` or `KEY=VALUE`."),
]
NewName = Annotated[
    Filter,
    Field(
        description="The name to give it (one contract file only); else the contract's own name."
    ),
]
Proposal = Annotated[
    Filter,
    Field(
        description="Which proposed write is answered, when several wait "
        "(its key, from heinzel_show).",
    ),
]
RequestId = Annotated[
    str | None,
    Field(
        description="Your id for this message (`rq-` and letters or digits): resending with "
        "the same id is delivered once.",
        pattern=REQUEST_PATTERN,
    ),
]
TurnId = Annotated[
    str | None,
    Field(
        description="The asking turn's id (`tn-...`), from heinzel_show's `questions`.",
        pattern=TURN_PATTERN,
    ),
]
Message = Annotated[
    str | None,
    Field(
        description="What you ask of it, in words: the turn's input, framed as data.",
        json_schema_extra={"maxLength": MAX_TEXT},
    ),
]
ChatText = Annotated[
    str,
    Field(
        description="The message, in words: it steers a running turn, answers an open "
        "question, or starts a turn.",
        json_schema_extra={"maxLength": MAX_TEXT},
    ),
]
AnswerText = Annotated[
    str | None,
    Field(
        description="The answer to its question, in words (a question its outcome asked).",
        json_schema_extra={"maxLength": MAX_TEXT},
    ),
]
Sentence = Annotated[
    str | None,
    Field(
        description="One sentence saying what it should keep true; the model drafts the "
        "contract from it (instead of `files`).",
        json_schema_extra={"maxLength": MAX_TEXT},
    ),
]
Hint = Annotated[
    str | None,
    Field(
        description="A hint for the model on the retried turn, in words.",
        json_schema_extra={"maxLength": MAX_TEXT},
    ),
]
File = Annotated[
    str,
    Field(
        description="A contract file's path (`.prose.md`), read by the server.",
        json_schema_extra={"maxLength": MAX_NAME},
    ),
]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)


def _bounded(value: str | None, limit: int, what: str) -> None:
    if value is not None and len(value) > limit:
        raise HeinzelError(
            "HZH270",
            f"the {what} is {len(value)} characters long; at most {limit} are accepted",
            "pass a name, an id or a message, not a document",
        )


class Tools:
    """The tools over one home: ``home`` is ``--home`` (else ``HZ_HOME``, else the default)."""

    def __init__(self, home: str | None, env: dict[str, str] | None = None) -> None:
        self.home = home
        self.env = dict(os.environ) if env is None else env
        self._where = threading.local()

    def call(self, body: Callable[[App], T], **bounded: str | None) -> T:
        """Check the arguments' lengths, run ``body`` on a fresh app, and turn a coded error
        into a tool error carrying ``CODE: message`` and the hint. The home it read is kept
        for `_out` (per thread: the SDK runs each call on a worker thread)."""
        self._where.value = {}
        try:
            for what, value in bounded.items():
                limit = MAX_TEXT if what in {"message", "text", "sentence", "hint"} else MAX_NAME
                _bounded(value, limit, what)
            app = App.from_environment(self.home, self.env)
            root = app.service.home.root
            self._where.value = {
                "home": str(root),
                "home_exists": (root / "heinzel").is_dir(),
            }
            try:
                answer = body(app)
                # the home as the call left it: a first `heinzel_new` has made it
                self._where.value["home_exists"] = (root / "heinzel").is_dir()
                return answer
            finally:  # as a command ends: the index closed keeping its WAL (no fsync)
                app.service.close()
        except HzError as exc:
            raise ToolError(refusal(exc, self._where.value or self.where())) from exc

    def where(self) -> dict[str, Any]:
        """The home a call reads (`home`, `home_exists`), or nothing when it cannot be told
        (the configuration itself is refused)."""
        try:
            app = App.from_environment(self.home, self.env)
            root = app.service.home.root
        except HzError:
            return {}
        return {"home": str(root), "home_exists": (root / "heinzel").is_dir()}

    def _out(self, model: type[M], payload: dict[str, Any]) -> M:
        """``payload`` as ``model``, with the home the call read (`home`, `home_exists`)."""
        where = getattr(self._where, "value", {})
        return model.model_validate({**payload, **where})

    def heinzel_list(
        self, state: State = None, artifact: Artifact = None, contract: ContractFilter = None
    ) -> Listing:
        """List Heinzelmännchen from the index, filtered by state (proposed, asleep, awake,
        waiting, paused, retired), artifact (an asset ref) or contract (NAME, NAME@VERSION or
        KEY=VALUE), like `hz heinzel list`."""
        rows = self.call(
            lambda app: app.service.listing(artifact=artifact, state=state, contract=contract),
            state=state,
            artifact=artifact,
            contract=contract,
        )
        return self._out(Listing, {"heinzelmaennchen": rows})

    def heinzel_show(self, name: Name) -> Shown:
        """One Heinzelmännchen: contract versions, the timeline of turns, lessons, drafts, the
        pending item and this month's cost by cause, like `hz heinzel show NAME`."""
        return self._out(Shown, self.call(lambda app: app.service.show(name), name=name))

    def heinzel_new(
        self,
        files: Annotated[
            list[File] | None, Field(description="Contract files to create from (one each).")
        ] = None,
        sentence: Sentence = None,
        name: NewName = None,
        namespace: Annotated[
            Literal["me", "team"] | None,
            Field(description="`me` (yours alone, the default) or `team` (the team's)."),
        ] = None,
    ) -> Created:
        """Create Heinzelmännchen (state: proposed) from contract files (.prose.md paths, read
        by the server) or from one sentence, like `hz heinzel new`. Approve with `approve`."""
        paths = list(files or [])

        def create(app: App) -> list[dict[str, Any]]:
            if paths:
                return app.service.create_from_files(paths, name=name, namespace=namespace)
            if sentence and sentence.strip():
                return [app.create_from_sentence(sentence, namespace=namespace, name=name)]
            raise HeinzelError(
                "HZH271", "heinzel_new needs files or a sentence", "pass `files` or `sentence`"
            )

        rows = self.call(create, sentence=sentence, name=name, **_each("file", paths))
        return self._out(Created, {"created": plain_rows(rows)})

    def heinzel_wake(
        self, name: Name, message: Message = None, request_id: RequestId = None
    ) -> TurnRun:
        """Start a turn now (cause asked) and run it to its end or its wait, like
        `hz heinzel wake NAME --message TEXT`. Resending with the same request_id is
        idempotent."""
        return self._out(
            TurnRun,
            self.call(
                lambda app: app.service.in_words(_asked(app, name, message, request_id)),
                name=name,
                message=message,
                request_id=request_id,
            ),
        )

    def heinzel_chat(self, name: Name, text: ChatText, request_id: RequestId = None) -> ChatSent:
        """Send a message to its session: it steers a running turn, else starts one, like
        `hz heinzel chat NAME TEXT`. Resending with the same request_id is idempotent."""
        return self._out(
            ChatSent,
            self.call(
                lambda app: app.service.in_words(
                    app.verbs().chat(name, text, request_id=request_id)
                ),
                name=name,
                text=text,
                request_id=request_id,
            ),
        )

    def heinzel_answer(
        self,
        name: Name,
        approve: Annotated[
            bool | None,
            Field(
                description="true approves the write it proposed in a chat turn, false declines it."
            ),
        ] = None,
        proposal: Proposal = None,
        text: AnswerText = None,
        question: TurnId = None,
        *,
        request_id: RequestId = None,
    ) -> TurnRun:
        """Answer what it asked: a write it proposed in a chat turn (`approve` true or
        false, `proposal` when several wait), like `hz heinzel answer NAME yes|no`; or a
        question its outcome asked (`text`, the answer in words; `question`, the asking
        turn's id from `heinzel_show`'s `questions`, when several wait), like
        `hz heinzel answer NAME TEXT --question TURN`. The turn goes on at once. Resending
        an answer in words with the same request_id is idempotent."""

        def answer(app: App) -> dict[str, Any]:
            if text is not None:
                done = app.turns.respond(name, text, question=question, request_id=request_id)
            elif approve is None:
                raise HeinzelError(
                    "HZH351",
                    "heinzel_answer needs `approve` (for a proposed write) or `text` "
                    "(for a question)",
                    "heinzel_show lists what waits under `questions`, each with its kind",
                )
            else:
                done = app.turns.answer(name, approve, proposal)
            return app.service.in_words(done)

        return self._out(
            TurnRun,
            self.call(
                answer,
                name=name,
                proposal=proposal,
                text=text,
                question=question,
                request_id=request_id,
            ),
        )

    def heinzel_pause(self, name: Name) -> Changed:
        """Pause it: it wakes no more (no schedule, no source, no chat) until unpaused,
        like `hz heinzel pause NAME`."""
        return self._lifecycle(name, "pause")

    def heinzel_unpause(self, name: Name) -> Changed:
        """Unpause a paused one, like `hz heinzel unpause NAME`."""
        return self._lifecycle(name, "unpause")

    def heinzel_retire(self, name: Name) -> Changed:
        """Retire it: kept with its whole record, never woken until unretired, like
        `hz heinzel retire NAME`."""
        return self._lifecycle(name, "retire")

    def heinzel_unretire(self, name: Name) -> Changed:
        """Bring a retired one back (asleep), like `hz heinzel unretire NAME`."""
        return self._lifecycle(name, "unretire")

    def _lifecycle(self, name: str, verb: str) -> Changed:
        return self._out(
            Changed, self.call(lambda app: app.service.lifecycle(name, verb), name=name)
        )

    def heinzel_stop(self, name: Name) -> Stopped:
        """Stop its running turn: it ends `abandoned (stopped)` (a turn another process runs
        ends at its next step), like `hz heinzel stop NAME`."""
        return self._out(Stopped, self.call(lambda app: app.verbs().stop(name), name=name))

    def heinzel_retry(self, name: Name, hint: Hint = None, request_id: RequestId = None) -> TurnRun:
        """Fork its last ended turn from after its gather step, with `hint` for the model,
        and run it, like `hz heinzel retry NAME HINT`. Resending with the same request_id is
        idempotent."""
        return self._out(
            TurnRun,
            self.call(
                lambda app: app.service.in_words(
                    app.verbs().retry(name, hint or "", request_id=request_id)
                ),
                name=name,
                hint=hint,
                request_id=request_id,
            ),
        )

    def heinzel_resume(self, name: Name) -> TurnRun:
        """Resume its waiting turn now, like `hz heinzel resume NAME`."""
        return self._out(
            TurnRun,
            self.call(lambda app: app.service.in_words(app.verbs().resume(name)), name=name),
        )

    def heinzel_try(
        self,
        name: Name,
        version: Annotated[
            int | None, Field(ge=1, description="The version to try (default: the pending one).")
        ] = None,
        turns: Annotated[int, Field(ge=1, le=20, description="How many last turns.")] = 5,
    ) -> Tried:
        """Think its last turns again under the pending amendment (or `version`), placing
        nothing and starting no turn, like `hz heinzel try NAME`: each placed draft beside
        the tried one, the done-when checks on both, the cost of each. Spends (capped)."""

        def trial(app: App) -> dict[str, Any]:
            from heinzel.turns.host import TurnHost
            from heinzel.turns.trial import run_trial

            host = TurnHost(app.service)  # the turn's searches: from the record or the cache
            service, adapters = app.service, app.adapters
            return run_trial(service, host, name, adapters=adapters, version=version, turns=turns)

        return self._out(Tried, self.call(trial, name=name))

    def drafts(self) -> Drafts:
        """Every waiting draft with its place and its key, like `hz drafts`."""
        return self._out(Drafts, {"drafts": self.call(lambda app: app.service.drafts())})

    def approve(
        self, items: Annotated[list[Item], Field(min_length=1, description="At least one.")]
    ) -> Approved:
        """Approve v1 of a proposed one, its pending amendment, or a draft (by name or by its
        key from `drafts`), like `hz approve ITEM...`."""
        rows = self.call(
            lambda app: [app.service.approve(item) for item in items], **_each("item", items)
        )
        return self._out(Approved, {"approved": plain_rows(rows)})


def refusal(error: HzError, where: dict[str, Any]) -> str:
    """A refusal's text: ``CODE: message``, the hint, and the home the call read (as every
    answer names it: `home`), so an agent told "not found" sees where hz looked."""
    text = error.render()
    if "home" in where:
        text += f"\nhome: {where['home']}" + (
            "" if where.get("home_exists") else " (no home there yet)"
        )
    return text


def _asked(app: App, name: str, message: str | None, request_id: str | None) -> dict[str, Any]:
    """`hz heinzel wake`'s turn: a team one only where its lease is (HZH304)."""
    team = app.team()
    if team is not None:
        team.check_asked(name)
    return app.turns.wake(name, message, request_id=request_id)


def _each(what: str, values: list[str]) -> dict[str, str | None]:
    return {f"{what} {n + 1}": value for n, value in enumerate(values)}


TOOLS: list[tuple[str, ToolAnnotations]] = [
    ("heinzel_list", READ_ONLY),
    ("heinzel_show", READ_ONLY),
    ("drafts", READ_ONLY),
    ("heinzel_new", WRITES),
    ("heinzel_wake", WRITES),
    ("heinzel_chat", WRITES),
    ("heinzel_answer", WRITES),
    ("heinzel_pause", WRITES),
    ("heinzel_unpause", WRITES),
    ("heinzel_retire", WRITES),
    ("heinzel_unretire", WRITES),
    ("heinzel_stop", WRITES),
    ("heinzel_retry", WRITES),
    ("heinzel_resume", WRITES),
    ("heinzel_try", WRITES),
    ("approve", WRITES),
]


def build_server(home: str | None, env: dict[str, str] | None = None) -> MCPServer:
    """The MCP server with every tool of `Tools` registered under its verb's name."""
    tools = Tools(home, env)
    server = MCPServer(
        "hz",
        instructions="hz's Heinzelmännchen: durable agents with one contract and one session "
        "each. heinzel_list and heinzel_show read; the other tools act as the user would.",
        log_level="WARNING",
    )
    coded: type[_CodedTool] = type("_CodedTool", (_CodedTool,), {"__module__": __name__})
    setattr(coded, "where", staticmethod(tools.where))  # noqa: B010 (a method, per server)
    for name, hints in TOOLS:
        server.tool(name=name, annotations=hints, structured_output=True)(getattr(tools, name))
        _strict(server, name, coded)
    return server


class _CodedTool(Tool):
    """A tool whose arguments that do not fit its schema are refused with `HZH272` and a
    hint, in hz's words, rather than pydantic's report (and the home, as every refusal)."""

    @staticmethod
    def where() -> dict[str, Any]:
        """The home the server's calls read (`Tools.where`, set per server)."""
        return {}

    async def run(self, arguments: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        try:
            self.fn_metadata.validate_arguments(arguments)
        except ValidationError as exc:
            raise ToolError(refusal(_schema_error(self.name, exc), self.where())) from None
        return await super().run(arguments, *args, **kwargs)


def _strict(server: MCPServer, name: str, coded: type[_CodedTool]) -> None:
    """Tool ``name`` refuses arguments it does not name (`additionalProperties: false` in
    its schema) and answers a schema failure coded (`_CodedTool`). The SDK has no public
    hook for either, so this reaches its tool manager once, at start."""
    tool = server._tool_manager.get_tool(name)
    assert tool is not None
    base = tool.fn_metadata.arg_model
    config = ConfigDict(**{**base.model_config, "extra": "forbid"})
    strict: type[ArgModelBase] = type(
        base.__name__, (base,), {"model_config": config, "__module__": __name__}
    )
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    tool.__class__ = coded


def _schema_error(tool: str, error: ValidationError) -> HeinzelError:
    """Each argument that does not fit, by name, with what it should be (never its value)."""
    parts = []
    for each in error.errors(include_url=False, include_input=False)[:5]:
        where = ".".join(str(part) for part in each["loc"]) or "the arguments"
        parts.append(f"`{where}`: {each['msg']}")
    return HeinzelError(
        "HZH272",
        f"{tool}: the arguments do not fit its input schema: {'; '.join(parts)}",
        "its input schema (tools/list) gives each argument's type, pattern and description; "
        "an argument it does not name is refused",
    )
