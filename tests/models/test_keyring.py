"""`hz system credential` over the OS keyring, when the `keyring` package finds a real one."""

from __future__ import annotations

import json

import pytest

from .conftest import User
from .test_cli_models import _created

BACKEND = """\
import json, os
from keyring.backend import KeyringBackend


class FileKeyring(KeyringBackend):
    \"\"\"A keyring of the test's own: one JSON file (TEST_KEYRING_FILE).\"\"\"

    priority = 1

    def _read(self):
        try:
            with open(os.environ["TEST_KEYRING_FILE"], encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return {}

    def _write(self, data):
        with open(os.environ["TEST_KEYRING_FILE"], "w", encoding="utf-8") as f:
            json.dump(data, f)

    def get_password(self, service, username):
        return self._read().get(service + "/" + username)

    def set_password(self, service, username, password):
        self._write({**self._read(), service + "/" + username: password})

    def delete_password(self, service, username):
        data = self._read()
        data.pop(service + "/" + username)
        self._write(data)
"""


@pytest.mark.parametrize("user", ["openai"], indirect=True)
def test_a_key_in_the_os_keyring_is_stored_found_and_forgotten(user: User) -> None:
    """With a real keyring backend, `credential set` keeps the key there (not in the file),
    `list` says so without the key, the model's requests carry it, and `forget` removes it."""
    del user.env["OPENAI_API_KEY"]
    (user.tmp / "lib").mkdir()
    (user.tmp / "lib" / "test_keyring_backend.py").write_text(BACKEND, encoding="utf-8")
    kept = user.tmp / "keyring.json"
    user.env.update(
        PYTHONPATH=str(user.tmp / "lib"),
        PYTHON_KEYRING_BACKEND="test_keyring_backend.FileKeyring",
        TEST_KEYRING_FILE=str(kept),
    )
    stored = user.hz("system", "credential", "set", "openai", stdin="sk-in-keyring\n")
    assert stored.returncode == 0, stored.stderr
    assert "OS keyring (test_keyring_backend.FileKeyring)" in stored.stdout
    assert json.loads(kept.read_text(encoding="utf-8")) == {"hz/openai": "sk-in-keyring"}
    assert not (user.tmp / "config" / "hz" / "credentials.json").exists()
    listed = user.hz("system", "credential", "list")
    assert "openai: keyring (used)" in listed.stdout and "sk-in-keyring" not in listed.stdout
    _created(user, as_process=True)
    assert user.provider is not None and user.provider.keys() == ["sk-in-keyring"]
    forgot = user.hz("system", "credential", "forget", "openai")
    assert forgot.returncode == 0 and json.loads(kept.read_text(encoding="utf-8")) == {}
    missing = user.hz("heinzel", "wake", "notes-digest")
    assert missing.returncode == 1 and "HZE003" in missing.stderr, missing.stderr


@pytest.mark.parametrize("user", ["openai"], indirect=True)
@pytest.mark.parametrize(
    "backend", ["keyring.backends.fail.Keyring", "keyring.backends.null.Keyring"]
)
def test_the_fail_and_null_backends_are_no_keyring(user: User, backend: str) -> None:
    """`keyring`'s fail and null backends never hold a key: it goes to the 0600 file."""
    user.env["PYTHON_KEYRING_BACKEND"] = backend
    stored = user.hz("system", "credential", "set", "openai", stdin="sk-in-file\n")
    assert stored.returncode == 0, stored.stderr
    path = user.tmp / "config" / "hz" / "credentials.json"
    assert json.loads(path.read_text(encoding="utf-8")) == {"openai": "sk-in-file"}
    assert path.stat().st_mode & 0o777 == 0o600
