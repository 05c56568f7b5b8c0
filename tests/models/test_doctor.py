"""`hz system doctor` checks what the next turn needs to reach its model."""

from __future__ import annotations

import json

from .conftest import CREATED, DRAFT, KEY, User, outcome_after_report
from .fake_providers import Call, Hang, Http, Outcome, closed_port


def _doctor(user: User, *args: str, **env: str) -> tuple[int, dict[str, dict[str, object]], str]:
    done = user.hz("system", "doctor", "--json", *args, **env)
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    return done.returncode, checks, done.stdout


class TestModelDoctor:
    def test_a_configured_model_is_ready(self, user: User) -> None:
        """Key from the variable (never printed), a known price, a good base_url: exit 0."""
        user.serve(lambda body, n: Call("x", {}))
        code, checks, out = _doctor(user)
        assert code == 0, out
        name = user.env["HZ_MODEL"]
        assert str(checks[f"key for {name}"]["detail"]).startswith("from env:")
        assert KEY not in out
        assert checks[f"price of {name}"]["ok"] is True

    def test_each_problem_has_a_code_and_a_fix(self, user: User) -> None:
        """No key, an unknown price and a bad base_url: each coded, with its fix, exit 1."""
        variable = "ANTHROPIC_API_KEY" if user.api == "anthropic" else "OPENAI_API_KEY"
        del user.env[variable]
        model = user.env["HZ_MODEL"].split(":")[0] + ":my-local-model"
        code, checks, out = _doctor(user, HZ_MODEL=model, HZ_BASE_URL="localhost:11434")
        assert code == 1, out
        assert checks[f"key for {model}"]["code"] == "HZE003"
        assert variable in str(checks[f"key for {model}"]["fix"])
        assert checks[f"price of {model}"]["code"] == "HZE001"
        assert checks["base_url"]["code"] == "HZH266"

    def test_online_makes_one_request(self, user: User) -> None:
        """--online: one minimal request with the key; a refused key is HZE016, the code a
        turn would fail with."""
        provider = user.serve(lambda body, n: Http(401))
        code, checks, out = _doctor(user, "--online")
        name = user.env["HZ_MODEL"]
        assert code == 1 and checks[f"online {name}"]["code"] == "HZE016", out
        assert "HTTP 401" in str(checks[f"online {name}"]["detail"]), out
        assert provider.keys() == [KEY]

    def test_online_names_a_hung_provider_within_request_timeout(self, user: User) -> None:
        """--online against a provider that never answers: HZE015 once request_timeout has
        passed, not a doctor that hangs."""
        user.serve(lambda body, n: Hang())
        code, checks, out = _doctor(user, "--online", HZ_REQUEST_TIMEOUT="1s")
        name = user.env["HZ_MODEL"]
        assert code == 1 and checks[f"online {name}"]["code"] == "HZE015", out

    def test_plain_doctor_reports_what_the_last_turn_met(self, user: User) -> None:
        """A wake that failed because the model server is down: plain `hz system doctor`
        (no request) says so, with HZE013 and the fix the turn kept; once a turn reaches
        the model again, the check is ok and still names what earlier turns met."""
        user.serve(lambda body, n: Outcome(CREATED))
        assert (
            user.in_process("heinzel", "new", "summarise notes.txt into report.md").returncode == 0
        )
        assert user.in_process("approve", "notes-digest").returncode == 0
        code, checks, out = _doctor(user)
        assert code == 0 and checks["last turns"]["ok"] is True, out
        assert user.provider is not None
        user.provider.close()
        user.provider = None
        root = f"http://127.0.0.1:{closed_port()}"
        user.env["HZ_BASE_URL"] = root if user.api == "anthropic" else root + "/v1"
        woke = user.hz("heinzel", "wake", "notes-digest")
        assert woke.returncode == 1, woke.stderr
        code, checks, out = _doctor(user)
        last = checks["last turns"]
        assert code == 1 and last["code"] == "HZE013", out
        assert "provider-unreachable" in str(last["detail"]) and "model server" in str(last["fix"])
        user.serve(outcome_after_report(DRAFT))
        assert user.hz("heinzel", "wake", "notes-digest").returncode == 0
        code, checks, out = _doctor(user)
        assert checks["last turns"]["ok"] is True, out
        assert "provider-unreachable" in str(checks["last turns"]["detail"]), out

    def test_the_price_is_the_rate_of_an_ordinary_request(self, user: User) -> None:
        """claude-sonnet-4-5's 3 USD per million input tokens, not the long-context tier a
        single request of a million tokens is priced at (6 USD)."""
        name = "anthropic:claude-sonnet-4-5"
        _, checks, out = _doctor(user, HZ_MODEL=name)
        assert checks[f"price of {name}"]["detail"] == "3.00 USD per million input tokens", out

    def test_online_says_so_when_it_makes_no_request(self, user: User) -> None:
        """--online with a check failing (no key): a line says no request was made and
        why, rather than leaving the online check out."""
        del user.env["ANTHROPIC_API_KEY" if user.api == "anthropic" else "OPENAI_API_KEY"]
        code, checks, out = _doctor(user, "--online")
        assert code == 1, out
        assert checks["online"]["detail"] == "no request made: fix the checks above first"
        # not marked ok: no provider answered anything
        assert checks["online"]["ok"] is False and checks["online"]["code"], out
        assert not any(name.startswith("online ") for name in checks)
