"""Placeholders of the command runner: filled inside single arguments, everything else refused."""

from __future__ import annotations

import pytest

from heinzel.runners.errors import RunnerError
from heinzel.runners.placeholders import fill, placeholders_used, validate

VALUES = {
    "prompt_file": "/tmp/p q/prompt.md",
    "contract_file": "/c.md",
    "output_file": "/o",
    "working_dir": "/w",
    "tools": "read,grep",
    "model": "m; rm -rf /",
    "timeout_seconds": "30",
    "max_usd": "0.5",
}


class TestFill:
    def test_values_stay_inside_their_argument(self) -> None:
        """A value with spaces or shell syntax is one argument, never split or interpreted."""
        assert fill("r", ["agent", "--prompt={prompt_file}", "{model}"], VALUES) == [
            "agent",
            "--prompt=/tmp/p q/prompt.md",
            "m; rm -rf /",
        ]

    def test_several_placeholders_in_one_argument(self) -> None:
        """Literal text around and between placeholders is kept."""
        assert fill("r", ["{working_dir}:{tools}@{max_usd}"], VALUES) == ["/w:read,grep@0.5"]

    def test_doubled_braces_are_literal(self) -> None:
        """{{ and }} are a literal { and }."""
        assert fill("r", ['{{"t": "{timeout_seconds}"}}'], VALUES) == ['{"t": "30"}']

    def test_placeholders_used_lists_the_names(self) -> None:
        """The runner uses this to know what the command takes."""
        assert placeholders_used("r", ["a{tools}", "{{max_usd}}", "{model}"]) == {"tools", "model"}


class TestValidate:
    @pytest.mark.parametrize(
        ("arg", "why"),
        [
            ("{secret}", "unknown placeholder {secret}"),
            ("{}", "unknown placeholder {}"),
            ("{0}", "unknown placeholder {0}"),
            ("{tools.__class__}", "unknown placeholder {tools.__class__}"),
            ("{tools[0]}", "unknown placeholder {tools[0]}"),
            ("{model:>10}", "format specs like :>10 are not allowed"),
            ("{model!r}", "conversions like !r are not allowed"),
            ("{model", "malformed braces"),
            ("model}", "malformed braces"),
        ],
    )
    def test_anything_but_a_known_bare_placeholder_is_HZR011(self, arg: str, why: str) -> None:
        """Unknown names, attributes, indexes, specs, conversions and lone braces are refused."""
        with pytest.raises(RunnerError) as caught:
            validate("mine", ["agent", arg])
        assert caught.value.code == "HZR011"
        assert why in caught.value.message and "[runners.mine]" in caught.value.message
