"""The pages and buttons of the web head, each a few lines over `heinzel.app.App`: the same
service calls and verbs as the ``hz`` commands, so a chat here is ``hz heinzel chat``."""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse

from heinzel.app import App
from heinzel.errors import HeinzelError
from heinzel.store.inbox import Inbox
from heinzel.web.actions import IN_CHILD, IN_REQUEST, check_turn_verb, resent_verb, resumable
from heinzel.web.auth import Keys
from heinzel.web.events import format_event, last_seq, lines_after, offset_after, seq_given
from heinzel.web.pages import TEMPLATES, unsent
from heinzel.web.turnview import open_questions, pending_drafts, turn_detail
from ledger.errors import HzError

__all__ = ["Views"]

STATES = ("proposed", "asleep", "awake", "waiting", "paused", "retired")
POLL = 0.2
PARTS = ("head", "failure", "actions", "pending", "turns", "lessons")
"""The parts of a Heinzelmännchen's page that move with its spine (``templates/_NAME.html``)."""
SAID = {"already-approved": "It is already approved: nothing more to do."}
"""What a button without JavaScript came back to say (``?said=``), in fixed words."""
LEFT_OPEN = "already delivered (its turn, left open by a killed process, resumes now)"
"""A Wake or Retry form resent whose turn a killed process left open: its child resumes it."""
ENDED = {
    "stopped": "You stopped it while it ran: it ended before finishing its work.",
    "superseded": "A newer turn took its place while it waited.",
    "max-resumes": "It was resumed after too many crashes and was given up.",
    "timeout": "It ran past its time limit and was ended.",
}
"""A sentence for how a turn was abandoned (its reason), where no cause says more."""
FAVICON = (Path(__file__).resolve().parent / "static" / "favicon.svg").read_bytes()
_CACHED = {"Cache-Control": "max-age=86400"}


class Views:
    """The route handlers; ``app`` gives this thread's `App`."""

    def __init__(
        self,
        app: Callable[[], App],
        keys: Keys,
        *,
        idle_seconds: float,
        start_turn: Callable[[Path, str, str], object],
        start_verb: Callable[[Path, str, str, str, str | None], object] = lambda *_: None,
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        self.app = app
        self.keys = keys
        self.idle_seconds = idle_seconds
        self.stopping = stopping
        """True once the server shuts down: every event stream ends (the browser retries)."""
        self.start_turn = start_turn
        """``(home, id, request id)``: run a chat's new turn outside the request."""
        self.start_verb = start_verb
        """``(home, id, verb, hint, request id)``: run a button's wake, retry or resume
        outside the request (the request id: the form's, or None)."""

    def _page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        return TEMPLATES.TemplateResponse(
            request, name, {"csrf": self.keys.csrf, "states": STATES, **context}, status
        )

    def _error(self, request: Request, error: HzError, status: int | None = None) -> Response:
        """The error as hz's own page (its code, message, a link onward and the hint), or
        as JSON ``{code, message, hint}`` when JSON is asked for."""
        status = status or _status(error)
        if request.headers.get("accept") == "application/json":
            return JSONResponse(
                {"code": error.code, "message": error.message, "hint": error.hint}, status
            )
        ref = request.path_params.get("ref")
        onward = ("/", "Back to the list")
        if ref and not (isinstance(error, HzError) and error.code == "HZH080"):
            onward = (f"/h/{ref}", "Back to its page")
        return self._page(request, "error.html", status, error=error, onward=onward)

    # -- what the router answers itself --------------------------------------------

    def no_route(self, request: Request) -> Response:
        """An address with no page (404), as hz's page, not the router's plain text."""
        missing = HeinzelError(
            "HZH540",
            f"there is no page at {request.url.path}",
            "every page is reached from the list: follow its links",
        )
        return self._error(request, missing, 404)

    def wrong_method(self, request: Request, headers: Mapping[str, str]) -> Response:
        """A page asked for by a method it does not take (405): which one it takes."""
        allowed = headers.get("Allow", "") or headers.get("allow", "")
        takes = "POST" if "POST" in allowed else "GET"
        how = "sent by a button on a page" if takes == "POST" else "opened, not sent to"
        wrong = HeinzelError(
            "HZH541",
            f"{request.url.path} is {how} ({takes}), not {request.method}",
            "use the page's own buttons and links",
        )
        answer = self._error(request, wrong, 405)
        answer.headers["Allow"] = allowed or takes
        return answer

    def broken(self, request: Request) -> Response:
        """An error hz did not foresee (500): said on hz's page, nothing of it shown."""
        broken = HeinzelError(
            "HZH542",
            "the page failed on an error hz did not foresee",
            "reload the page; if it fails again, `hz system doctor` checks the home",
        )
        return self._error(request, broken, 500)

    def favicon(self, request: Request) -> Response:
        """The tab's icon (the browser asks ``/favicon.ico`` on every page)."""
        return Response(FAVICON, media_type="image/svg+xml", headers=_CACHED)

    # -- pages ---------------------------------------------------------------------

    def listing(self, request: Request) -> Response:
        """My Heinzelmännchen: every index row, filtered like ``hz heinzel list``."""
        wanted = {k: request.query_params.get(k) or None for k in ("state", "artifact", "contract")}
        try:
            rows = self.app().service.listing(**wanted)
        except HzError as error:
            return self._error(request, error)
        return self._page(request, "list.html", rows=_render_rows(rows), wanted=wanted)

    def graph(self, request: Request) -> Response:
        """The graph (docs/graph.md) as a picture drawn on the server, and its edges."""
        from heinzel.session.graph import local_graph
        from heinzel.web.graph_svg import render_svg

        try:
            data = local_graph(self.app().service)
        except HzError as error:
            return self._error(request, error)
        names = {n["id"]: n.get("name") or n["id"] for n in data["nodes"]}
        return self._page(request, "graph.html", svg=render_svg(data), graph=data, names=names)

    async def list_events(self, request: Request) -> Response:
        """The list's rows (``event: rows``, rendered as the page renders them) now and
        each time the index moved, with the same filters as the page."""
        wanted = {k: request.query_params.get(k) or None for k in ("state", "artifact", "contract")}
        try:
            await run_in_threadpool(lambda: self.app().service.listing(**wanted))
        except HzError as error:
            return self._error(request, error)
        return StreamingResponse(
            self._list_stream(request, wanted),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store"},
        )

    async def _list_stream(self, request: Request, wanted: dict[str, Any]) -> AsyncIterator[str]:
        yield "retry: 1500\n\n"
        shown = None
        idle = 0.0
        while not self.stopping() and not await request.is_disconnected():
            moved = await run_in_threadpool(self._index_mark)
            if moved != shown:
                shown, idle = moved, 0.0
                rows = await run_in_threadpool(lambda: self.app().service.listing(**wanted))
                yield format_event("rows", _render_rows(rows))
                continue
            if idle >= self.idle_seconds and not await run_in_threadpool(self._running, None):
                return
            await asyncio.sleep(POLL)
            idle += POLL

    def _index_mark(self) -> tuple[Any, ...]:
        """What changes whenever the index applies a line: each spine's last applied seq."""
        db = self.app().service.index.db
        found = db.execute("SELECT count(*), total(seq), max(at) FROM _watermarks").fetchone()
        return tuple(found)

    def heinzel(self, request: Request) -> Response:
        """One Heinzelmännchen: contract and versions, turns, lessons, pending, verify, chat."""
        app = self.app()
        try:
            context = self._heinzel_context(app, request.path_params["ref"])
        except HzError as error:
            return self._error(request, error)
        home = app.service.home
        heinzel_id = context["h"]["id"]
        return self._page(
            request,
            "heinzel.html",
            **context,
            parts=_render_parts(self.keys.csrf, context),
            versions=_versions(home.contract_dir(heinzel_id)),
            chats=_chats(Inbox(home, heinzel_id)),
            seq=last_seq(home.spine_path(heinzel_id)),
            said=SAID.get(request.query_params.get("said", "")),
        )

    def _heinzel_context(self, app: App, ref: str) -> dict[str, Any]:
        """What the page's live parts show, read from the index (and the turn's cause)."""
        data = app.service.show(ref)
        return {
            "h": data,
            "verified": app.service.verify(data["id"])[0],
            "questions": open_questions(app, data["id"]),
            "drafts": pending_drafts(app, data["id"]),
            "resumable": resumable(app.service, data),
            "failure": _failure(app.service.home.session_dir(data["id"]), data["turns"]),
        }

    def _parts(self, heinzel_id: str) -> dict[str, dict[str, str]]:
        """The page's live parts (`PARTS`), each ``{html, hash}``: rendered as the page
        renders it, and a short hash of that HTML, by which the page swaps only what moved."""
        return _render_parts(self.keys.csrf, self._heinzel_context(self.app(), heinzel_id))

    def parts(self, request: Request) -> Response:
        """The live parts of a page as JSON (``{name: {html, hash}}``): what the page swaps
        in after a button, without waiting for the next spine line."""
        try:
            row = self.app().service.resolve(request.path_params["ref"])
            return JSONResponse(self._parts(str(row["id"])))
        except HzError as error:
            return JSONResponse(
                {"code": error.code, "message": error.message, "hint": error.hint}, _status(error)
            )

    def turn(self, request: Request) -> Response:
        """One turn: its lines, and from its body (while it exists) what it read, the model's
        messages, the tools it called and the draft; "expired" once the body is gone."""
        app = self.app()
        try:
            row = app.service.resolve(request.path_params["ref"])
        except HzError as error:
            return self._error(request, error)
        detail = turn_detail(app, str(row["id"]), request.path_params["turn"])
        if detail is None:
            missing = HeinzelError(
                "HZH080",
                f"{row['name']} has no turn {request.path_params['turn']}",
                "open one from the timeline on its page",
            )
            return self._error(request, missing)
        return self._page(request, "turn.html", h=row, t=detail)

    def reply(self, request: Request) -> Response:
        """What one turn did and said, as words (`heinzel.session.replies`): the sidebar
        shows it as the Heinzelmännchen's answer once the turn's last line arrives."""
        from heinzel.session.replies import turn_reply

        app = self.app()
        try:
            row = app.service.resolve(request.path_params["ref"])
        except HzError as error:
            return JSONResponse(
                {"code": error.code, "message": error.message, "hint": error.hint}, _status(error)
            )
        found = turn_reply(app.service, str(row["id"]), request.path_params["turn"])
        if found is None:
            return JSONResponse({"code": "HZH080", "message": "no such turn", "hint": ""}, 404)
        return JSONResponse(found)

    # -- buttons -------------------------------------------------------------------

    async def _act(self, request: Request, call: Callable[[App, str, Any], object]) -> Response:
        form = await request.form()
        ref = request.path_params["ref"]
        try:
            # this worker thread's App: an App's SQLite connections stay in their thread
            result = await run_in_threadpool(lambda: call(self.app(), ref, form))
        except HzError as error:
            if request.headers.get("accept") == "application/json":
                answer = {"code": error.code, "message": error.message, "hint": error.hint}
                return JSONResponse(answer, _status(error))
            return self._error(request, error)
        if request.headers.get("accept") == "application/json":
            return JSONResponse(result)
        already = isinstance(result, dict) and result.get("already")
        said = "?said=already-approved" if already else ""
        return RedirectResponse(f"/h/{ref}{said}", status_code=303)

    async def chat(self, request: Request) -> Response:
        """The sidebar's message, sent as ``hz heinzel chat`` sends it; a new turn it starts
        runs in a child process (`heinzel.web.background`), so the answer comes at once."""
        return await self._act(request, self._chat)

    def _chat(self, app: App, ref: str, form: Any) -> dict[str, Any]:
        # the page's id for this message (`hz.js`): a resend of it (a retried POST, a
        # second click) is claimed as `hz heinzel chat --request-id` is, delivered once
        request_id = str(form.get("request_id") or "") or None
        sent = app.verbs().chat(ref, str(form.get("text", "")), request_id=request_id, run=False)
        if sent.get("started") is False:
            heinzel_id = str(sent["key"]).partition("@")[0]
            self.start_turn(app.service.home.root, heinzel_id, str(sent["request_id"]))
            sent["started"] = True
        return sent

    async def approve(self, request: Request) -> Response:
        """``hz approve``: v1, the pending amendment, or a draft (its key in ``item``). A
        draft's learning turn starts at once in a child process (what the next tick would
        run), so the page moves without waiting for the tick (not for a paused or retired
        one, which learns once it is back); approving what is already
        approved (a second click) says so, never an error page."""

        def approve(app: App, ref: str, form: Any) -> dict[str, Any]:
            try:
                done = app.service.approve(str(form.get("item") or ref))
            except HzError as error:
                if error.code != "HZH073":
                    raise
                return {"already": True, "message": error.message, "said": SAID["already-approved"]}
            heinzel_id = str(done["approved"]).partition("@")[0]
            if "file" in done and app.service.queries.row(heinzel_id).get("hold") is None:
                # a draft: its tag line is gone; the learning turn goes on (a paused or
                # retired one's waits, as the tick leaves it: ``learns`` says until when)
                self.start_verb(
                    app.service.home.root, heinzel_id, "learn", str(done["approved"]), None
                )
                done["started"] = True
            return done

        return await self._act(request, approve)

    async def try_(self, request: Request) -> Response:
        """The amendment card's "Try it on the last turns": ``hz heinzel try`` (the pending
        amendment on the last three turns) in a child process (`heinzel.web.trials`); the
        request answers at once with the trial's own page (``location``), where its side by
        side shows once the child wrote it."""
        form = await request.form()
        ref = request.path_params["ref"]

        def start() -> str:
            from heinzel.web.trials import ask

            app = self.app()
            heinzel_id, ticket, turns = ask(app, ref, str(form.get("turns") or "") or None)
            hint = json.dumps({"ticket": ticket, "turns": turns})
            self.start_verb(app.service.home.root, heinzel_id, "try", hint, None)
            return f"/h/{heinzel_id}/try/{ticket}"

        try:
            location = await run_in_threadpool(start)
        except HzError as error:
            return self._error(request, error)
        if request.headers.get("accept") == "application/json":
            return JSONResponse({"started": True, "location": location}, 202)
        return RedirectResponse(location, status_code=303)

    async def tried(self, request: Request) -> Response:
        """A trial's page: "still trying" (reloaded every two seconds) until its child
        wrote the answer, then each turn's placed and tried drafts side by side
        (``templates/try.html``); JSON: ``{"state": "running"}``, then ``--json``'s answer."""
        ref, ticket = request.path_params["ref"], request.path_params["ticket"]

        def read() -> tuple[str, dict[str, Any] | None]:
            from heinzel.web.trials import outcome

            app = self.app()
            row = app.service.resolve(ref)
            return str(row["id"]), outcome(app.service.home.root, str(row["id"]), ticket)

        try:
            heinzel_id, tried = await run_in_threadpool(read)
        except HzError as error:
            return self._error(request, error, 404 if error.code == "HZH503" else None)
        json_asked = request.headers.get("accept") == "application/json"
        if tried is None:
            if json_asked:
                return JSONResponse({"state": "running"})
            page = self._page(request, "trying.html", ref=heinzel_id)
            page.headers["Refresh"] = "2"  # the browser asks again, no script needed
            return page
        if json_asked:
            return JSONResponse(tried)
        return self._page(request, "try.html", ref=heinzel_id, tried=tried)

    async def decline(self, request: Request) -> Response:
        """``hz heinzel decline``: the pending amendment."""
        return await self._act(request, lambda app, ref, form: app.service.decline(ref))

    async def answer(self, request: Request) -> Response:
        """``hz heinzel answer``: yes or no to a proposed write, or the words that answer
        a question the model asked (``text``, and ``question``: the asking turn); either
        is recorded here and its turn goes on in a child process, so the answer comes at
        once."""

        def answer(app: App, ref: str, form: Any) -> dict[str, Any]:
            if form.get("text") is not None:
                question = str(form.get("question") or "") or None
                request_id = str(form.get("request_id") or "") or None  # a resend: once
                text = str(form.get("text"))
                if question is None:
                    return app.turns.respond(ref, text, request_id=request_id)
                done = app.turns.respond(
                    ref, text, question=question, request_id=request_id, run=False
                )
                if "delivered" in done:  # sent before: nothing runs again
                    return done
                # recorded: the asking turn resumes and its follow-up runs in a child
                row = app.service.resolve(ref)
                home = app.service.home.root
                self.start_verb(home, str(row["id"]), "answered", str(done["turn"]), None)
                return {**done, "started": True}
            proposal = str(form.get("proposal") or "") or None
            said = form.get("said") == "yes"
            done = app.turns.answer(ref, said, proposal, resume=False)
            heinzel_id = str(app.service.resolve(ref)["id"])
            self.start_verb(app.service.home.root, heinzel_id, "answer", str(done["turn"]), None)
            return {**done, "started": True}

        return await self._act(request, answer)

    async def do(self, request: Request) -> Response:
        """The lifecycle buttons (``verb``): pause, unpause, retire, unretire and stop as
        their commands; wake, retry (``hint``) and resume checked here, their turn run in a
        child process (`heinzel.web.actions`), so the answer comes at once."""

        def act(app: App, ref: str, form: Any) -> dict[str, Any]:
            verb = str(form.get("verb") or "")
            if verb == "stop":
                return app.verbs().stop(ref)
            if verb in IN_REQUEST:
                return app.service.lifecycle(ref, verb)
            if verb not in IN_CHILD:
                raise HeinzelError(
                    "HZH352",
                    f"the page has no button {verb!r}",
                    f"one of: {', '.join(IN_REQUEST + IN_CHILD)}",
                )
            hint = str(form.get("hint") or "")
            home = app.service.home.root
            # the form's id, fresh on each page (`pages.request_id`): a resend of the same
            # form (a second click, a re-POST) is claimed as `--request-id` is, run once
            request_id = str(form.get("request_id") or "") or None
            if request_id is not None and verb != "resume":
                resent, left_open = resent_verb(app, ref, verb, request_id)
                if resent is not None and not left_open:
                    return resent  # "already delivered": nothing runs again
                if resent is not None:  # its turn a killed process left open: resumed
                    heinzel_id = str(app.service.resolve(ref)["id"])
                    self.start_verb(home, heinzel_id, verb, hint, request_id)
                    return {**resent, "delivered": LEFT_OPEN, "verb": verb, "started": True}
            row = check_turn_verb(app, ref, verb)
            self.start_verb(home, str(row["id"]), verb, hint, request_id)
            return {"name": row["name"], "verb": verb, "started": True}

        return await self._act(request, act)

    async def dismiss(self, request: Request) -> Response:
        """``hz heinzel dismiss``: a lesson by its number."""
        return await self._act(
            request, lambda app, ref, form: app.service.dismiss(ref, str(form.get("lesson", "")))
        )

    # -- server-sent events --------------------------------------------------------

    async def events(self, request: Request) -> Response:
        """The current row, then each spine line after ``Last-Event-ID`` (or after now)."""
        try:
            row = await run_in_threadpool(
                lambda: self.app().service.resolve(request.path_params["ref"])
            )
        except HzError as error:
            return self._error(request, error)
        path = self.app().service.home.spine_path(row["id"])
        try:
            given = seq_given(request.headers.get("last-event-id", ""))
        except HzError as error:
            return self._error(request, error)
        start = last_seq(path) if given is None else given
        return StreamingResponse(
            self._stream(request, row["id"], path, start),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store"},
        )

    async def _stream(
        self, request: Request, heinzel_id: str, path: Path, start: int
    ) -> AsyncIterator[str]:
        yield "retry: 1500\n\n"
        yield format_event("row", await run_in_threadpool(self._row, heinzel_id), start)
        yield format_event("parts", await run_in_threadpool(self._parts, heinzel_id))
        offset = offset_after(path, start)
        idle = 0.0
        while not self.stopping() and not await request.is_disconnected():
            lines, offset = lines_after(path, offset)
            for line in lines:
                yield format_event("line", line, line["seq"])
            if lines:
                idle = 0.0
                yield format_event("row", await run_in_threadpool(self._row, heinzel_id))
                yield format_event("parts", await run_in_threadpool(self._parts, heinzel_id))
                continue
            if idle >= self.idle_seconds and not await run_in_threadpool(self._running, heinzel_id):
                return
            await asyncio.sleep(POLL)
            idle += POLL

    def _row(self, heinzel_id: str) -> dict[str, Any]:
        row = self.app().service.queries.show(heinzel_id)
        return {k: row[k] for k in ("state", "pending", "next_due", "cost_today")}

    def _running(self, heinzel_id: str | None) -> bool:
        """Whether a turn of ``heinzel_id`` (of any, for None) runs."""
        db = self.app().service.index.db
        if heinzel_id is None:
            found = db.execute("SELECT 1 FROM turns WHERE state = 'running' LIMIT 1").fetchone()
        else:
            found = db.execute(
                "SELECT 1 FROM turns WHERE heinzel = ? AND state = 'running' LIMIT 1", [heinzel_id]
            ).fetchone()
        return found is not None


def _render_rows(rows: list[dict[str, Any]]) -> dict[str, str]:
    """The list's rows rendered (``_rows.html``), with the hash of that HTML."""
    html = TEMPLATES.get_template("_rows.html").render(rows=rows)
    return {"html": html, "hash": hashlib.sha256(html.encode("utf-8")).hexdigest()[:16]}


def _render_parts(csrf: str, context: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Each of `PARTS` rendered from ``context``, with the first 16 hex digits of its
    SHA-256 (the page's ``data-hash``), taken without the forms' fresh request ids (a part
    whose words did not move keeps its hash, and the page keeps what is typed in it)."""
    rendered = {}
    for name in PARTS:
        html = TEMPLATES.get_template(f"_{name}.html").render({"csrf": csrf, **context})
        digest = hashlib.sha256(unsent(html).encode("utf-8")).hexdigest()[:16]
        rendered[name] = {"html": html, "hash": digest}
    return rendered


def _status(error: HzError) -> int:
    """The HTTP status of a coded error, for a page and a JSON answer alike: 404 for no
    such Heinzelmännchen or turn (HZH080), 400 for any other refusal."""
    return 404 if error.code == "HZH080" else 400


def _versions(directory: Path) -> list[dict[str, Any]]:
    """Each stored contract version's text, with its diff from the one before."""
    found: list[dict[str, Any]] = []
    texts = sorted(directory.glob("v*.prose.md"), key=lambda p: int(p.name[1:].split(".")[0] or 0))
    before: list[str] = []
    for path in texts:
        lines = path.read_text(encoding="utf-8").splitlines()
        diff = list(difflib.unified_diff(before, lines, "before", path.name, lineterm="", n=1))
        found.append(
            {"name": path.name, "text": "\n".join(lines), "diff": diff[2:] if before else []}
        )
        before = lines
    return found


def _chats(inbox: Inbox) -> list[dict[str, Any]]:
    """The messages the user sent (the inbox's chat requests still kept), oldest first."""
    if not inbox.directory.is_dir():
        return []
    shown = []
    for entry in sorted(inbox.directory.glob("rq-*.json")):
        request = inbox.read(entry.name.removesuffix(".json"))
        if request is not None and request.kind == "chat":
            shown.append({"at": request.at, "text": request.message, "taken": request.taken})
    return shown


def _failure(session_dir: Path, turns: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last turn when it failed or was abandoned: its id, how it ended, a sentence
    saying so (``said``), and the cause kept for it (code, message, hint), as the command
    line prints."""
    from heinzel.turns.failure import cause_of

    if not turns:
        return None
    last = turns[-1]  # a retry that ended skipped is the last turn: the card goes with it
    how = last.get("disposition") or last.get("state")
    if how not in ("failed", "abandoned"):
        return None
    cause = cause_of(session_dir, str(last["id"])) or {}
    reason = str(last.get("reason") or "")
    said = ENDED.get(reason, f"It ended {how}" + (f" ({reason})." if reason else "."))
    return {"turn": last["id"], "how": how, "reason": reason, "said": said, "code": None, **cause}
