"""The commands of ``hz``, each a few lines over `heinzel.app.App`."""

from __future__ import annotations

from typing import Any

import click

from heinzel.cli import render
from heinzel.cli.base import (
    ONE_A_LINE,
    emit,
    emit_lines,
    exit_if_ended_badly,
    given_home,
    home_option,
    hz,
    json_option,
    open_app,
    request_id_option,
)
from heinzel.cli.forms import artifact_forms
from heinzel.index.plain import plain_rows


@hz.group()
def heinzel() -> None:
    """Create, list, inspect and steer Heinzelmännchen.

    \b
    Example:
      hz heinzel list --state asleep
    """


@heinzel.command("new")
@click.argument("sentence", required=False)
@click.option(
    "--from",
    "files",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="A contract file (.prose.md); repeat for several.",
)
@click.option(
    "--name",
    default=None,
    help="The name (a slug): with one file, or a sentence (checked before the model runs).",
)
@click.option(
    "--namespace",
    type=click.Choice(["me", "team"]),
    default=None,
    help="Overrides the contract's hz.namespace.",
)
@home_option
@json_option
def new(
    *,
    sentence: str | None,
    files: tuple[str, ...],
    name: str | None,
    namespace: str | None,
    home: str | None,
    as_json: bool,
) -> None:
    """Create Heinzelmännchen from contract files or a sentence (state: proposed).

    \b
    Example:
      hz heinzel new --from weekly-report.prose.md --name weekly-report
      hz approve weekly-report
    """
    if sentence and not files:
        created = open_app(home).create_from_sentence(sentence, namespace=namespace, name=name)
        emit(plain_rows([created]), as_json, render.created)
        return
    if not files:
        raise click.UsageError("give --from FILE (one or more), or a sentence")
    if sentence:
        raise click.UsageError(
            f"{sentence!r} given with --from: a sentence or --from FILE, not both "
            "(several files: --from A --from B)"
        )
    if len(set(files)) != len(files):
        raise click.UsageError("the same file is given twice with --from")
    rows = open_app(home).service.create_from_files(list(files), name=name, namespace=namespace)
    emit(plain_rows(rows), as_json, render.created)


@heinzel.command("list")
@click.option("--artifact", default=None, help="Only those that keep this asset (or file).")
@click.option("--state", default=None, help="proposed|asleep|awake|waiting|paused|retired")
@click.option(
    "--contract",
    "contract",
    default=None,
    help="NAME or NAME@VERSION, or KEY=VALUE for a frontmatter key.",
)
@home_option
@json_option
@click.option("--namespace", default=None, help="Only this namespace (team: with leases).")
def list_(
    artifact: str | None,
    state: str | None,
    contract: str | None,
    home: str | None,
    *,
    as_json: bool,
    namespace: str | None,
) -> None:
    """List Heinzelmännchen from the index (never opens a spine). Team ones show their
    lease holder and last receipt as last fetched from the team repository.

    \b
    Example:
      hz heinzel list --artifact doc:checkout/weekly-report --json
      hz heinzel list --namespace team
    """
    from heinzel.index.listing import Listing

    app = open_app(home)
    service = app.service
    exists = service.home_exists  # HZL001 when a file sits where the home should be
    if not exists:
        # read-only: a home that is not there yet is not created by looking at it
        listed = Listing([])
    else:
        listed = service.listed(artifact=artifact_forms(artifact), state=state, contract=contract)
    if namespace is not None:
        listed = listed.only(namespace)
    team = app.team() if listed.has_team() else None
    if team is not None:
        listed.team = team.overview()
    if as_json and len(listed) > ONE_A_LINE:  # thousands: no dict per row (heinzel.index.listing)
        emit_lines(listed.json_items())
        return
    rows = listed.dicts()
    filtered = any(f is not None for f in (artifact, state, contract, namespace))
    if rows or as_json:
        emit(rows, as_json, render.listing)
    elif filtered and exists and service.listing():
        click.echo(
            f"none of the Heinzelmännchen in {service.home.root} match "
            "(hz heinzel list shows them all)"
        )
    else:
        click.echo(
            f"no Heinzelmännchen in {service.home.root} "
            "(create one: hz heinzel new --from FILE.prose.md)"
        )


@heinzel.command("show")
@click.argument("name")
@home_option
@json_option
def show(name: str, home: str | None, as_json: bool) -> None:
    """Versions, timeline, lessons, the pending item and cost by cause; a team one's
    lease holder and last receipt as last fetched from the team repository.

    \b
    Example:
      hz heinzel show weekly-report
    """
    app = open_app(home)
    data = app.service.show(name)
    team = app.team() if data.get("namespace") == "team" else None
    if team is not None:
        data["team"] = team.overview().get(data["id"])
    emit(data, as_json, render.show)


def _lifecycle_command(verb: str, help_text: str) -> None:
    @heinzel.command(verb, help=help_text)
    @click.argument("name")
    @home_option
    @json_option
    def command(name: str, home: str | None, as_json: bool) -> None:
        row = open_app(home).service.lifecycle(name, verb)
        emit(row, as_json, render.state_line)


_lifecycle_command(
    "pause",
    "Pause: it wakes no more until unpaused.\n\n\b\nExample:\n  hz heinzel pause weekly-report",
)
_lifecycle_command(
    "unpause", "Unpause a paused one.\n\n\b\nExample:\n  hz heinzel unpause weekly-report"
)
_lifecycle_command(
    "retire", "Retire: kept, never woken.\n\n\b\nExample:\n  hz heinzel retire weekly-report"
)
_lifecycle_command(
    "unretire",
    "Bring a retired one back (asleep).\n\n\b\nExample:\n  hz heinzel unretire weekly-report",
)


@heinzel.command("rename")
@click.argument("name")
@click.argument("new_name")
@home_option
@json_option
def rename(name: str, new_name: str, home: str | None, as_json: bool) -> None:
    """Rename one (the id stays; names are unique per namespace).

    \b
    Example:
      hz heinzel rename weekly-report checkout-weekly
    """
    emit(open_app(home).service.rename(name, new_name), as_json, render.renamed)


@heinzel.command("amend")
@click.argument("name")
@click.option(
    "--from",
    "file",
    required=True,
    type=click.Path(dir_okay=False),
    help="The amended contract file.",
)
@home_option
@json_option
def amend(name: str, file: str, home: str | None, as_json: bool) -> None:
    """Propose an amendment as the user (approve it with `hz approve NAME`).

    \b
    Example:
      hz heinzel amend weekly-report --from weekly-report.v2.prose.md
    """
    emit(open_app(home).service.amend(name, file), as_json, render.amendment)


@heinzel.command("decline")
@click.argument("name")
@home_option
@json_option
def decline(name: str, home: str | None, as_json: bool) -> None:
    """Decline the pending amendment.

    \b
    Example:
      hz heinzel decline weekly-report
    """
    emit(open_app(home).service.decline(name), as_json, render.amendment)


@heinzel.command("lessons")
@click.argument("name")
@home_option
@json_option
def lessons(name: str, home: str | None, as_json: bool) -> None:
    """What it learned from you.

    \b
    Example:
      hz heinzel lessons weekly-report
    """
    emit(open_app(home).service.lessons(name), as_json, render.lessons)


@heinzel.command("dismiss")
@click.argument("name")
@click.argument("lesson")
@home_option
@json_option
def dismiss(name: str, lesson: str, home: str | None, as_json: bool) -> None:
    """Dismiss a lesson: kept, marked, never shown to the model again.

    \b
    Example:
      hz heinzel dismiss weekly-report 12
    """
    emit(open_app(home).service.dismiss(name, lesson), as_json, render.lessons)


@heinzel.command("forget")
@click.argument("name")
@click.argument("target", metavar="TURN|SEQ")
@click.option("--instead", default=None, help="A short line the model sees in its place.")
@home_option
@json_option
def forget(name: str, target: str, instead: str | None, home: str | None, as_json: bool) -> None:
    """Hide a turn or one spine line from what later turns see (the record stays).

    \b
    Example:
      hz heinzel forget weekly-report 42
    """
    emit(open_app(home).service.forget(name, target, instead), as_json, render.forgot)


@heinzel.command("verify")
@click.argument("name", required=False)
@home_option
@json_option
def verify(name: str | None, home: str | None, as_json: bool) -> None:
    """Check every chain (or one); exit 1 on a break, naming the file and seq.

    \b
    Example:
      hz heinzel verify
    """
    reports = open_app(home).service.verify(name)
    emit(reports, as_json, render.verify)
    if any(not r["ok"] for r in reports):
        raise SystemExit(1)


@heinzel.command("reindex")
@home_option
@json_option
def reindex(home: str | None, as_json: bool) -> None:
    """Rebuild the index from the spines.

    \b
    Example:
      hz heinzel reindex
    """
    emit(open_app(home).service.reindex(), as_json, render.reindex)


@heinzel.command("prune")
@home_option
@json_option
def prune(home: str | None, as_json: bool) -> None:
    """Delete expired turn bodies, inbox requests and caches (only files hz wrote).

    \b
    Example:
      hz heinzel prune
    """
    emit(open_app(home).service.prune(), as_json, render.prune)


@heinzel.command("wake")
@click.argument("name")
@click.option("--message", default=None, help="A message for the turn (its body gets the text).")
@request_id_option("wake")
@home_option
@json_option
def wake(
    name: str, message: str | None, request_id: str | None, home: str | None, as_json: bool
) -> None:
    """Start a new turn now (cause asked) and run it to its end or its wait.

    \b
    Example:
      hz heinzel wake weekly-report --message 'draft now'
    """
    app = open_app(home)
    team = app.team()
    if team is not None:
        team.check_asked(name)  # HZH304: a team one runs only where its lease is
    done = app.service.in_words(app.turns.wake(name, message, request_id=request_id))
    emit(done, as_json, render.wake)
    if not _resent(done):
        exit_if_ended_badly(done)


def _resent(done: dict[str, Any]) -> bool:
    """A resend that ran nothing (`already delivered ...`): exit 0, whatever its first
    delivery's turn became."""
    said = str(done.get("delivered") or "")
    return said.startswith("already delivered") and "resumed now" not in said


@heinzel.command("answer")
@click.argument("name")
@click.argument("said", metavar="ANSWER")
@click.option("--proposal", default=None, help="Which proposal (when several wait).")
@click.option(
    "--question", default=None, help="Which question, by its turn id (when several wait)."
)
@request_id_option("answer")
@home_option
@json_option
def answer(
    name: str,
    said: str,
    *,
    proposal: str | None,
    question: str | None,
    request_id: str | None,
    home: str | None,
    as_json: bool,
) -> None:
    """Answer its question: yes|no to a write it proposed, or free text to a question its
    outcome asked; the waiting turn goes on at once.

    \b
    Example:
      hz heinzel answer weekly-report "only the platform team's incidents"
    """
    app = open_app(home)
    done = app.service.in_words(
        app.turns.respond(name, said, proposal, question=question, request_id=request_id)
    )
    emit(done, as_json, render.wake)
    if not _resent(done):
        exit_if_ended_badly(done)


@hz.command("approve")
@click.argument("items", nargs=-1, required=True)
@home_option
@json_option
def approve(items: tuple[str, ...], home: str | None, as_json: bool) -> None:
    """Approve v1 of a proposed one, a pending amendment, or a local draft.

    \b
    Example:
      hz approve weekly-report standup-notes
    """
    from ledger.errors import HzError

    service = open_app(home).service
    done: list[dict[str, Any]] = []
    refused: list[HzError] = []
    for item in items:  # each on its own: one refused never hides the others approved
        try:
            done.append(service.approve(item))
        except HzError as error:
            refused.append(error)
    if done:
        emit(plain_rows(done), as_json, render.approved)
    for each in refused:
        click.echo(each.render(), err=True)
    if refused:
        click.get_current_context().exit(1)


@hz.command("drafts")
@home_option
@json_option
def drafts(home: str | None, as_json: bool) -> None:
    """Every waiting draft with its place, then every question waiting on you in its
    words (`--json`: the drafts; `hz heinzel show NAME --json` has the questions).

    \b
    Example:
      hz drafts --json
    """
    service = open_app(home).service
    rows = service.drafts()
    if as_json:
        emit(rows, as_json, render.drafts)
        return
    emit(rows, as_json, lambda drafts: render.waiting(drafts, service.questions()))


@hz.group()
def system() -> None:
    """The daemon, the doctor, credentials and the web page.

    \b
    Example:
      hz system doctor
    """


@system.group()
def daemon() -> None:
    """Ticks: wake what is due.

    \b
    Example:
      hz system daemon tick
    """


@system.command("doctor")
@click.option(
    "--online", is_flag=True, help="Also make one minimal request to each model and source adapter."
)
@home_option
@json_option
def doctor(online: bool, home: str | None, as_json: bool) -> None:
    """What is configured, what is missing, and the fix (exit 1 on a problem).

    \b
    Example:
      hz system doctor
      hz system doctor --online
    """
    app = open_app(home)
    found = app.service.doctor(online=online)
    team = app.service.settings.team
    if team.joined:  # the team's own check (heinzel.team is beside heinzel.service)
        from heinzel.team.signing import key_check

        joined = app.team()
        refusal = joined.signing_refusal() if joined is not None else None
        found["checks"].append(key_check(team.handle, team.signing_key, refusal))
    emit(found, as_json, render.doctor)
    if not all(check["ok"] for check in found["checks"]):
        raise SystemExit(1)


@hz.command("mcp")
@home_option
def mcp(home: str | None) -> None:
    """Serve the verbs as MCP tools over stdio, for your own agent (docs/mcp.md).

    \b
    Example:
      claude mcp add hz -e HZ_HOME=$HZ_HOME -- hz mcp
    """
    from heinzel.mcp.hello import serve  # the handshake answered before the SDK loads

    serve(given_home(home))
