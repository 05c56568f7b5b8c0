"""The agent's environment: credentials never pass; the command runner gets an allowlist."""

from __future__ import annotations

from heinzel.runners.environment import CLAUDE_SWITCHES, claude_env, command_env

PARENT = {
    "PATH": "/bin",
    "HOME": "/home/u",
    "LANG": "C.UTF-8",
    "LC_ALL": "C",
    "TMPDIR": "/tmp",
    "HZ_CREDENTIAL_GITHUB": "ghp_secret",
    "hz_credential_lower": "secret",
    "ANTHROPIC_API_KEY": "k",
    "EDITOR": "vi",
}


class TestClaudeEnv:
    def test_hz_environment_without_credentials_plus_switches(self) -> None:
        """Claude Code gets hz's environment minus HZ_CREDENTIAL_*, plus the quiet switches."""
        env = claude_env(PARENT)
        assert not any(name.upper().startswith("HZ_CREDENTIAL_") for name in env)
        assert env["EDITOR"] == "vi" and env["ANTHROPIC_API_KEY"] == "k"
        assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
        assert env["DISABLE_AUTOUPDATER"] == "1"
        assert set(CLAUDE_SWITCHES) <= set(env)


class TestCommandEnv:
    def test_only_the_allowlist_and_named_variables(self) -> None:
        """PATH, HOME, LANG, LC_*, TMPDIR and command_env names; nothing else."""
        env = command_env(PARENT, ["ANTHROPIC_API_KEY", "NOT_SET"])
        assert sorted(env) == ["ANTHROPIC_API_KEY", "HOME", "LANG", "LC_ALL", "PATH", "TMPDIR"]

    def test_a_listed_credential_still_never_passes(self) -> None:
        """Even named in command_env, HZ_CREDENTIAL_* is dropped."""
        assert command_env(PARENT, ["HZ_CREDENTIAL_GITHUB"]).get("HZ_CREDENTIAL_GITHUB") is None
