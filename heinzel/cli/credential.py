"""``hz system credential set|list|forget``: the user's model keys, GitHub token and CalDAV
password, kept in the OS keyring where the `keyring` package finds a real one, else in a
0600 file.

The key is read from standard input (piped, or typed at a hidden prompt), never from the
command line, where other users could see it in the process list.
"""

from __future__ import annotations

import os
import sys
from typing import cast

import click

from heinzel.cli.base import emit, json_option
from heinzel.cli.commands import system
from heinzel.errors import HeinzelError
from heinzel.store.credentials import (
    KEY_VARIABLES,
    SECRET_VARIABLES,
    CredentialStore,
    credentials_path,
)
from heinzel.store.os_keyring import os_keyring

PROVIDER = click.Choice(sorted(KEY_VARIABLES))


def _store() -> CredentialStore:
    return CredentialStore(credentials_path(os.environ))


@system.group()
def credential() -> None:
    """The keys hz stores: models, github, caldav (the provider's variable, when set, wins).

    \b
    Example:
      printf '%s' "$KEY" | hz system credential set anthropic
      gh auth token | hz system credential set github
      hz system credential list
    """


@credential.command("set")
@click.argument("provider", type=PROVIDER)
def set_(provider: str) -> None:
    """Store PROVIDER's key, read from standard input (never an argument).

    \b
    Example:
      hz system credential set openai   # then paste the key
    """
    if sys.stdin.isatty():
        key = click.prompt(f"{provider} key", hide_input=True)
    else:
        key = sys.stdin.read()
    keyring = os_keyring()
    if keyring is not None:
        if not key.strip():
            raise HeinzelError(
                "HZH263", "the key is empty", "pipe the key in, or type it when asked"
            )
        keyring.set(provider, key.strip())
        click.echo(f"stored the {provider} key in the OS keyring ({keyring.name})")
        return
    store = _store()
    store.set(provider, key)
    click.echo(f"stored the {provider} key in {store.path} (mode 0600)")


@credential.command("list")
@json_option
def list_(as_json: bool) -> None:
    """The providers with a stored key, and which one each is used (no keys shown).

    \b
    Example:
      hz system credential list
    """
    from heinzel.capabilities.configured import secret_origin, secret_variables

    store = _store()
    stored = set(store.providers())
    keyring = os_keyring()
    in_keyring = {p for p in SECRET_VARIABLES if keyring is not None and keyring.get(p)}
    tables = _adapter_tables()
    rows = []
    for provider, usual in sorted(SECRET_VARIABLES.items()):
        kept = "keyring" if provider in in_keyring else "file" if provider in stored else None
        users = {c: t for c, t in tables.items() if getattr(t, "backend", None) == provider}
        variables = tuple(
            dict.fromkeys(v for t in users.values() for v in secret_variables(t))
        ) or tuple(usual)

        def stored_as(_provider: str, kept: str | None = kept) -> str | None:
            return kept

        origins = {
            capability: _origin(secret_origin(table, os.environ, stored_as), kept)
            for capability, table in sorted(users.items())
        }
        set_ = next((v for v in variables if os.environ.get(v)), None)
        first = _origin(f"env:{set_}" if set_ else "none", kept)
        used = sorted(set(origins.values())) if origins else [first]
        rows.append(
            {
                "provider": provider,
                "stored": provider in stored,
                "keyring": provider in in_keyring,
                "variable": set_ or variables[0],  # the one set (it wins), else the first
                "variables": list(variables),  # every variable read, in order
                "variable_set": set_ is not None,
                "used": used,  # what is used: env:NAME, keyring, file, gh, none
                "adapters": origins,  # each adapter's source, as doctor says
            }
        )

    def text(found: list[dict[str, object]]) -> str:
        lines = [f"credentials file: {store.path}"]
        lines.append(f"OS keyring: {keyring.name if keyring is not None else 'none found'}")
        for row in found:
            lines.append(_line(row))
        return "\n".join(lines)

    emit(rows, as_json, text)


def _origin(origin: str, kept: str | None) -> str:
    """`secret_origin`'s answer with ``stored`` told apart: ``keyring`` or ``file``."""
    if origin == "none" and kept is not None:
        return kept  # a model key: the variable, else what is stored
    return kept or "none" if origin == "stored" else origin


def _line(row: dict[str, object]) -> str:
    """``github: $MY_TOKEN (used by code-host), stored (overridden); reads $MY_TOKEN, ...``."""
    adapters = cast("dict[str, str]", row["adapters"])
    used = cast("list[str]", row["used"])

    def mark(source: str) -> str:
        if source not in used:
            return " (overridden)" if any(u not in ("gh", "none") for u in used) else ""
        users = [c for c, s in adapters.items() if s == source]
        return f" (used by {', '.join(users)})" if users else " (used)"

    where = []
    if row["variable_set"]:
        where.append(f"${row['variable']}{mark('env:' + str(row['variable']))}")
    if row["keyring"]:
        where.append("keyring" + mark("keyring"))
    if row["stored"]:
        where.append("stored" + mark("file"))
    if "gh" in used:
        where.append("gh auth token, if logged in" + mark("gh"))
    read = ", ".join(f"${v}" for v in cast("list[str]", row["variables"]))
    return f"{row['provider']}: {', '.join(where) or 'no key'}; reads {read}"


def _adapter_tables() -> dict[str, object]:
    """The configured ``[adapters.*]`` tables (none when the configuration can't be read:
    `hz system doctor` names that)."""
    from heinzel.capabilities.configured import parse_adapter_tables
    from heinzel.cli.base import open_app

    try:
        return parse_adapter_tables(open_app(None).service.settings.adapters)
    except HeinzelError:
        return {}


@credential.command("forget")
@click.argument("provider", type=PROVIDER)
def forget(provider: str) -> None:
    """Remove PROVIDER's stored key (from the OS keyring and the file).

    \b
    Example:
      hz system credential forget openai
    """
    keyring = os_keyring()
    removed = keyring.forget(provider) if keyring is not None else False
    removed = _store().forget(provider) or removed
    click.echo(f"forgot the {provider} key" if removed else f"no stored {provider} key")
