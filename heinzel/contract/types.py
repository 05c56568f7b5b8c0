"""The value types of a contract's frontmatter, each refusing bad text with its own code.

Validators raise `PydanticCustomError` whose type is the ``HZC`` code, so the compiler can
turn pydantic's first error into a `ContractError` with that code and the value's line.
Durations are kept as `timedelta` and written back in a canonical form (``7d``, ``90m``)
so the compiled JSON round-trips and the fingerprint ignores ``168h`` versus ``7d``.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from pydantic import AfterValidator, BeforeValidator, PlainSerializer, ValidationInfo
from pydantic_core import PydanticCustomError

from heinzel.ids import is_slug

__all__ = [
    "AssetRef",
    "Cron",
    "Duration",
    "Identifier",
    "MethodRef",
    "Requirement",
    "Slug",
    "TimeZone",
    "cron_expression",
    "format_duration",
    "parse_duration",
    "split_method",
    "split_requirement",
]

_DURATION = re.compile(r"^([1-9][0-9]{0,5})([smhd])$")
_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_CRON_ALIASES = {"@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@annually", "@midnight"}
_IDENT = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_CAP = r"[a-z][a-z0-9-]{0,63}"
_REQUIREMENT = re.compile(rf"^({_CAP}):(read|write)$")
_METHOD = re.compile(rf"^({_CAP})\.([a-z][a-z0-9_]{{0,63}})$")
_ASSET = re.compile(r"^[a-z][a-z0-9-]{0,31}:[^\s:][^\s]{0,511}$")


def _fail(code: str, message: str, value: Any) -> PydanticCustomError:
    return PydanticCustomError(code, message, {"value": _short(value)})


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_duration(value: Any) -> timedelta:
    """``30s``, ``10m``, ``1h``, ``7d`` as a `timedelta`; anything else is ``HZC022``."""
    if isinstance(value, timedelta):
        return value
    match = _DURATION.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise _fail("HZC022", "not a duration: {value}", value)
    return timedelta(seconds=int(match[1]) * _UNITS[match[2]])


def format_duration(value: timedelta) -> str:
    """The canonical text of a duration: the largest unit that divides it exactly."""
    seconds = int(value.total_seconds())
    for unit, size in _UNITS.items():
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    raise AssertionError("a duration is whole seconds")  # pragma: no cover


STORED_FORM = "stored-form"
"""A validation context key: the value is a stored form that is believed only once its
fingerprint, recomputed from it, is the approved one (`heinzel.store.contracts`). Its
cron expression then is the approved one, which croniter accepted when it was compiled,
so croniter is not loaded to accept it again (a wake needs it nowhere else)."""


def _cron(value: Any, *, stored: bool = False) -> str:
    if not isinstance(value, str):
        raise _fail("HZC020", "a schedule is a cron expression in quotes, not {value}", value)
    text = " ".join(value.split())
    fields = text.split(" ")
    accepted = stored or _croniter_accepts(text)
    valid = text in _CRON_ALIASES or (len(fields) == 5 and accepted)
    if not valid:
        raise _fail("HZC020", "not a cron expression: {value}", value)
    return text


def _cron_field(value: Any, info: ValidationInfo) -> str:
    context = info.context
    return _cron(value, stored=isinstance(context, dict) and context.get(STORED_FORM) is True)


def cron_expression(value: Any) -> str:
    """``value`` as a checked cron expression with single spaces (``HZC020`` otherwise)."""
    return _cron(value)


def _croniter_accepts(text: str) -> bool:
    from croniter import croniter  # with the first cron checked, not with every settings load

    try:
        return bool(croniter.is_valid(text, strict=True))
    except (ValueError, TypeError, KeyError, OverflowError):
        return False


def _timezone(value: Any) -> str:
    if not isinstance(value, str) or not value or value.startswith("/"):
        raise _fail("HZC021", "not a time zone: {value}", value)
    try:
        ZoneInfo(value)
    except (KeyError, ValueError, OSError):
        raise _fail("HZC021", "not a time zone: {value}", value) from None
    return value


def _requirement(value: Any) -> str:
    if not isinstance(value, str) or not _REQUIREMENT.fullmatch(value):
        raise _fail("HZC032", "a requires entry is capability:read or :write, not {value}", value)
    return value


def _method(value: Any) -> str:
    if not isinstance(value, str) or not _METHOD.fullmatch(value):
        raise _fail("HZC039", "a method is written capability.method, not {value}", value)
    return value


def _slug(value: Any) -> str:
    if not isinstance(value, str) or not is_slug(value):
        raise _fail("HZC012", "not a valid name: {value}", value)
    return value


def _identifier(value: str) -> str:
    if not _IDENT.fullmatch(value):
        raise _fail("HZC043", "not a valid input or output name: {value}", value)
    return value


def _asset(value: Any) -> str:
    if not isinstance(value, str) or not _ASSET.fullmatch(value):
        raise _fail("HZC040", "an asset is a reference like file:report.md, not {value}", value)
    return value


def split_requirement(value: str) -> tuple[str, str]:
    """``code-host:read`` as ``("code-host", "read")``."""
    capability, _, mode = value.partition(":")
    return capability, mode


def split_method(value: str) -> tuple[str, str]:
    """``code-host.merged_pull_requests`` as ``("code-host", "merged_pull_requests")``."""
    capability, _, method = value.partition(".")
    return capability, method


Duration = Annotated[
    timedelta, BeforeValidator(parse_duration), PlainSerializer(format_duration, return_type=str)
]
Cron = Annotated[str, BeforeValidator(_cron_field)]
TimeZone = Annotated[str, BeforeValidator(_timezone)]
Requirement = Annotated[str, BeforeValidator(_requirement)]
MethodRef = Annotated[str, BeforeValidator(_method)]
Slug = Annotated[str, BeforeValidator(_slug)]
Identifier = Annotated[str, AfterValidator(_identifier)]
AssetRef = Annotated[str, BeforeValidator(_asset)]
