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
    """The providers with a stored key, and whether the variable overrides it (no keys shown).

    \b
    Example:
      hz system credential list
    """
    store = _store()
    stored = set(store.providers())
    keyring = os_keyring()
    rows = []
    for provider, variables in sorted(SECRET_VARIABLES.items()):
        used = next((v for v in variables if os.environ.get(v)), None)
        rows.append(
            {
                "provider": provider,
                "stored": provider in stored,
                "keyring": keyring is not None and keyring.get(provider) is not None,
                "variable": used or variables[0],  # the one set (it wins), else the first
                "variables": list(variables),  # every variable read, in order
                "variable_set": used is not None,
            }
        )

    def text(found: list[dict[str, object]]) -> str:
        lines = [f"credentials file: {store.path}"]
        lines.append(f"OS keyring: {keyring.name if keyring is not None else 'none found'}")
        for row in found:
            where = []
            used = bool(row["variable_set"])
            if used:
                where.append(f"${row['variable']} (used)")
            if row["keyring"]:
                where.append("keyring" + (" (overridden)" if used else " (used)"))
                used = True
            if row["stored"]:
                where.append("stored" + (" (overridden)" if used else " (used)"))
            read = ", ".join(f"${v}" for v in cast("list[str]", row["variables"]))
            lines.append(f"{row['provider']}: {', '.join(where) or 'no key'}; reads {read}")
        return "\n".join(lines)

    emit(rows, as_json, text)


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
