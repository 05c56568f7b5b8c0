"""``hz system doctor``'s model checks: what the next turn needs to reach its model.

For each configured model (``model``, ``model_fast``, ``model_best``): the provider's extra,
the key (present, and from where: the variable or the credentials file; never the key),
a known price or an override; then ``base_url``, well formed; then what the last turns
met (`last_turns`: the index's turns, a provider fault as its code, `heinzel.engine.faults`).
With ``online``, one minimal request (one token, within ``request_timeout``) to each
model, its failure named by the same taxonomy. Each problem has a code and its fix.
"""

from __future__ import annotations

import importlib.util
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from heinzel.engine.models import PROVIDERS
from heinzel.store.credentials import KEY_VARIABLES, PREFIX_PROVIDER, find_key, model_with_key
from heinzel.strings.usd import usd_text

if TYPE_CHECKING:
    from heinzel.session.sessions import Sessions

__all__ = ["model_checks"]


def _check(name: str, ok: bool, detail: str, code: str = "", fix: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "ok": ok, "detail": detail}
    if not ok:
        found.update(code=code, fix=fix)
    return found


def model_checks(service: Sessions, *, online: bool = False) -> list[dict[str, Any]]:
    """The checks of every configured model and of ``base_url``."""
    config = service.settings.heinzel
    named = {"model": config.model, "model_fast": config.model_fast}
    named["model_best"] = config.model_best
    checks: list[dict[str, Any]] = []
    seen: set[str] = set()
    for key, name in named.items():
        if not name or name in seen:
            continue
        seen.add(name)
        checks += _one_model(service, key, name)
    if config.base_url is not None:
        parsed = urlparse(config.base_url)
        checks.append(
            _check(
                "base_url",
                parsed.scheme in ("http", "https") and bool(parsed.netloc),
                config.base_url,
                "HZH266",
                "a URL like http://127.0.0.1:11434/v1 (OpenAI-compatible) or "
                "https://gateway.example (Anthropic-compatible, without /v1)",
            )
        )
    checks.append(last_turns(service))
    remote = [name for name in dict.fromkeys(named.values()) if name and name != "offline"]
    if online and remote and not all(check["ok"] for check in checks):
        # said, not silently left out: the request would only fail on what is listed above
        # not ok: nothing was asked of the provider, so nothing says it answers
        failing = next(check for check in checks if not check["ok"])
        checks.append(
            _check(
                "online",
                False,
                "no request made: fix the checks above first",
                str(failing.get("code") or ""),
                "fix the checks above, then run `hz system doctor --online` again",
            )
        )
    elif online and not remote:
        checks.append(
            _check("online", True, "no model request: the offline model asks no provider")
        )
    elif online:
        checks += [_online(service, name) for name in remote]
    return checks


LAST = 10
"""How many of the home's last ended turns `last_turns` reads."""


def last_turns(service: Sessions) -> dict[str, Any]:
    """What the home's last turns met at their provider (from the index): not ok when the
    last turn that ended failed on a provider fault, with its code and the fix it kept."""
    from heinzel.engine.faults import INVALID_OUTCOME, code_of
    from heinzel.session.causes import cause_of

    rows = service.read_db.execute(  # a home not made yet reads an empty index, creating none
        "SELECT t.id, t.heinzel, h.name, t.disposition, t.reason, t.ended_at FROM turns t "
        "JOIN heinzel h ON h.id = t.heinzel WHERE t.state = 'finished' "
        "ORDER BY t.ended_at DESC, t.start_seq DESC LIMIT ?",
        [LAST],
    ).fetchall()
    if not rows:
        return _check("last turns", True, "no turn has ended yet")

    def fault(row: Any) -> str:
        reason = str(row[4] or "")
        return reason if row[3] in ("failed", "abandoned") and code_of(reason) else ""

    met = [fault(row) for row in rows]
    faults = [f for f in met if f and f != INVALID_OUTCOME]
    turn, heinzel_id, name, _disposition, _reason, ended = rows[0]
    last = met[0]
    if not last or last == INVALID_OUTCOME:
        said = f"the last turn reached its model ({name}, {ended})"
        if faults:
            said += f"; {len(faults)} of the last {len(rows)} met " + ", ".join(sorted(set(faults)))
        return _check("last turns", True, said)
    kept = cause_of(service.home.session_dir(str(heinzel_id)), str(turn))
    detail = f"the last turn ({name}, {turn}, {ended}) failed: {last}"
    if kept:
        detail += f": {kept.get('message')}"
    fix = (kept or {}).get("hint") or "`hz system doctor --online` asks the provider now"
    return _check("last turns", False, detail, code_of(last), fix)


def _one_model(service: Sessions, key: str, name: str) -> list[dict[str, Any]]:
    label = f"{key} {name}"
    if name == "offline":
        return [_check(label, True, "built-in, rule-based, no AI, no network")]
    prefix, _, model_name = name.partition(":")
    if prefix not in PROVIDERS or not model_name:
        fix = "use offline, anthropic:<model>, openai:<model> or openai-chat:<model>"
        return [_check(label, False, "not a model hz can run", "HZE004", fix)]
    extra = PROVIDERS[prefix][0]
    if importlib.util.find_spec(extra) is None:
        fix = f"pip install 'heinzel[{extra}]'"
        return [_check(label, False, f"the {extra} client is not installed", "HZE002", fix)]
    checks = [_check(label, True, "installed")]
    found = find_key(prefix, service.env)
    provider = PREFIX_PROVIDER[prefix]
    checks.append(
        _check(
            f"key for {name}",
            found is not None,
            f"from {found.source}" if found else "no key",
            "HZE003",
            f"set {KEY_VARIABLES[provider]}, or: hz system credential set {provider}",
        )
    )
    checks.append(_price(service, name, model_name, provider))
    return checks


def _price(service: Sessions, name: str, model_name: str, provider: str) -> dict[str, Any]:
    from pydantic_ai.usage import RequestUsage

    from heinzel.engine.money import Price, Pricing

    overrides = {
        key: Price(Decimal(str(p.input)), Decimal(str(p.output)))
        for key, p in service.settings.heinzel.prices.items()
    }
    pricing = Pricing(at=service.clock(), overrides=overrides)
    # a request of a thousand tokens, times a thousand: one request of a million would be
    # priced at a long-context tier (claude-sonnet-4-5 doubles above 200k tokens)
    cost = pricing.cost(model_name, provider, RequestUsage(input_tokens=1_000))
    return _check(
        f"price of {name}",
        cost is not None,
        f"{usd_text(float(cost * 1000))} USD per million input tokens"
        if cost is not None
        else "unknown",
        "HZE001",
        f'set it in your config file: [heinzel.prices] "{model_name}" = '
        "{input = 3.0, output = 15.0} (USD per million tokens; 0 for a local model)",
    )


def _online(service: Sessions, name: str) -> dict[str, Any]:
    """One request of one output token; its failure, named."""
    from pydantic_ai.direct import model_request_sync
    from pydantic_ai.messages import ModelRequest
    from pydantic_ai.models import override_allow_model_requests

    from heinzel.engine.faults import describe, fault_of

    timeout = service.settings.heinzel.request_timeout.total_seconds()
    with override_allow_model_requests(True):
        try:
            model_request_sync(
                model_with_key(name, service.settings.heinzel.base_url, service.env),
                [ModelRequest.user_text_prompt("Reply with: ok")],
                model_settings={"max_tokens": 1, "timeout": timeout},
            )
        except Exception as exc:  # any failure of the provider is the finding
            fault = fault_of(exc)
            if fault is not None:
                said = describe(fault, model_name=name, attempts=1)
                return _check(f"online {name}", False, said.message, said.code, said.hint)
            return _check(
                f"online {name}",
                False,
                f"{type(exc).__name__}: {str(exc)[:200]}",
                "HZH267",
                "check the key, base_url and the model's name with the provider",
            )
    return _check(f"online {name}", True, "one request answered")
