"""The user's keys: the provider's environment variable, or a credential hz stores.

A credential is stored by provider name (``anthropic``, ``openai`` for models; ``github``
for the GitHub token, ``caldav`` for the CalDAV password) in one JSON file,
``<user config dir>/hz/credentials.json`` (``HZ_CREDENTIALS`` names another), written
atomically with mode 0600 in a 0700 folder. It is read only when a turn resolves its
model or the tick builds its source adapters (`stored_secret`), and it never enters a
spine, a body, a log or a runner's environment.
Where the `keyring` package finds a real OS keyring (`heinzel.store.os_keyring`), keys
are kept there instead, and looked for there between the variable and the file.
`find_key` says where a key came from (``env:ANTHROPIC_API_KEY``, ``keyring:<backend>`` or
``credential:<path>``) so that ``hz system doctor`` can show it without printing it.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from heinzel.errors import HeinzelError
from heinzel.store.os_keyring import os_keyring
from ledger.files import ensure_private_dir, write_atomic
from ledger.records import frozen_record

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = [
    "KEY_VARIABLES",
    "SECRET_VARIABLES",
    "CredentialStore",
    "FoundKey",
    "credentials_path",
    "find_key",
    "model_with_key",
    "stored_secret",
]

KEY_VARIABLES: Mapping[str, str] = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "github": "GH_TOKEN",
    "caldav": "HZ_CALDAV_PASSWORD",
}
"""A provider and the environment variable its key is usually in (a source adapter's
table may name another: ``token_env``, ``password_env``)."""

SECRET_VARIABLES: Mapping[str, tuple[str, ...]] = {
    **{provider: (variable,) for provider, variable in KEY_VARIABLES.items()},
    "github": ("GH_TOKEN", "GITHUB_TOKEN"),
}
"""Every environment variable hz reads a provider's secret from, in the order it reads
them (the first set wins over the keyring and the file); ``KEY_VARIABLES`` names the
first. A source adapter's ``token_env`` or ``password_env`` is read before these."""

PREFIX_PROVIDER: Mapping[str, str] = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openai-chat": "openai",
}
"""A model string's prefix and the provider whose key it needs."""


@frozen_record
class FoundKey:
    """A key and where it came from (the source is safe to show, the key is not)."""

    key: str
    source: str


def credentials_path(env: Mapping[str, str]) -> Path:
    """``HZ_CREDENTIALS``, else ``<user config dir>/hz/credentials.json``."""
    named = env.get("HZ_CREDENTIALS")
    if named:
        return Path(named).expanduser()
    config_home = env.get("XDG_CONFIG_HOME")
    if config_home:
        return Path(config_home) / "hz" / "credentials.json"
    return platformdirs.user_config_path("hz") / "credentials.json"


def _unknown(provider: str) -> HeinzelError:
    return HeinzelError(
        "HZH260",
        f"{provider!r} is not a provider hz keeps a key for",
        "use one of: " + ", ".join(sorted(KEY_VARIABLES)),
    )


class CredentialStore:
    """The 0600 credentials file: ``{provider: key}``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, str]:
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            return {}
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise HeinzelError(
                "HZH261",
                f"the credentials file {self.path} can be read by others",
                f"chmod 600 {self.path}; if others may have read it, replace the keys "
                "at the provider and store the new ones (`hz system credential set PROVIDER`)",
            )
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise HeinzelError(
                "HZH262",
                f"can't read the credentials file {self.path}: {type(exc).__name__}",
                "remove it and set the keys again: `hz system credential set PROVIDER`",
            ) from None
        if not isinstance(data, dict):
            return {}
        return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}

    def _write(self, data: Mapping[str, str]) -> None:
        ensure_private_dir(self.path.parent)
        write_atomic(self.path, json.dumps(dict(sorted(data.items())), indent=1).encode())

    def get(self, provider: str) -> str | None:
        """The stored key of ``provider``, if any."""
        return self._read().get(provider)

    def set(self, provider: str, key: str) -> None:
        """Store ``key`` for ``provider`` (replacing any)."""
        if provider not in KEY_VARIABLES:
            raise _unknown(provider)
        key = key.strip()
        if not key:
            raise HeinzelError(
                "HZH263", "the key is empty", "pipe the key in, or type it when asked"
            )
        self._write({**self._read(), provider: key})

    def forget(self, provider: str) -> bool:
        """Remove ``provider``'s key; whether there was one."""
        data = self._read()
        if provider not in data:
            return False
        del data[provider]
        self._write(data)
        return True

    def providers(self) -> list[str]:
        """The providers with a stored key (never the keys)."""
        return sorted(self._read())


def stored_secret(provider: str, env: Mapping[str, str]) -> str | None:
    """The credential stored for ``provider`` (``github``, ``caldav``...) in the OS keyring
    or the file, or None: what a source adapter falls back to when its variable is unset."""
    keyring = os_keyring()
    kept = keyring.get(provider) if keyring is not None else None
    return kept or CredentialStore(credentials_path(env)).get(provider) or None


def find_key(prefix: str, env: Mapping[str, str]) -> FoundKey | None:
    """The key a model of ``prefix`` runs with: the environment, the OS keyring, the file."""
    provider = PREFIX_PROVIDER.get(prefix)
    if provider is None:
        return None
    variable = KEY_VARIABLES[provider]
    if env.get(variable):
        return FoundKey(env[variable], f"env:{variable}")
    keyring = os_keyring()
    kept = keyring.get(provider) if keyring is not None else None
    if kept and keyring is not None:
        return FoundKey(kept, f"keyring:{keyring.name}")
    store = CredentialStore(credentials_path(env))
    stored = store.get(provider)
    if stored:
        return FoundKey(stored, f"credential:{store.path}")
    return None


def model_with_key(name: str, base_url: str | None, env: Mapping[str, str]) -> Model:
    """The pydantic-ai model for ``name`` with the user's key (`find_key`) and ``base_url``;
    no key is HZE003 naming the variable and the credential command."""
    from heinzel.engine.models import resolve_model

    found = find_key(name.partition(":")[0], env)
    return resolve_model(name, base_url=base_url, api_key=found.key if found else None, env={})
