"""The offline model's amendment rule: a chat message asking to "also mention X from S".

"also mention incidents from #checkout-oncall" (or "... from the on-call channel") asks
for a new input ``incidents`` read from ``chat.messages`` on that channel; "also include
the todo list from todo.txt" for one read from ``files.read``. The rule edits the
contract's text as text (the input line after the last input, the capability added to
``requires``, a bullet under ``### Requires`` when there is one), so the rest stays
byte for byte; anything else in a message is no amendment (None), and the turn drafts.
The amendment cites the message (``asked_in``): hz files it as the user's request.
"""

from __future__ import annotations

import re

from ledger.records import frozen_record

__all__ = ["Addition", "addition", "amended"]

_ASK = re.compile(
    r"^\s*(?:please\s+)?also\s+(?:mention|include|add|cover)\s+(?P<what>.+?)"
    r"\s+from\s+(?P<where>.+?)\s*[.!]?\s*$",
    re.I | re.S,
)
_HASHTAG = re.compile(r"^(?:the\s+)?(#[\w-]+)(?:\s+channel)?$", re.I)
_CHANNEL = re.compile(r"^(?:the\s+|our\s+)?([\w-]+)\s+channel$", re.I)
_FILE = re.compile(r"^(?:the\s+file\s+)?([\w./-]+\.\w+)$", re.I)
_SKIP = {"the", "a", "an", "all", "any", "our", "my", "some", "new"}


@frozen_record
class Addition:
    """The input a message asks for: its name, where it is read from, the grant it needs."""

    name: str
    line: str
    """The input's frontmatter value, e.g. ``{from: files.read, args: {path: todo.txt}}``."""
    requires: str
    said: str


def addition(message: str) -> Addition | None:
    """The input ``message`` asks to add, or None when it asks for no such thing."""
    asked = _ASK.match(message)
    if asked is None:
        return None
    words = [w for w in re.findall(r"[a-z0-9]+", asked["what"].lower()) if w not in _SKIP]
    if not words:
        return None
    name = words[0]
    where = " ".join(asked["where"].split())
    said = " ".join(message.split())[:160]
    if tag := _HASHTAG.match(where):
        channel = tag.group(1).lower()
    elif named := _CHANNEL.match(where):
        channel = "#" + named.group(1).lower()
    elif path := _FILE.match(where):
        line = f"{{from: files.read, args: {{path: {path.group(1)}}}}}"
        return Addition(name, line, "files:read", said)
    else:
        return None
    line = f'{{from: chat.messages, args: {{channel: "{channel}"}}, window: 7d, recheck: 1h}}'
    return Addition(name, line, "chat:read", said)


def amended(contract: str, add: Addition) -> str | None:
    """``contract`` with ``add`` in it, or None when it cannot be placed (no frontmatter,
    no ``inputs:``, the name taken)."""
    lines = contract.split("\n")
    if not lines or lines[0].strip() != "---" or "---" not in (x.strip() for x in lines[1:]):
        return None
    end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    head = next((i for i in range(1, end) if lines[i].strip() == "inputs:"), None)
    if head is None:
        return None
    indent = len(lines[head]) - len(lines[head].lstrip())
    last = head
    for i in range(head + 1, end):
        depth = len(lines[i]) - len(lines[i].lstrip())
        if lines[i].strip() and depth <= indent:
            break
        if lines[i].strip().startswith(f"{add.name}:") and depth == indent + 2:
            return None
        last = i
    lines.insert(last + 1, f"{' ' * (indent + 2)}{add.name}: {add.line}")
    end += 1
    for i in range(1, end):
        grants = re.match(r"^(\s*requires:\s*\[)(.*)(\]\s*)$", lines[i])
        if grants:
            have = [g.strip() for g in grants.group(2).split(",") if g.strip()]
            if add.requires not in have:
                lines[i] = f"{grants.group(1)}{', '.join([*have, add.requires])}{grants.group(3)}"
            break
    body = next((i for i in range(end, len(lines)) if lines[i].strip() == "### Requires"), None)
    if body is not None:
        stop = next(
            (i for i in range(body + 1, len(lines)) if lines[i].startswith("#")), len(lines)
        )
        bullets = [i for i in range(body + 1, stop) if lines[i].startswith("- ")]
        if bullets:
            said = add.said.replace('"', "'")
            lines.insert(bullets[-1] + 1, f'- `{add.name}`: asked for in chat: "{said}"')
    return "\n".join(lines)
