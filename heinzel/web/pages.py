"""The page's templates (Jinja2, `templates/`), with the filters every page uses; the views
and the gate's refusals render through them."""

from __future__ import annotations

from pathlib import Path

from starlette.templating import Jinja2Templates

from heinzel.strings.usd import usd_text

__all__ = ["TEMPLATES"]

TEMPLATES = Jinja2Templates(directory=Path(__file__).resolve().parent / "templates")
TEMPLATES.env.filters["usd"] = usd_text
TEMPLATES.env.filters["when"] = lambda ts: (
    f"{ts[:10]} {ts[11:16]} UTC" if isinstance(ts, str) and len(ts) >= 16 else (ts or "-")
)
