"""``hz team lint|status``: the team repository's ``hz/state`` branch and leases."""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from heinzel.cli.base import emit, home_option, hz, json_option, open_app
from heinzel.errors import HeinzelError
from ledger.files import ensure_private_dir, write_atomic

if TYPE_CHECKING:
    from heinzel.team import Team


@hz.group("team")
def team() -> None:
    """The team repository: receipts on hz/state, leases (docs/team.md)."""


def _team(home: str | None) -> Team:
    found = open_app(home).team()
    if found is None:
        raise HeinzelError(
            "HZH300",
            "no team repository is configured",
            "set [team] repository and [team] handle in your config.toml (docs/team.md)",
        )
    return found


@team.command("lint")
@home_option
@json_option
def lint(home: str | None, as_json: bool) -> None:
    """Fetch hz/state and lint every receipt on it (exit 1 on a problem).

    \b
    Example:
      hz team lint
    """
    notices: list[str] = []
    problems = _team(home).lint(notices)
    said = {"notices": notices} if notices else {}  # a rewrite the fetch found
    emit({"problems": problems, "ok": not problems, **said}, as_json, _render_lint)
    if problems:
        raise SystemExit(1)


@team.command("status")
@home_option
@json_option
def status(home: str | None, as_json: bool) -> None:
    """The remote, the outbox and the leases (as last fetched).

    \b
    Example:
      hz team status
    """
    emit(_team(home).status(), as_json, _render_status)


def _render_lint(data: dict[str, Any]) -> str:
    notices = [f"notice: {n}" for n in data.get("notices", [])]
    if data["ok"]:
        return "\n".join([*notices, "hz/state: every receipt passes the lint"])
    return "\n".join(
        [*notices, "hz/state: the lint refuses:", *(f"  {p}" for p in data["problems"])]
    )


def _render_status(data: dict[str, Any]) -> str:
    lines = [
        f"team repository {data['repository']} as {data['handle']} on {data['machine']}",
        f"  outbox: {data['outbox']} waiting, {data['refused']} refused",
    ]
    remote = data["remote"]
    if remote["unreachable_since"]:
        lines.append(
            f"  remote: unreachable since {remote['unreachable_since']} ({remote['error']}); "
            f"last reached {remote['reached'] or 'never'}"
        )
        lines.append(f"    meanwhile: {remote['meanwhile']}")
    elif remote["reached"]:
        lines.append(f"  remote: reached at {remote['reached']}")
    roster = data["roster"]
    if roster["owner"]:
        lines.append(
            f"  roster: on hz/state (commit {str(roster['commit'])[:12]}), owner "
            f"{roster['owner']}; signing required"
        )
    for refused in roster["refused"]:
        lines.append(
            f"  roster change refused (HZH482): commit {refused['commit'][:12]}: "
            f"{refused['reason']}; the roster before it stays in force"
        )
    if roster["signing"]:
        signing = roster["signing"]
        lines += [f"  {signing['code']}: {signing['message']}", f"    fix: {signing['hint']}"]
    for refused in remote["declined"]:
        lines += [f"  hook refused: {refused['message']}", f"    fix: {refused['hint']}"]
    if remote["rewrite"]:
        rewrite = remote["rewrite"]
        lines.append(
            f"  hz/state was rewritten (seen {rewrite['at']}): {str(rewrite['to'])[:12]} does "
            f"not descend from {str(rewrite['from'])[:12]}; {rewrite['dropped']} receipt(s) of "
            "this machine pushed again"
        )
    for lease in data["leases"]:
        mine = " (mine)" if lease["mine"] else ""
        on = f" on {lease['machine']}" if lease["machine"] else ""
        if lease.get("machine_name"):
            on = f" on {lease['machine_name']} ({lease['machine']})"
        name = lease["name"] or lease["team"]
        state = "" if lease["state"] == "held" else f" [{lease['state']}]"
        lines.append(
            f"  lease {name}: {lease['holder']}{on}{mine}, token {lease['token']}, "
            f"until {lease['expiry']}{state}"
        )
        if lease["open"]:
            lines.append(f"    open claims: {', '.join(lease['open'])}")
        if lease["cause"]:
            lines += [f"    why: {lease['cause']}", f"    next: {lease['next']}"]
    for refusal in data["refusals"]:
        again = " (can be pushed again: hz team repush)" if refusal["repushable"] else ""
        lines.append(f"  refused {refusal['file']}: {refusal['reason']}{again}")
    if data["quarantined"]:
        lines.append(f"  hz/state: {len(data['quarantined'])} line(s) quarantined (not counted):")
        lines += [
            f"    {q['where']}: {q['problem']} (by {q['by']!r}, {q['kind']} {q['key']})"
            for q in data["quarantined"]
        ]
    return "\n".join(lines)


@team.command("repush")
@home_option
@json_option
def repush(home: str | None, as_json: bool) -> None:
    """Put the refused receipts that could be pushed now (the lint admits them with
    today's roster, their token is not stale) back into the outbox; the next tick
    pushes them.

    \b
    Example:
      hz team repush
    """
    moved = _team(home).repush()
    emit(
        {"repushed": moved},
        as_json,
        lambda d: f"{len(d['repushed'])} receipt(s) back in the outbox",
    )


@team.command("hook")
@click.argument("repository", required=False, type=click.Path(file_okay=False))
@click.option(
    "--allowed-signers",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="An allowed-signers file: every hz/state commit must be signed by one of its keys.",
)
@home_option
@json_option
def hook(
    repository: str | None, allowed_signers: str | None, home: str | None, as_json: bool
) -> None:
    """Install the pre-receive hook that lints every push to hz/state and the lease
    refs on a bare repository (without REPOSITORY: print it, for a server's own hook).

    \b
    Example:
      hz team hook /srv/git/team.git
    """
    from heinzel.team.hook import hook_script

    found = _team(home)
    settings = found.sessions.settings.team
    signers = str(Path(allowed_signers).resolve()) if allowed_signers else None
    if repository is not None and allowed_signers is not None:
        signers = str((Path(repository) / "hooks" / "hz-allowed-signers").resolve())
    script = hook_script(
        sys.executable, found.roster(), 2 * settings.interval + settings.max_skew, signers
    )
    if repository is None:
        click.echo(script, nl=False)
        return
    hooks = Path(repository) / "hooks"
    if not (Path(repository) / "objects").is_dir():
        raise HeinzelError(
            "HZH305",
            f"{repository} is not a bare git repository",
            "name the team repository's folder on its server (it holds objects/ and refs/)",
        )
    ensure_private_dir(hooks)
    if allowed_signers is not None and signers is not None:
        write_atomic(Path(signers), Path(allowed_signers).read_bytes())
    path = hooks / "pre-receive"
    write_atomic(path, script.encode())
    path.chmod(0o700)
    emit({"installed": str(path), "roster": sorted(found.roster())}, as_json, _render_hook)


@team.command("key")
@home_option
@json_option
def key(home: str | None, as_json: bool) -> None:
    """Your line for the roster (the key in [team] signing_key signs your hz/state
    commits). Without a key, make one: an ed25519 key by `ssh-keygen` in the home's
    private team folder (0600), set as [team] signing_key in the file that sets your
    [team] handle; give the line to the roster's owner.

    \b
    Example:
      hz team key
      hz team roster add ben "$(hz team key)"   # the owner, with ben's line
    """
    from heinzel.team.signing import make_key, signer_line

    found = _team(home)
    settings = found.sessions.settings.team
    made = None
    signing_key = settings.signing_key
    if not signing_key:
        made = make_key(found.root, str(settings.handle), _team_config_file())
        signing_key = str(made[0])
        click.echo(
            f"made {made[0]} (ed25519, 0600) and set [team] signing_key in {made[1]}; "
            f"give the line below to the roster's owner (`hz team roster add "
            f"{settings.handle} LINE`)",
            err=True,
        )
    line = signer_line(str(settings.handle), signing_key)
    emit(
        {
            "handle": settings.handle,
            "allowed_signer": line,
            "made": str(made[0]) if made else None,
            "config": str(made[1]) if made else None,
        },
        as_json,
        lambda d: d["allowed_signer"],
    )


def _team_config_file() -> Path | None:
    """The configuration file that sets [team] handle (None: none does)."""
    from heinzel.config import default_site_path, default_user_path, load_settings

    loaded = load_settings(
        env=os.environ, cwd=Path.cwd(), site=default_site_path(), user=default_user_path()
    )
    label, _, path = loaded.provenance.get("team.handle", "").partition(":")
    return Path(path) if path and label in ("user", "project", "HZ_CONFIG", "site") else None


@team.group("roster", invoke_without_command=True)
@home_option
@json_option
@click.pass_context
def roster(context: click.Context, home: str | None, as_json: bool) -> None:
    """The roster on hz/state (handles, roles, SSH keys) as last fetched, and the changes
    refused because its owner did not sign them.

    \b
    Example:
      hz team roster
      hz team roster add ben ben_key.pub
    """
    if context.invoked_subcommand is not None:
        return
    found = _team(home)
    state = found.roster_state()
    current = state.roster
    emit(
        {
            "owner": current.owner if current else None,
            "members": [
                {
                    "handle": h,
                    "role": r,
                    "keys": list(k),
                    "machines": dict(current.machines.get(h, {})) if current else {},
                }
                for h, (r, k) in sorted((current.members if current else {}).items())
            ],
            "commit": state.commit,
            "pinned": state.pinned,
            "refused": state.refused,
        },
        as_json,
        _render_roster,
    )


def _render_roster(data: dict[str, Any]) -> str:
    if data["owner"] is None:
        lines = ["no roster on hz/state: [team] members and allowed_signers apply"]
    else:
        lines = [f"roster (commit {str(data['commit'])[:12]}), owner {data['owner']}:"]
        for m in data["members"]:
            lines.append(f"  {m['handle']} {m['role']}: {', '.join(m['keys'])}")
            if m["machines"]:
                listed = ", ".join(f"{n} ({i})" for n, i in sorted(m["machines"].items()))
                lines.append(f"    machines: {listed}")
    lines += [
        f"  refused change {r['commit'][:12]}: {r['reason']} (HZH482)" for r in data["refused"]
    ]
    return "\n".join(lines)


@roster.command("add")
@click.argument("handle")
@click.argument("key")
@click.option("--role", type=click.Choice(["member", "owner"]), default="member", show_default=True)
@click.option(
    "--machine",
    "machines",
    multiple=True,
    metavar="NAME=ID",
    help="A machine HANDLE runs hz on: a name and the id `hz team status` shows there.",
)
@home_option
@json_option
def roster_add(
    *, handle: str, key: str, role: str, machines: tuple[str, ...], home: str | None, as_json: bool
) -> None:
    """Add HANDLE with its SSH public KEY (its `hz team key` line, a .pub file or the
    key itself) to the roster on hz/state, in a commit you sign; the owner only. With no
    roster yet you start it, as its owner. --role owner hands the roster on. --machine
    lists a machine of HANDLE's (again: added to those listed), which `hz team status`
    then names where it holds a lease.

    \b
    Example:
      hz team roster add ben "$(cat ben_key.pub)" --machine laptop=mc-0123456789abcdef0123
    """
    text = Path(key).read_text(encoding="utf-8") if Path(key).is_file() else key
    named = dict(m.partition("=")[::2] for m in machines)
    changed = _team(home).change_roster(handle, text, role, remove=False, machines=named)
    emit({"owner": changed.owner, "members": sorted(changed.handles())}, as_json, _render_changed)


@roster.command("remove")
@click.argument("handle")
@home_option
@json_option
def roster_remove(handle: str, home: str | None, as_json: bool) -> None:
    """Remove HANDLE from the roster on hz/state (the owner only).

    \b
    Example:
      hz team roster remove cara
    """
    changed = _team(home).change_roster(handle, None, "member", remove=True)
    emit({"owner": changed.owner, "members": sorted(changed.handles())}, as_json, _render_changed)


def _render_changed(data: dict[str, Any]) -> str:
    return f"roster pushed: owner {data['owner']}, members {', '.join(data['members'])}"


@team.command("check-push", hidden=True)
@click.option("--roster", default="", help="The roster handles, comma-separated.")
@click.option("--lease-max", type=int, default=None, help="Seconds a lease may run ahead.")
@click.option("--allowed-signers", default=None, help="Keys that must sign hz/state commits.")
@home_option
def check_push_command(
    roster: str, lease_max: int | None, allowed_signers: str | None, home: str | None
) -> None:
    """The pre-receive hook's check: ``<old> <new> <ref>`` lines on stdin (exit 1 with the
    reasons on stderr when the push must not land); ``--home`` is not read.

    \b
    Example:
      hz team check-push --roster ana,ben < updates
    """
    from heinzel.clock import clock_from_env
    from heinzel.team.hook import check_push

    updates = []
    for line in sys.stdin.read().splitlines():
        parts = line.split()
        if len(parts) == 3:
            updates.append((parts[0], parts[1], parts[2]))
    problems = check_push(
        updates,
        [n for n in roster.split(",") if n],
        now=clock_from_env(os.environ)(),
        lease_max=timedelta(seconds=lease_max) if lease_max is not None else None,
        allowed_signers=allowed_signers,
    )
    if problems:
        for problem in problems:
            click.echo(f"hz: refused: {problem}", err=True)
        raise SystemExit(1)


def _render_hook(data: dict[str, Any]) -> str:
    return f"installed {data['installed']} (roster: {', '.join(data['roster'])})"
