"""``hz mcp`` from the MCP SDK's own client over stdio: the tools, the worked example through
them, coded errors as tool errors, hostile arguments refused cleanly."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from .client import HZ, priya, session, text

TOOLS = {
    "heinzel_list": True,
    "heinzel_show": True,
    "drafts": True,
    "heinzel_new": False,
    "heinzel_wake": False,
    "heinzel_chat": False,
    "heinzel_answer": False,
    "heinzel_pause": False,
    "heinzel_unpause": False,
    "heinzel_retire": False,
    "heinzel_unretire": False,
    "heinzel_stop": False,
    "heinzel_retry": False,
    "heinzel_resume": False,
    "heinzel_try": False,
    "approve": False,
}


def test_the_tools_are_the_verbs_typed_and_read_only_where_they_only_read(
    tmp_path: Path,
) -> None:
    """Every verb is a tool with an input and an output schema; only the readers are read-only."""

    async def body(s: ClientSession) -> Any:
        return (await s.list_tools()).tools

    tools = {t.name: t for t in session(priya(tmp_path), tmp_path, body)}
    assert set(tools) == set(TOOLS)
    for name, read_only in TOOLS.items():
        tool = tools[name]
        assert tool.annotations is not None and tool.annotations.read_only_hint is read_only, name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", name
        assert tool.description, name
    # every argument of every tool says what it is (docs/mcp.md), at the top of its schema
    undescribed = [
        (name, argument)
        for name, tool in tools.items()
        for argument, schema in tool.input_schema.get("properties", {}).items()
        if not schema.get("description")
    ]
    assert undescribed == []
    assert tools["heinzel_show"].input_schema["required"] == ["name"]
    assert tools["heinzel_show"].input_schema["properties"]["name"]["maxLength"] == 4096


def test_the_worked_example_through_the_tools(tmp_path: Path) -> None:
    """new, approve, list, show, wake, drafts, chat and approving the draft work as the CLI's
    walkthrough does, and what the tools did is what `hz heinzel show --json` then reads."""
    env = priya(tmp_path)

    async def body(s: ClientSession) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        calls: list[tuple[str, dict[str, Any]]] = [
            ("heinzel_new", {"files": ["weekly-report.prose.md"]}),
            ("approve", {"items": ["weekly-report"]}),
            ("heinzel_list", {"state": "asleep"}),
            ("heinzel_wake", {"name": "weekly-report", "message": "draft this week's section"}),
            ("drafts", {}),
            ("heinzel_show", {"name": "weekly-report"}),
        ]
        for name, args in calls:
            result = await s.call_tool(name, args)
            assert not result.is_error, (name, text(result))
            seen[name] = result.structured_content
        key = seen["drafts"]["drafts"][0]["key"]
        for name, args in [
            ("approve draft", {"items": [key]}),
            ("heinzel_chat", {"name": "weekly-report", "text": "keep it under ten lines"}),
        ]:
            result = await s.call_tool(name.split()[0], args)
            assert not result.is_error, (name, text(result))
            seen[name] = result.structured_content
        return seen

    seen = session(env, tmp_path, body)
    assert [r["state"] for r in seen["heinzel_new"]["created"]] == ["proposed"]
    assert seen["approve"]["approved"][0]["approved"] == "weekly-report v1"
    (row,) = seen["heinzel_list"]["heinzelmaennchen"]
    assert (row["name"], row["state"], row["contract_version"]) == ("weekly-report", "asleep", 1)
    assert seen["heinzel_wake"]["disposition"] == "drafted"
    assert seen["drafts"]["drafts"][0]["name"] == "weekly-report"
    assert seen["heinzel_show"]["pending"]["kind"] == "draft"
    assert seen["heinzel_chat"]["name"] == "weekly-report"
    assert seen["approve draft"]["approved"][0]["approved"] == seen["drafts"]["drafts"][0]["key"]
    shown = subprocess.run(
        [HZ, "heinzel", "show", "weekly-report", "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert seen["heinzel_wake"]["turn"] in shown.stdout


def test_a_coded_error_is_a_tool_error_with_code_and_hint(tmp_path: Path) -> None:
    """An unknown name, an answer with nothing waiting and a bad state come back as tool errors
    carrying the CLI's `CODE: message` and hint, and the server goes on serving."""

    async def body(s: ClientSession) -> list[Any]:
        return [
            await s.call_tool("heinzel_show", {"name": "nobody"}),
            await s.call_tool("heinzel_answer", {"name": "nobody", "approve": True}),
            await s.call_tool("heinzel_list", {"state": "sleepy"}),
            await s.call_tool("heinzel_new", {}),
            await s.call_tool("heinzel_list", {}),
        ]

    show, answer, listing, new, after = session(priya(tmp_path), tmp_path, body)
    for result, code in [(show, "HZH080"), (answer, "HZH080"), (listing, "HZH082")]:
        assert result.is_error
        assert f"{code}: " in text(result) and "\nhint: " in text(result)
        # a refusal names the home it read, as every answer does
        assert f"\nhome: {tmp_path / 'home'} (no home there yet)" in text(result)
    assert new.is_error and "HZH271: " in text(new)
    assert not after.is_error and after.structured_content["heinzelmaennchen"] == []
    # an empty answer says which home it read, and that no home is there yet
    assert after.structured_content["home"] == str(tmp_path / "home")
    assert after.structured_content["home_exists"] is False


def test_the_home_given_before_mcp_is_the_one_served(tmp_path: Path) -> None:
    """`hz --home DIR mcp` serves DIR, as `hz mcp --home DIR` does, not `$HZ_HOME`
    (docs/cli.md: every command takes `--home` after the subcommand or before it)."""

    async def body(s: ClientSession) -> Any:
        return (await s.call_tool("heinzel_list", {})).structured_content

    other = tmp_path / "other"
    for args in (["--home", str(other), "mcp"], ["mcp", "--home", str(other)]):
        listed = session(priya(tmp_path), tmp_path, body, args)
        assert listed["home"] == str(other), args


def test_the_first_heinzel_new_says_the_home_is_there_now(tmp_path: Path) -> None:
    """`heinzel_new` into a home not made yet answers `home_exists: true`: the home as the
    call left it (it made it), not as it found it."""

    async def body(s: ClientSession) -> Any:
        return (
            await s.call_tool("heinzel_new", {"files": ["weekly-report.prose.md"]})
        ).structured_content

    created = session(priya(tmp_path), tmp_path, body)
    assert created["home"] == str(tmp_path / "home")
    assert created["home_exists"] is True, created


def test_created_and_approved_rows_nest_no_json_in_strings(tmp_path: Path) -> None:
    """`heinzel_new` and `approve` answer rows whose assets, frontmatter, watched and
    pending are JSON values, as `hz heinzel new --json` prints them, not JSON text."""

    async def body(s: ClientSession) -> list[Any]:
        new = await s.call_tool("heinzel_new", {"files": ["weekly-report.prose.md"]})
        done = await s.call_tool("approve", {"items": ["weekly-report"]})
        return [new.structured_content, done.structured_content]

    created, approved = session(priya(tmp_path), tmp_path, body)
    (row,) = created["created"]
    assert row["pending"] == {"kind": "approval", "ref": "v1"}, row
    assert isinstance(row["frontmatter"], dict) and isinstance(row["assets"], list), row
    assert isinstance(row["watched"], dict), row
    (item,) = approved["approved"]
    assert isinstance(item["frontmatter"], dict) and item["pending"] is None, item


def test_approve_with_no_items_is_refused_not_an_empty_success(tmp_path: Path) -> None:
    """`approve` with an empty list fails its input schema, as `hz approve` with no item is
    bad usage; the proposed one stays proposed."""
    env = priya(tmp_path)

    async def body(s: ClientSession) -> list[Any]:
        new = await s.call_tool("heinzel_new", {"files": ["weekly-report.prose.md"]})
        assert not new.is_error, text(new)
        return [
            await s.call_tool("approve", {"items": []}),
            await s.call_tool("heinzel_show", {"name": "weekly-report"}),
        ]

    nothing, shown = session(env, tmp_path, body)
    assert nothing.is_error
    assert "items" in text(nothing)
    assert shown.structured_content["state"] == "proposed"


def test_hostile_arguments_are_refused_cleanly(tmp_path: Path) -> None:
    """A name with path separators or a NUL does not fit the name's pattern (HZH272, naming
    the argument), a megabyte name or message is HZH270 (short), a wrong type
    and an argument the tool does not name fail the schema coded; nothing is created outside
    the home."""
    env = priya(tmp_path)
    huge = "x" * 1_000_000

    async def body(s: ClientSession) -> list[Any]:
        return [
            await s.call_tool("heinzel_show", {"name": "../../etc/passwd"}),
            await s.call_tool("heinzel_show", {"name": "me/../../x"}),
            await s.call_tool("heinzel_show", {"name": huge}),
            await s.call_tool("heinzel_chat", {"name": "weekly-report", "text": huge}),
            await s.call_tool("approve", {"items": "weekly-report"}),
            await s.call_tool("heinzel_wake", {"name": "a\x00b"}),
            await s.call_tool("heinzel_show", {"name": "weekly-report", "verbose": True}),
            await s.call_tool("heinzel_chat", {"name": "x", "text": "hi", "request_id": "1; rm"}),
        ]

    before = sorted(p.name for p in tmp_path.parent.iterdir())
    answers = session(env, tmp_path, body)
    traversal, namespaced, long_name, long_text, wrong_type, nul, extra, bad_id = answers
    for refused in (traversal, namespaced, nul, wrong_type, extra, bad_id):
        assert refused.is_error and text(refused).startswith("HZH272: "), text(refused)
        assert "\nhint: " in text(refused) and "pydantic" not in text(refused)
        assert f"\nhome: {tmp_path / 'home'}" in text(refused)
    assert "HZH270: " in text(long_text) and "HZH270: " in text(long_name)
    assert len(text(long_name)) < 500
    assert "`verbose`: Extra inputs are not permitted" in text(extra)
    assert "`request_id`" in text(bad_id)
    assert sorted(p.name for p in tmp_path.parent.iterdir()) == before


def test_stdout_carries_only_the_protocol(tmp_path: Path) -> None:
    """With debug logging on, every line `hz mcp` writes to stdout is a JSON-RPC message;
    the logs go to stderr."""
    env = priya(tmp_path) | {"HZ_LOG_LEVEL": "debug"}
    lines = [
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"heinzel_new",'
        '"arguments":{"files":["weekly-report.prose.md"]}}}',
    ]
    proc = subprocess.Popen(
        [HZ, "mcp"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    for line in lines:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
    first, second = proc.stdout.readline(), proc.stdout.readline()
    _, err = proc.communicate(timeout=60)
    assert '"id":1' in first and '"id":2' in second and "weekly-report" in second
    assert '"isError":true' not in second
    assert "appended" in err


@pytest.mark.kill
def test_ctrl_c_ends_the_server_while_the_client_keeps_stdin_open(tmp_path: Path) -> None:
    """`hz mcp` run by hand in a terminal: after the handshake, Ctrl-C (SIGINT) ends it, as
    SIGTERM does, without waiting for stdin to close."""
    proc = subprocess.Popen(
        [HZ, "mcp"],
        env=priya(tmp_path),
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    with proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
            '"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
        )
        proc.stdin.flush()
        assert '"id":1' in proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        try:
            assert proc.wait(timeout=60) == -signal.SIGINT
        finally:
            proc.kill()


def test_the_lifecycle_through_the_tools(tmp_path: Path) -> None:
    """pause, unpause, retire, unretire, retry, stop and resume act as their commands do,
    with structured results; a verb that makes no sense now is a coded tool error."""
    env = priya(tmp_path)

    async def body(s: ClientSession) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        calls: list[tuple[str, dict[str, Any]]] = [
            ("heinzel_new", {"files": ["weekly-report.prose.md"]}),
            ("approve", {"items": ["weekly-report"]}),
            ("heinzel_pause", {"name": "weekly-report"}),
            ("heinzel_wake paused", {"name": "weekly-report"}),
            ("heinzel_unpause", {"name": "weekly-report"}),
            ("heinzel_wake", {"name": "weekly-report", "message": "draft this week's section"}),
            ("heinzel_retry", {"name": "weekly-report", "hint": "shorter, please"}),
            ("heinzel_try", {"name": "weekly-report"}),
            ("heinzel_stop", {"name": "weekly-report"}),
            ("heinzel_resume", {"name": "weekly-report"}),
            ("heinzel_retire", {"name": "weekly-report"}),
            ("heinzel_unretire", {"name": "weekly-report"}),
        ]
        for name, args in calls:
            result = await s.call_tool(name.split()[0], args)
            seen[name] = (result.is_error, result.structured_content, text(result))
        return seen

    seen = session(env, tmp_path, body)
    assert seen["heinzel_pause"][1]["state"] == "paused"
    assert seen["heinzel_wake paused"][0] and "HZH050" in seen["heinzel_wake paused"][2]
    assert seen["heinzel_unpause"][1]["state"] == "asleep"
    retried = seen["heinzel_retry"]
    assert not retried[0], retried[2]
    assert retried[1]["parent"] == seen["heinzel_wake"][1]["turn"]
    assert retried[1]["disposition"] == "drafted"
    tried = seen["heinzel_try"]
    assert not tried[0], tried[2]
    assert [t["turn"] for t in tried[1]["turns"]] == [
        seen["heinzel_wake"][1]["turn"],
        retried[1]["turn"],
    ]
    assert tried[1]["summary"].startswith("2 turns tried under v1"), tried[1]["summary"]
    assert seen["heinzel_stop"][0] and "HZH237" in seen["heinzel_stop"][2]
    assert seen["heinzel_resume"][0] and "HZH236" in seen["heinzel_resume"][2]
    assert seen["heinzel_retire"][1]["state"] == "retired"
    assert seen["heinzel_unretire"][1]["state"] == "waiting"  # its draft waits on you


def test_each_tool_call_closes_the_index_keeping_its_wal(tmp_path: Path) -> None:
    """A tool call reads through an app of its own and closes it as a command does
    (`ledger.index.close_keeping_wal`): the index's WAL stays, so no close checkpoints it
    (an fsync of the WAL and of the database each) and the next write starts no new WAL
    (its header and its folder). Left to the garbage collector, the call's reader was the
    last connection and its close checkpointed and removed the WAL."""
    env = priya(tmp_path)
    wal = tmp_path / "home" / "heinzel" / "index.sqlite-wal"

    async def body(s: ClientSession) -> list[bool]:
        await s.call_tool("heinzel_new", {"files": ["weekly-report.prose.md"]})
        after_new = wal.is_file()
        await s.call_tool("heinzel_list", {})
        return [after_new, wal.is_file()]

    assert session(env, tmp_path, body) == [True, True]
    assert wal.is_file()
