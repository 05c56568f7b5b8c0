"""The contract compiler: ``.prose.md`` text in, a typed `CompiledContract` or a `ContractError`.

The compiler reports every independent error of a file at once, the first one first, in
this order: the file's structure (a legacy ``.prose`` program, frontmatter fences, YAML,
duplicate keys), the OpenProse ``kind``, a file of several nodes (each of these stops the
compile: nothing after it can be read right), then the frontmatter's shape and values (in
document order), its meaning against the capability registry (in document order; checked
only when the shape is right), and the body (every body problem). The one `ContractError`
raised carries the rest in ``also``. It never lets another exception out.

The intent fingerprint is ``sha256:`` over the canonical JSON of the validated frontmatter
(defaults filled in, sets sorted, durations canonical) and the parsed body with every
whitespace run, line breaks included, made one space (known section titles canonical).
Re-indenting the YAML, reordering keys, quoting differently, re-wrapping a paragraph or
writing a default out leaves it unchanged; any change of a value or of a word changes it.
"""

from __future__ import annotations

import difflib
import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from heinzel.capabilities.registry import DEFAULT_REGISTRY, Registry
from heinzel.contract.body import Body, parse_body
from heinzel.contract.model import Agent, Discover, Frontmatter, Hz, Input, Output
from heinzel.contract.openprose import OPENPROSE_KINDS, check_kind, legacy_program, nodes
from heinzel.contract.semantics import check_semantics
from heinzel.contract.source import LineMap, load_yaml, split
from heinzel.contract.types import STORED_FORM
from heinzel.errors import ContractError
from ledger.errors import LedgerError
from ledger.event import canonical, sha256_hex
from ledger.files import read_capped

__all__ = [
    "MAX_CONTRACT_BYTES",
    "OPENPROSE_KINDS",
    "CompiledContract",
    "compile_contract",
    "fingerprint",
    "load_contract",
    "read_contract_text",
    "stored_fingerprint",
]

MAX_CONTRACT_BYTES = 1 << 20


class CompiledContract(BaseModel):
    """A contract as compiled: its typed frontmatter, its parsed body and its fingerprints.

    ``fingerprint`` is the intent fingerprint (see the module); ``text_sha256`` the hash of
    the exact text, so a stored version can be checked against its file.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    frontmatter: Frontmatter
    body: Body
    fingerprint: str
    text_sha256: str

    @property
    def name(self) -> str:
        """The contract's name (a slug)."""
        return self.frontmatter.name

    @property
    def hz(self) -> Hz:
        """Everything under ``hz:``."""
        return self.frontmatter.hz

    def to_json(self) -> str:
        """The compiled form as stored beside ``contract/v<n>.prose.md``."""
        return self.model_dump_json(by_alias=True)

    @classmethod
    def from_json(cls, text: str) -> CompiledContract:
        """Read a compiled form written by `to_json`."""
        return cls.model_validate_json(text)

    @classmethod
    def from_stored(cls, text: str) -> CompiledContract:
        """Read a stored compiled form that the caller believes only once its fingerprint,
        recomputed from it (`stored_fingerprint`), is the approved one: its schedule is
        not given to croniter again (`heinzel.contract.types.STORED_FORM`)."""
        return cls.model_validate_json(text, context={STORED_FORM: True})


def fingerprint(frontmatter: Frontmatter, body: Body) -> str:
    """The intent fingerprint of a validated frontmatter and a parsed body."""
    document = {
        "frontmatter": frontmatter.model_dump(mode="json", by_alias=True),
        "body": _collapse(body.model_dump(mode="json")),
    }
    return "sha256:" + sha256_hex(canonical(document).encode("utf-8"))


def stored_fingerprint(compiled: CompiledContract) -> str:
    """`fingerprint` of a compiled contract's frontmatter and body, dumped by the compiled
    contract's own serializer (built when its stored form was validated) instead of each
    model's: the same document, so the same fingerprint, without building two more
    serializers on a wake (`tests/heinzel/test_stored_form.py` compares the two)."""
    frontmatter = compiled.model_dump(mode="json", by_alias=True, include={"frontmatter"})
    body = compiled.model_dump(mode="json", include={"body"})
    document = {"frontmatter": frontmatter["frontmatter"], "body": _collapse(body["body"])}
    return "sha256:" + sha256_hex(canonical(document).encode("utf-8"))


def _collapse(value: Any) -> Any:
    """Every string with its whitespace runs (newlines too) made one space."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, list):
        return [_collapse(item) for item in value]
    if isinstance(value, dict):
        return {key: _collapse(item) for key, item in value.items()}
    return value


def compile_contract(
    text: str, *, source: str = "<text>", registry: Registry = DEFAULT_REGISTRY
) -> CompiledContract:
    """Compile ``text`` (a whole ``.prose.md`` file) or raise a `ContractError` carrying
    every independent error found (the first first)."""
    legacy = legacy_program(text, source)
    if legacy is not None:
        raise legacy
    parts = split(text, source=source)
    data, lines = load_yaml(parts.yaml_text, offset=parts.yaml_line, source=source)
    if not isinstance(data, dict):
        raise ContractError(
            "HZC007",
            "the frontmatter is not a mapping of keys to values",
            "write the frontmatter as 'name: ...', 'kind: responsibility' and 'hz:' lines",
            file=source,
            line=parts.yaml_line,
        )
    check_kind(data, lines, source)
    several = nodes(parts.body, parts.body_line, source)
    if several is not None:
        raise several
    errors: list[ContractError] = []
    frontmatter: Frontmatter | None = None
    try:
        frontmatter = Frontmatter.model_validate(data)
    except ValidationError as exc:
        errors += _all(exc, data, lines, source)
    if frontmatter is not None:
        try:
            check_semantics(frontmatter, data, lines, registry=registry, source=source)
        except ContractError as exc:
            errors.append(exc)
    body: Body | None = None
    try:
        body = parse_body(parts.body, first_line=parts.body_line, source=source)
    except ContractError as exc:
        errors.append(exc)
    if errors:
        raise ContractError.of(errors)
    assert frontmatter is not None and body is not None  # no errors: both were made
    return CompiledContract(
        frontmatter=frontmatter,
        body=body,
        fingerprint=fingerprint(frontmatter, body),
        text_sha256="sha256:" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest(),
    )


def read_contract_text(path: Path, source: str | None = None) -> str:
    """The text of the contract file at ``path``: a regular file of at most 1 MiB, UTF-8.

    Read with a cap and without blocking (`ledger.files.read_capped`): a FIFO, a
    device or a directory is HZC070, a larger file HZC072 (never read whole), bytes
    that are not UTF-8 HZC071 with their line.
    """
    source = str(path) if source is None else source
    try:
        raw = read_capped(path, MAX_CONTRACT_BYTES)
    except OSError as exc:
        raise ContractError(
            "HZC070", f"can't read the file: {exc.strerror or exc}", "check the path", file=source
        ) from None
    except LedgerError as exc:
        if exc.code == "HZL004":
            raise ContractError(
                "HZC072",
                f"the file is larger than {MAX_CONTRACT_BYTES} bytes",
                "a contract is a page of text; move material into skills or inputs",
                file=source,
            ) from None
        raise ContractError(
            "HZC070",
            "not a regular file (a directory, a pipe or a device)",
            "give the path of a .prose.md contract file",
            file=source,
        ) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ContractError(
            "HZC071", "the file is not UTF-8 text", "save it as UTF-8", file=source, line=line
        ) from None


def load_contract(path: Path, *, registry: Registry = DEFAULT_REGISTRY) -> CompiledContract:
    """Read and compile the file at ``path`` (errors name the file)."""
    text = read_contract_text(path)
    return compile_contract(text, source=str(path), registry=registry)


_KEYS: dict[str, type[BaseModel]] = {
    "": Frontmatter,
    "hz": Hz,
    "hz.inputs.*": Input,
    "hz.outputs.*": Output,
    "hz.discover.*": Discover,
    "hz.agent": Agent,
}


def _allowed(loc: tuple[str | int, ...]) -> str:
    parent = [str(part) for part in loc[:-1]]
    if len(parent) == 3 and parent[1] in ("inputs", "outputs", "discover"):
        parent[2] = "*"
    model = _KEYS.get(".".join(parent))
    if model is None:
        return "remove it; see docs/contract.md for the keys allowed here"
    keys = sorted(f.alias or n for n, f in model.model_fields.items())
    close = difflib.get_close_matches(str(loc[-1]), keys, n=1)
    mean = f"did you mean {close[0]!r}? " if close else ""
    return mean + "the keys allowed here are: " + ", ".join(keys)


def _present(data: Any, loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """The longest prefix of ``loc`` that is a path in ``data``: pydantic appends the
    names of a union's members (``str``, ``list[...]``) to the place of the value."""
    node = data
    for depth, part in enumerate(loc):
        listed = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if not (listed or (isinstance(node, dict) and part in node)):
            return loc[:depth]
        node = node[part]
    return loc


def _translate(error: Any, data: Any, lines: LineMap, source: str) -> ContractError:
    loc = tuple(part for part in error["loc"] if part != "[key]")
    kind = str(error["type"])
    if kind not in ("missing", "extra_forbidden") and not kind.startswith(("HZC", "HZH")):
        loc = _present(data, loc)
    where = ".".join(str(part) for part in loc)
    line = lines.line(loc)
    if kind.startswith(("HZC", "HZH")):
        return ContractError(
            kind, f"{where}: {error['msg']}", _HINTS.get(kind, ""), file=source, line=line
        )
    if kind == "extra_forbidden":
        return ContractError(
            "HZC004", f"unknown key {where}", _allowed(loc), file=source, line=line
        )
    if kind == "missing":
        return ContractError(
            "HZC005", f"missing key {where}", _missing(loc), file=source, line=line
        )
    message, hint = _wrong_type(loc, kind, error.get("input"))
    return ContractError("HZC006", f"{where}: {message}", hint, file=source, line=line)


def _missing(loc: tuple[str | int, ...]) -> str:
    if loc == ("hz",):
        return _HZ_HINT
    parent = [str(part) for part in loc[:-1]]
    if len(parent) == 3 and parent[1] in ("inputs", "outputs", "discover"):
        parent[2] = "*"
    example = _MISSING.get(".".join([*parent, str(loc[-1])]))
    return example or "add it; see docs/contract.md for what it holds"


_MISSING = {
    "name": "add a name such as 'name: weekly-report' (lowercase words joined by hyphens)",
    "hz.inputs.*.from": "add the method it reads, e.g. from: code-host.merged_pull_requests",
    "hz.outputs.*.asset": 'add the asset it keeps true, e.g. asset: "file:report.md"',
    "hz.discover.*.from": "add the method the source would be read with: from: documents.read",
    "hz.discover.*.match": 'add a file-name pattern, e.g. match: "*incident*"',
}


def _wrong_type(loc: tuple[str | int, ...], kind: str, value: Any) -> tuple[str, str]:
    """``HZC006``'s message and hint: what the value at ``loc`` should be, as YAML."""
    shown = "nothing (the value is empty)" if value is None else _shown(value)
    if len(loc) == 5 and loc[1] == "inputs" and loc[3] == "args":
        return (
            f"an argument is text, a number, true or false, or a list of them, not {shown}",
            f"write the value after '{loc[4]}:', e.g. args: {{repo: acme/checkout}}",
        )
    expected, hint = _TYPES.get(kind, ("another type", _TYPE_HINT))
    return f"expected {expected}, not {shown}", hint


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_TYPE_HINT = "see docs/contract.md for the type this key takes"
_LIST = ("a list", "write a list: [a, b] on the key's line, or one '- item' line each below it")
_TABLE = (
    "a table of keys",
    "write its keys indented below it ('key: value' lines), or {key: value} on one line; "
    "docs/contract.md lists them",
)
_TYPES = {
    "list_type": _LIST,
    "tuple_type": _LIST,
    "dict_type": _TABLE,
    "model_type": _TABLE,
    "model_attributes_type": _TABLE,
    "string_type": ("text", "write text; quote it when YAML would read a number, a date or yes/no"),
    "bool_type": ("true or false", "write true or false, without quotes"),
    "int_type": ("a whole number", "write a whole number, without quotes"),
    "float_type": ("a number", "write a number, without quotes"),
}


def _all(exc: ValidationError, data: Any, lines: LineMap, source: str) -> list[ContractError]:
    """Every validation error once, one per place, in document order (a stable sort by
    line): a value that fits no member of a union is one error, not one per member."""
    seen: set[tuple[str, int | None, str]] = set()
    places: set[tuple[str, str]] = set()
    errors = []
    for error in exc.errors():
        translated = _translate(error, data, lines, source)
        place = (translated.code, translated.message.split(": ", 1)[0])
        key = (translated.code, translated.line, translated.message)
        if key in seen or (translated.code == "HZC006" and place in places):
            continue
        seen.add(key)
        places.add(place)
        errors.append(translated)
    return sorted(errors, key=lambda e: e.line or 0)


_HZ_HINT = (
    "hz runs an OpenProse responsibility once it says when and from what: add an hz: "
    "section (schedule, requires, inputs...), see docs/contract.md"
)

_HINTS = {
    "HZH177": "match is a glob over file names: * any run, ? one character",
    "HZC012": "a name is a slug: lowercase letters and digits joined by single hyphens",
    "HZC013": "namespace is me (yours) or team (the team's)",
    "HZC014": "render_on_schedule is always or if-moved",
    "HZH430": "source_changed is wake (an input that moved wakes it) or at-slot (only its "
    "schedule does)",
    "HZC015": "agent.model_class is fast, standard or best; the model itself is configuration",
    "HZC020": 'five cron fields in quotes, like "0 15 * * FRI" (minute hour day month weekday), '
    "or @hourly, @daily, @weekly, @monthly, @yearly",
    "HZC021": "use an IANA time zone name such as Europe/Berlin or UTC",
    "HZC022": "write a whole number above 0 and a unit: 30s, 10m, 1h or 7d",
    "HZC032": "write requires entries as capability:read or capability:write, e.g. tracker:read",
    "HZC039": "write capability.method, e.g. code-host.merged_pull_requests",
    "HZC040": (
        "an asset is kind:path; a document of yours is file:PATH (file:report.md, relative "
        "to the contract's folder), the one kind an adapter writes today"
    ),
    "HZC041": "set a per-turn cap in USD such as 0.5",
    "HZC042": "approvers lists owner or roster handles",
    "HZC043": "input and output names are lowercase identifiers: letters, digits, underscores",
    "HZC044": "name each skill once, by its directory name",
    "HZC073": 'write place: end, place: top or place: "under:<the heading\'s text>"',
    "HZC092": "write id and version as short text, e.g. id: 067NC4KG01RG50R40M30E20918",
    "HZC105": 'write the deadline as five cron fields in quotes, like "0 12 * * FRI" '
    "(Friday noon in the contract's timezone)",
    "HZC106": "put needed_by on an input that reads the document another Heinzelmännchen "
    "drafts into (from: documents.read, args: {doc: file:...})",
    "HZC107": "unanswered is fall-back (go on without the answer) or abandon",
}
