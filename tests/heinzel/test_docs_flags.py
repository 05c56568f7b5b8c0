"""Every `hz ...` command the README and docs/ show names a command that exists and only
flags that command takes (a docs walk found flags and outputs the docs had wrong)."""

from __future__ import annotations

import re
from pathlib import Path

import click

from heinzel.cli import group

ROOT = Path(__file__).resolve().parents[2]
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")


def shown_commands(text: str) -> set[str]:
    """The `hz ...` commands of a page: in backticks, and on the lines of its code blocks."""
    found = set(re.findall(r"`(hz [^`\n]+)`", text))
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        for line in block.splitlines():
            match = re.search(r"(?:^|[\s$])(hz\s[^#]*)", line)
            if match:
                found.add(match.group(1))
    return found


def unknown_flags(command: str) -> list[str]:
    """The flags of ``command`` that the command it names does not take."""
    root = group()
    words = command.split()[1:]
    if words[:1] == ["--home"]:
        words = words[2:]
    found: click.Command = root
    while isinstance(found, click.Group) and words and words[0] in found.commands:
        found = found.commands[words.pop(0)]
    if found is root and words and not words[0].startswith("-"):
        return []  # prose that starts with "hz" (`hz web head for ...`), not a command
    if any("|" in word and not word.startswith("-") for word in words[:1]):
        return []  # `hz heinzel chat|retry --request-id`: several commands at once
    takes = {"--help", "-h"} | {o for p in found.params for o in [*p.opts, *p.secondary_opts]}
    if found is root:
        takes |= {"--version", "--home"}
    return [flag for word in words for flag in FLAG.findall(word) if flag not in takes]


def test_every_flag_the_docs_show_exists() -> None:
    """No page shows a flag its command does not take."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    wrong = {
        (page.name, command, flag)
        for page in pages
        for command in shown_commands(page.read_text(encoding="utf-8"))
        for flag in unknown_flags(command)
    }
    assert wrong == set()


def test_a_flag_that_is_not_there_is_found() -> None:
    """The check itself: a made-up flag and a made-up subcommand's flag are reported."""
    assert unknown_flags("hz heinzel list --colour") == ["--colour"]
    assert unknown_flags("hz heinzel wake NAME --request-id rq-1 --json") == []
