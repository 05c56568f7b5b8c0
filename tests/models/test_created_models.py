"""`hz heinzel new "a sentence"` against loopback providers: sane contracts or nothing."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any

from tests.waits import HANG

from .conftest import CONTRACT, CREATED, User
from .fake_providers import Hang, Http, Outcome, closed_port

INTO_THE_SOURCE = {
    "report": "wrote the contract",
    "amendment": {"text": CONTRACT.replace("file:report.md", "file:notes.txt"), "why": "x"},
}
SENTENCE = "summarise notes.txt into report.md every Friday at three"


def _sessions(user: User) -> list[Any]:
    return sorted((user.home / "heinzel").glob("hz-*"))


class TestCreatedContracts:
    """What the model writes is checked; a failed creation leaves no trace."""

    def test_an_output_into_a_source_goes_back_to_the_model(self, user: User) -> None:
        """A contract writing into notes.txt (a source the sentence names) is a retry with
        HZH291; the second contract, into report.md, is the one proposed."""
        provider = user.serve(lambda body, n: Outcome(INTO_THE_SOURCE if n == 1 else CREATED))
        made = user.hz("heinzel", "new", SENTENCE, "--json")
        assert made.returncode == 0, made.stderr
        assert [r["name"] for r in json.loads(made.stdout)] == ["notes-digest"]
        assert len(provider.seen) == 2
        assert "HZH291" in json.dumps(provider.seen[1].body)
        [session] = _sessions(user)
        text = (session / "contract" / "v1.prose.md").read_text(encoding="utf-8")
        assert 'asset: "file:report.md"' in text

    def test_a_model_that_insists_leaves_nothing_behind(self, user: User) -> None:
        """Every attempt writes into the source: HZH293, exit 1, no session, no row, and
        `hz approve` has nothing to trip over."""
        user.serve(lambda body, n: Outcome(INTO_THE_SOURCE))
        made = user.hz("heinzel", "new", SENTENCE)
        assert made.returncode == 1 and "HZH293" in made.stderr, made.stderr
        assert "Traceback" not in made.stderr
        assert _sessions(user) == []
        listed = user.in_process("heinzel", "list", "--json")  # the index's rows: in this process
        assert json.loads(listed.stdout) == []

    def test_a_taken_name_is_a_coded_error(self, user: User) -> None:
        """The same contract name twice: HZH292, exit 1, and only the first remains."""
        user.serve(lambda body, n: Outcome(CREATED))
        # the first contract is set-up (in this process); the second `new` is the point
        assert user.in_process("heinzel", "new", SENTENCE).returncode == 0
        again = user.hz("heinzel", "new", SENTENCE)
        assert again.returncode == 1 and "HZH292" in again.stderr, again.stderr
        assert len(_sessions(user)) == 1
        listed = user.in_process("heinzel", "list", "--json")
        names = [r["name"] for r in json.loads(listed.stdout)]
        assert names == ["notes-digest"]


class TestAFailedCreationNamesItsCause:
    """`new "sentence"` that fails says why (key, provider, model reply) and leaves no row,
    no folder, whatever failed."""

    def _nothing_left(self, user: User) -> None:
        """No folder, and no row in the index (read by `list`'s logic, in this process)."""
        assert _sessions(user) == []
        listed = user.in_process("heinzel", "list", "--json")
        assert json.loads(listed.stdout) == [], listed.stdout

    def test_a_provider_500_is_the_providers_code(self, user: User) -> None:
        """A provider failing with 500: HZE019 (the provider's fault), never HZH293, which
        blames the sentence; nothing is left."""
        provider = user.serve(lambda body, n: Http(500))
        made = user.hz("heinzel", "new", SENTENCE)
        assert made.returncode == 1, made.stderr
        assert "HZE019: the provider answered HTTP 500" in made.stderr, made.stderr
        assert "HZH293" not in made.stderr and "Traceback" not in made.stderr
        # nothing is kept, so the hint is to run the creation again, never `retry new`
        assert "hz heinzel retry" not in made.stderr, made.stderr
        assert "hz heinzel new " in made.stderr.split("hint:", 1)[1], made.stderr
        assert len(provider.seen) == 3
        self._nothing_left(user)

    def test_a_provider_that_is_down(self, user: User) -> None:
        """No server at base_url: HZE013, and nothing left."""
        root = f"http://127.0.0.1:{closed_port()}"
        user.env["HZ_BASE_URL"] = root if user.api == "anthropic" else root + "/v1"
        made = user.hz("heinzel", "new", SENTENCE)
        assert made.returncode == 1 and "HZE013: " in made.stderr, made.stderr
        self._nothing_left(user)

    def test_no_key_leaves_no_row(self, user: User) -> None:
        """Without a key: HZE003 before anything is made, so no `new-xxxx` row to retire."""
        del user.env["ANTHROPIC_API_KEY" if user.api == "anthropic" else "OPENAI_API_KEY"]
        user.serve(lambda body, n: Outcome(CREATED))
        made = user.hz("heinzel", "new", SENTENCE)
        assert made.returncode == 1 and "HZE003" in made.stderr, made.stderr
        assert user.provider is not None and user.provider.seen == []
        self._nothing_left(user)

    def test_ctrl_c_during_the_request_leaves_nothing(self, user: User) -> None:
        """Ctrl-C while the provider holds the created turn's request: HZH297 says it was
        stopped (not HZH293, which blames the sentence), and no session, no row is left."""
        provider = user.serve(lambda body, n: Hang())
        made = subprocess.Popen(
            [sys.executable, "-m", "heinzel", "heinzel", "new", SENTENCE],
            cwd=user.folder,
            env=user.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert provider.received.wait(timeout=HANG), "the request never reached the provider"
            made.send_signal(signal.SIGINT)
            _out, err = made.communicate(timeout=HANG)
        finally:
            made.kill()
        assert made.returncode != 0, err
        assert "HZH297: the created turn was stopped" in err and "HZH293" not in err, err
        assert "Traceback" not in err, err
        self._nothing_left(user)
