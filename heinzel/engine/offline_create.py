"""The offline model's created turn: a contract filled from a plain sentence, by rule.

"every Friday at three, draft this week's section of our report from the merged
PRs; I approve" gives a contract with ``schedule: "0 15 * * FRI"``, the input
``merged_prs`` from ``code-host.merged_pull_requests``, the output ``section``
and ``approvers: [owner]``. No AI: words are matched against small tables, and
what was not understood falls back to a default the text says it used.
"""

from __future__ import annotations

import re

from ledger.records import frozen_record

__all__ = ["SOURCES", "Filled", "NamedFiles", "fill_contract", "named_files", "parse_schedule"]

_DAYS = {
    "monday": "MON",
    "tuesday": "TUE",
    "wednesday": "WED",
    "thursday": "THU",
    "friday": "FRI",
    "saturday": "SAT",
    "sunday": "SUN",
}
_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "noon": 12,
}
SOURCES = (
    (
        ("merged pr", "pull request", "merged prs"),
        "merged_prs",
        "code-host.merged_pull_requests",
        "code-host:read",
    ),
    (("board", "issues", "tickets", "tracker"), "issues", "tracker.issues_updated", "tracker:read"),
    (("calendar", "meetings"), "events", "calendar.events", "calendar:read"),
    (("incident",), "incidents", "chat.messages", "chat:read"),
)
"""Phrases -> (input name, source, the capability it requires)."""

_REQUIRED_ARGS = {
    "code-host.merged_pull_requests": "repo: your-org/your-repo",
    "chat.messages": "channel: your-channel",
}
"""The args a source needs, filled with a placeholder the user edits before approving."""

_TEMPLATES = ("section", "digest")

_FILE = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w-][\w.-]*\.(?:md|markdown|txt|rst|org|csv|json|ya?ml|html?))"
    r"(?![\w/-])",
    re.IGNORECASE,
)
_TARGET_WORDS = frozenset(
    ("into", "to", "in", "onto", "as", "write", "update", "keep", "maintain", "called", "named")
)
"""The word before a file name that makes it where the output goes ("into today.md")."""


@frozen_record
class NamedFiles:
    """The files a sentence names: what it reads (sources) and where it writes (targets)."""

    sources: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()


def named_files(sentence: str) -> NamedFiles:
    """The files ``sentence`` names, sorted: "summarise notes.md into today.md" reads
    ``notes.md`` and writes ``today.md``. A file name after into/to/in/as/write/update/keep
    is a target, any other a source."""
    sources: list[str] = []
    targets: list[str] = []
    for match in _FILE.finditer(sentence):
        before = re.findall(r"[\w-]+", sentence[: match.start()].lower())
        name = match.group(1).strip(".")
        chosen = targets if before and before[-1] in _TARGET_WORDS else sources
        if name not in chosen:
            chosen.append(name)
    return NamedFiles(tuple(n for n in sources if n not in targets), tuple(targets))


def _identifier(path: str) -> str:
    stem = re.sub(r"[^a-z0-9]+", "_", path.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower())
    stem = stem.strip("_") or "file"
    return stem if stem[0].isalpha() else f"f_{stem}"


@frozen_record
class Filled:
    """A contract text filled from a sentence, with the template and what was assumed."""

    text: str
    template: str
    assumed: tuple[str, ...]


def parse_schedule(sentence: str) -> tuple[str | None, list[str]]:
    """A cron line from "every Friday at three" and the like (None when no day is named)."""
    lowered = sentence.lower()
    assumed: list[str] = []
    day = next((cron for word, cron in _DAYS.items() if f"every {word}" in lowered), None)
    if day is None and re.search(r"\bevery (day|morning)\b|\bdaily\b", lowered):
        day = "*"
    if day is None and "every weekday" in lowered:
        day = "MON-FRI"
    if day is None:
        return None, assumed
    hour, minute = 9, 0
    match = re.search(r"\bat (\d{1,2})(?::(\d{2}))?\s*(am|pm)?|\bat (\w+)", lowered)
    if match and match.group(1):
        hour = int(match.group(1))
        minute = int(match.group(2) or 0)
        if (match.group(3) == "pm" and hour < 12) or (match.group(3) is None and hour <= 6):
            hour += 12
    elif match and match.group(4) in _WORDS:
        hour = _WORDS[match.group(4)]
        hour = hour + 12 if hour <= 6 else hour
    else:
        assumed.append("09:00, since the sentence names no time")
    if not 0 <= hour <= 23 or not 0 <= minute <= 59:
        hour, minute = 9, 0
        assumed.append("09:00, since the time named is not a time of day")
    return f"{minute} {hour} * * {day}", assumed


def _slug(sentence: str, template: str) -> str:
    lowered = sentence.lower()
    for noun in ("report", "digest", "notes", "newsletter", "summary"):
        if noun in lowered:
            weekly = "weekly-" if "week" in lowered or "friday" in lowered else ""
            return f"{weekly}{noun}"
    return f"my-{template}"


def _args(source: str) -> str:
    return f"args: {{{_REQUIRED_ARGS[source]}}}, " if source in _REQUIRED_ARGS else ""


def fill_contract(sentence: str, attempt: int = 0) -> Filled:
    """The contract for ``sentence`` from template ``attempt`` (a retry takes the next one)."""
    template = _TEMPLATES[min(attempt, len(_TEMPLATES) - 1)]
    lowered = sentence.lower()
    schedule, assumed = parse_schedule(sentence)
    files = named_files(sentence)
    chosen = [s for s in SOURCES if any(p in lowered for p in s[0])]
    if not chosen and not files.sources:
        chosen = [SOURCES[0]]
        assumed.append("merged pull requests as the source, since the sentence names none")
    read = [(_identifier(path), f"files.read, args: {{path: {path}}}") for path in files.sources]
    named = [(s[1], f"{s[2]}, {_args(s[2])}window: 7d") for s in chosen] + read
    name = _slug(sentence, template)
    if files.targets:
        name = _identifier(files.targets[0]).replace("_", "-")
    target = files.targets[0] if files.targets else f"{name}.md"
    if target in files.sources:
        target = f"{name}-summary.md"
    output = "section" if "section" in lowered or template == "section" else "digest"
    requires = [s[3] for s in chosen] + (["files:read"] if read else []) + ["documents:write"]
    inputs = "\n".join(f"    {ident}: {{from: {how}}}" for ident, how in named)
    assumed += [f"{_REQUIRED_ARGS[s[2]]} (edit it)" for s in chosen if s[2] in _REQUIRED_ARGS]
    lines = ["---", f"name: {name}", "kind: responsibility", "hz:", "  namespace: me"]
    if schedule:
        lines.append(f'  schedule: "{schedule}"')
        lines.append("  timezone: UTC")
    lines += [
        "  render_on_schedule: always",
        f"  requires: [{', '.join(requires)}]",
        "  inputs:",
        inputs,
        "  outputs:",
        f'    {output}: {{asset: "file:{target}", valid_for: 7d}}',
        "  publishes: [documents.place_draft]",
        "  approvers: [owner]",
        "  agent: {max_usd: 0.5, model_class: standard}",
        "---",
        "",
        "### Goal",
        f"- `{output}`: {sentence.strip()}",
        "",
        "### Requires",
        *[f"- `{ident}`: {how.split(',', 1)[0]}" for ident, how in named],
        "",
        "### Done when",
        *[f"- [ ] every item of `{ident}` is covered" for ident, _ in named],
        "",
    ]
    return Filled("\n".join(lines), template, tuple(assumed))
