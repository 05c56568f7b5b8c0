"""The OS keyring, where the `keyring` package finds a real one: the second place a key is
looked for (after the provider's variable, before the 0600 file), and where
``hz system credential set`` stores it when there is one.

A real backend is one `keyring` chose by itself or was told to use
(``PYTHON_KEYRING_BACKEND``, its keyringrc), never its ``fail`` or ``null`` backend: on a
machine with no keyring service everything stays in the file. Keys go under the service
name ``hz`` and the provider's name. A keyring that errors is treated as absent for a
read and named (HZH278) for a write; hz never falls back silently when told to store.
"""

from __future__ import annotations

from typing import Any

from heinzel.errors import HeinzelError

__all__ = ["SERVICE", "OsKeyring", "os_keyring"]

SERVICE = "hz"
"""The keyring's service name for every key hz keeps there."""


class OsKeyring:
    """A real keyring backend, with hz's service name."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        kind = type(backend)
        self.name = f"{kind.__module__}.{kind.__qualname__}"

    def get(self, provider: str) -> str | None:
        """The key kept for ``provider``, or None (also when the keyring errors)."""
        try:
            found = self.backend.get_password(SERVICE, provider)
        except Exception:  # a locked or broken keyring is no key, never a crash
            return None
        return str(found) if found else None

    def set(self, provider: str, key: str) -> None:
        """Keep ``key`` for ``provider`` (HZH278 when the keyring refuses)."""
        try:
            self.backend.set_password(SERVICE, provider, key)
        except Exception as exc:
            raise HeinzelError(
                "HZH278",
                f"the OS keyring ({self.name}) refused to store the key: {type(exc).__name__}",
                "unlock the keyring and try again, or keep the key in hz's file: "
                "PYTHON_KEYRING_BACKEND=keyring.backends.null.Keyring hz system credential set",
            ) from None

    def forget(self, provider: str) -> bool:
        """Remove ``provider``'s key; whether there was one."""
        if self.get(provider) is None:
            return False
        try:
            self.backend.delete_password(SERVICE, provider)
        except Exception:
            return False
        return True


def os_keyring() -> OsKeyring | None:
    """The OS keyring when `keyring` finds a real one, else None."""
    try:
        import keyring
        from keyring.backends import fail, null

        backend = keyring.get_keyring()
    except Exception:  # no keyring package, or a backend that fails to load
        return None
    if isinstance(backend, (fail.Keyring, null.Keyring)):
        return None
    return OsKeyring(backend)
