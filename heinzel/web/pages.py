"""The page's templates (Jinja2, `templates/`), with the filters every page uses; the views
and the gate's refusals render through them."""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from starlette.templating import Jinja2Templates

from heinzel.strings.usd import usd_text

__all__ = ["TEMPLATES", "request_id", "unsent"]

TEMPLATES = Jinja2Templates(directory=Path(__file__).resolve().parent / "templates")
TEMPLATES.env.filters["usd"] = usd_text
TEMPLATES.env.filters["when"] = lambda ts: (
    f"{ts[:10]} {ts[11:16]} UTC" if isinstance(ts, str) and len(ts) >= 16 else (ts or "-")
)


def request_id() -> str:
    """A fresh request id for a form that starts a turn (Wake, Retry), minted as the page
    renders it: sending that form again (a second click, a re-POST) is claimed once, as
    ``hz heinzel wake|retry --request-id`` is (`heinzel.session.claims`)."""
    return "rq-" + secrets.token_hex(10)


TEMPLATES.env.globals["request_id"] = request_id
_FRESH = re.compile(r'(name="request_id" value=")rq-[0-9a-f]+(")')


def unsent(html: str) -> str:
    """``html`` without its forms' fresh request ids: what a part's hash is taken of."""
    return _FRESH.sub(r"\1\2", html)
