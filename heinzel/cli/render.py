"""Plain-text renderings of what the commands return (``--json`` prints the data itself)."""

from __future__ import annotations

from typing import Any

from heinzel.session.summaries import summary_lines
from heinzel.strings.usd import usd_text
from heinzel.strings.waits import asks, draft_waits

__all__ = [
    "amendment",
    "approved",
    "created",
    "doctor",
    "drafts",
    "lessons",
    "listing",
    "prune",
    "reindex",
    "renamed",
    "show",
    "state_line",
    "verify",
]


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def _version(row: dict[str, Any]) -> str:
    v = row.get("contract_version")
    return f"v{v}" if v else f"(v{row.get('proposed_version') or 1} proposed)"


def _ref(row: dict[str, Any]) -> str:
    """How a command names ``row``: a team one as ``team/NAME``, which stays unambiguous
    when a one of yours has the same name (a bare NAME is then HZH081)."""
    return f"team/{row['name']}" if row.get("namespace") == "team" else str(row["name"])


def state_line(row: dict[str, Any]) -> str:
    """``NAME (ID): STATE, vN``; before the first approval ``STATE, vN not approved yet``
    (never the listing's ``(vN proposed)`` after a comma)."""
    version = row.get("contract_version")
    if version:
        return f"{row['name']} ({row['id']}): {row['state']}, v{version}"
    proposed = row.get("proposed_version") or 1
    return f"{row['name']} ({row['id']}): {row['state']}, v{proposed} not approved yet"


def renamed(row: dict[str, Any]) -> str:
    """A rename, or one to the name it has already: nothing changed, and said so."""
    if row.get("unchanged"):
        return f"{row['name']} ({row['id']}) is already named {row['name']}; nothing changed"
    return state_line(row)


def created(rows: list[dict[str, Any]]) -> str:
    lines = []
    for r in rows:
        lines.append(f"created {state_line(r)}")
        lines += [f"warning: {w}" for w in r.get("warnings", [])]
    names = " ".join(_ref(r) for r in rows)
    first = _ref(rows[0]) if rows else "NAME"
    lines.append(f"next: read it with `hz heinzel show {first}`, then `hz approve {names}`")
    return "\n".join(lines)


def approved(rows: list[dict[str, Any]]) -> str:
    lines = []
    for r in rows:
        what = f"the draft in {r['file']}" if r.get("file") else r["approved"]
        lines.append(f"approved {what}: now {r['state']}")
        lines += [f"warning: {w}" for w in r.get("warnings", [])]
    return "\n".join(lines)


def listing(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no Heinzelmännchen (create one: hz heinzel new --from FILE.prose.md)"
    team = any("team" in r for r in rows)
    table = [["NAME", "NS", "STATE", "CONTRACT", "NEXT DUE", "PENDING", "TODAY"]]
    if team:
        table[0] += ["LEASE", "LAST RECEIPT"]
    for r in rows:
        pending = r.get("pending") or {}
        line = [
            r["name"],
            r["namespace"],
            r["state"],
            f"{r.get('contract_name') or '-'} {_version(r)}",
            r.get("next_due") or "-",
            f"{pending['kind']}" if pending else "-",
            f"{usd_text(r.get('cost_today') or 0)} USD",
        ]
        if team:
            line += _team_cells(r.get("team"))
        table.append(line)
    return "\n".join([_table(table), *_notice_lines(rows)])


def _notice_lines(rows: list[dict[str, Any]], indent: str = "") -> list[str]:
    """Each row's notices (`heinzel.index.notices`), once per Heinzelmännchen, with the
    command that moves it."""
    lines: list[str] = []
    seen: set[str] = set()
    for r in rows:
        who = str(r.get("name") or r.get("id"))
        if who in seen:
            continue
        seen.add(who)
        for notice in r.get("notices") or []:
            lines.append(f"{indent}notice: {who}: {notice['message']}")
            lines.append(f"{indent}  next: {notice['next']}")
    return lines


def _team_cells(team: dict[str, Any] | None) -> list[str]:
    """A team row's lease (holder, token, expired) and last receipt (slot, by whom)."""
    if not team:
        return ["-", "-"]
    holder = team.get("holder")
    state = team.get("state") or ("expired" if team.get("expired") else "held")
    claims = f", {len(team['open'])} open" if team.get("open") else ""
    lease = f"{holder} #{team['token']}" + (f" ({state}{claims})" if state != "held" else "")
    last = team.get("last_receipt") or {}
    slot = str(last.get("key") or "").partition("@")[2] or last.get("at") or "-"
    receipt = f"{last.get('kind')} {slot} by {last.get('by')}" if last else "-"
    return [lease if holder else "-", receipt]


def show(data: dict[str, Any]) -> str:
    lines = [
        f"{data['name']} ({data['id']}), namespace {data['namespace']}",
        f"  state:    {data['state']}",
        f"  contract: {data.get('contract_name') or '-'} {_version(data)} "
        f"{data.get('fingerprint') or ''}".rstrip(),
        *([f"  refused:  {data['contract_problem']}"] if data.get("contract_problem") else []),
        f"  assets:   {', '.join(data.get('assets') or []) or '-'}",
        f"  next due: {data.get('next_due') or '-'}",
    ]
    if "team" in data:
        lease, receipt = _team_cells(data["team"])
        lines += [f"  lease:    {lease}", f"  receipt:  {receipt}"]
    pending = data.get("pending")
    questions = data.get("questions") or []
    waiting = [d for d in data.get("drafts") or [] if d.get("state") == "pending"]
    if pending and pending["kind"] == "draft" and waiting:
        lines += [f"  pending:  {d['said']}" for d in waiting]
    elif pending and pending["kind"] != "question":
        lines.append(f"  pending:  {pending['kind']} {pending['ref']}")
    elif not questions:
        lines.append("  pending:  nothing")
    lines += questions_lines(questions)
    day = data.get("spend_today")
    if day is not None:
        lines.append(
            f"  today:    {usd_text(data.get('cost_today') or 0)} USD (the home: "
            f"{usd_text(day['usd'])} of {usd_text(day['cap'])} USD a day)"
        )
    for notice in data.get("notices") or []:
        if notice["reason"] == "question":  # its words are printed above
            continue
        lines.append(f"  notice:   {notice['message']}")
        # this is `show`: a next step that says to run it again is left out
        steps = [s for s in notice["next"].split("; ") if not s.startswith("hz heinzel show ")]
        if steps:
            lines.append(f"            next: {'; '.join(steps)}")
    if data.get("grant"):
        lines += _grant(_ref(data), data["grant"])
    if data["amendments"]:
        lines.append("  amendments:")
        lines += [f"    v{a['version']} by {a['by']}: {a['state']}" for a in data["amendments"]]
    failure = data.get("failure")
    if failure:
        lines.append(f"  failure:  {failure['code']}: {failure['message']}")
        if failure.get("hint"):
            lines.append(f"            hint: {failure['hint']}")
    lines.append(f"  turns: {len(data['turns'])}")
    lines += [
        f"    {t['started_at']} {t['cause']}: {t['disposition'] or t['state']}"
        f"{' (' + t['reason'] + ')' if t['reason'] else ''} {usd_text(t['cost_usd'])} USD"
        f"{', ' + format(t['tokens'], ',') + ' tokens' if t.get('tokens') else ''}"
        for t in data["turns"][-10:]
    ]
    if "summary" in data:
        lines += summary_lines(data["summary"])
    lines.append("  what I learned from you:")
    active = [les for les in data["lessons"] if not les["dismissed"]]
    lines += [f"    [{les['seq']}] {les['sentence']}" for les in active] or ["    nothing yet"]
    cost = data["cost_month"]
    parts = ", ".join(f"{usd_text(usd)} {cause}" for cause, usd in sorted(cost["by_cause"].items()))
    lines.append(f"  this month: {usd_text(cost['total'])} USD" + (f" ({parts})" if parts else ""))
    if cost.get("tokens"):
        by = cost.get("tokens_by_cause") or {}
        each = ", ".join(
            f"{one['tokens']:,} {cause}" for cause, one in sorted(by.items()) if one["tokens"]
        )
        cached = f", {cost['tokens_cached']:,} of them cached" if cost.get("tokens_cached") else ""
        lines.append(f"  tokens:   {cost['tokens']:,} ({each}{cached})")
    return "\n".join(lines)


def questions_lines(
    questions: list[dict[str, Any]], indent: str = "  ", *, own: str | None = None
) -> list[str]:
    """Each question waiting on the user in its words, and the command that answers it.
    ``own``: the turn a verb's line is about; a question another turn asked is named as
    that turn's (``earlier question of turn tn-...: asks: ...``), never shown as this turn's.
    The words are `heinzel.strings.waits.asks`, as every surface says them."""
    lines = []
    pad = indent + " " * len("asks: ")
    for q in questions:
        if own is not None and q.get("turn") != own:
            lines.append(f"{indent}earlier question of turn {q.get('turn')}: {asks(q['text'])}")
        else:
            lines.append(f"{indent}{asks(q['text'])}")
        lines.append(f"{pad}asked {q['asked_at']}; answer: {q['answer']}")
    return lines


def _grant(name: str, grant: dict[str, Any]) -> list[str]:
    """What `hz approve NAME` of a proposed contract lets it do."""
    lines = ["  approving it grants:"]
    lines.append(f"    schedule:  {grant['schedule'] or 'none (wakes when an input moves)'}")
    lines.append(f"    requires:  {', '.join(grant['requires']) or '-'}")
    for input_name, spec in grant["inputs"].items():
        args = ", ".join(f"{k}={v}" for k, v in spec["args"].items())
        lines.append(f"    reads:     {input_name} from {spec['from']}({args})")
    for output, asset in grant["outputs"].items():
        lines.append(f"    keeps:     {output} in {asset}")
    lines.append(f"    publishes: {', '.join(grant['publishes']) or 'nothing'}")
    lines.append(f"    approvers: {', '.join(grant['approvers'])}")
    cap = grant["max_usd"]
    lines.append(
        f"    per turn:  {'at most ' + format(cap, 'g') + ' USD' if cap else 'the default cap'}"
    )
    lines.append(f"  contract file: {grant['contract_file']}")
    lines.append(f"  next: read it, then `hz approve {name}`")
    return lines


def amendment(row: dict[str, Any]) -> str:
    if "replaces" in row:
        return (
            f"replaced the proposal of {row['name']}: v{row['version']} proposed in place of "
            f"v{row['replaces']} (nothing was approved yet)\n"
            f"next: read it with `hz heinzel show {row['name']}`, then `hz approve {row['name']}`"
        )
    return f"amendment {row['id']}: v{row['version']} by {row['by']}, {row['state']}" + (
        " (widens the contract: needs your approval)" if row.get("widens") else ""
    )


def lessons(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "nothing learned yet"
    return "\n".join(
        f"[{r['seq']}] {r['sentence']}" + (" (dismissed)" if r["dismissed"] else "") for r in rows
    )


def verify(reports: list[dict[str, Any]]) -> str:
    lines = []
    for r in reports:
        if r["ok"]:
            lines.append(f"ok     {r['file']} ({r['lines']} lines)")
        else:
            lines += [
                f"BROKEN {r['file']}: seq {b['seq']}: {b['reason']} {b['detail']}".rstrip()
                + (" (contained)" if b.get("contained") else "")
                for b in r["breaks"]
            ]
    broken = [b for r in reports for b in r.get("breaks") or ()]
    if any("newer hz" in str(b.get("detail")) for b in broken):
        lines.append("hint: a line a newer hz wrote: upgrade hz to read it (nothing is wrong)")
    if any("newer hz" not in str(b.get("detail")) for b in broken):
        lines.append(
            "hint: a line changed after it was written; hz goes on past it (contained), "
            "but the chain stays broken there for good. If you edited the file, put back "
            "your copy; else keep it as it is for the record (docs/spine.md, "
            '"Torn tails and breaks")'
        )
    return "\n".join(lines) or "no sessions"


def reindex(data: dict[str, Any]) -> str:
    count = data["sessions"]
    return f"rebuilt {data['index']} from {count} session{'' if count == 1 else 's'}"


def prune(data: dict[str, Any]) -> str:
    if not data["retention_days"]:
        return f"removed {len(data['removed'])} bodies (retention_days = 0 keeps them forever)"
    return (
        f"removed {len(data['removed'])} expired files (turn bodies, inbox requests, "
        f"source-cache entries) older than {data['retention_days']} days"
    )


def drafts(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no drafts waiting"
    table = _table(
        [["NAME", "ASSET", "VERSION", "PLACED", "KEY"]]
        + [
            [r["name"], r["asset"] or "-", f"v{r['contract_version']}", r["placed_at"], r["key"]]
            for r in rows
        ]
    )
    said = [f"{r['name']}: {r.get('said') or draft_waits(r.get('asset'))}" for r in rows]
    return "\n".join([table, *said, *_notice_lines(rows)])


def waiting(rows: list[dict[str, Any]], questions: list[dict[str, Any]]) -> str:
    """`hz drafts`: the drafts, then each question waiting on the user in its words."""
    lines = [drafts(rows)]
    if questions:
        lines.append("questions waiting on you:")
        for q in questions:
            lines.append(f"  {q['name']}: {asks(q['text'])}")
            lines.append(f"    asked {q['asked_at']}; answer: {q['answer']}")
    return "\n".join(lines)


def doctor(data: dict[str, Any]) -> str:
    lines = []
    for check in data["checks"]:
        mark = "ok " if check["ok"] else "!! "
        lines.append(f"{mark} {check['name']}: {check['detail']}")
        if not check["ok"] and check.get("fix"):
            code = f"{check['code']}: " if check.get("code") else ""
            lines.append(f"    fix: {code}{check['fix']}")
    return "\n".join(lines)


def wake(data: dict[str, Any]) -> str:
    if str(data.get("delivered") or "").startswith("already delivered"):
        return f"{data['name']}: {data['delivered']} (turn {data.get('turn')})"
    if data.get("turn") is None:
        return f"{data['name']}: nothing to do"
    ended = data.get("disposition") or data["state"]
    # the cause's own code (HZH131), as stderr says, before the machine's generic HZM021
    code = (data.get("cause") or {}).get("code") or data.get("reason") or data.get("error")
    why = f" ({code})" if code else ""
    line = f"{data['name']}: turn {data['turn']} {ended}{why}, {usd_text(data['usd'])} USD"
    if data.get("draft"):
        path = str(data["draft"]).removeprefix("file:")
        line += (
            f"\n{draft_waits(path)}: edit it there, then delete its 🧝 DRAFT line to "
            f"approve (or `hz approve {data['name']}`)"
        )
    return "\n".join(
        [
            line,
            *reply_lines(data),
            *questions_lines(data.get("questions") or [], indent="", own=data["turn"]),
        ]
    )


def reply_lines(data: dict[str, Any]) -> list[str]:
    """What the turn did and said (`heinzel.session.replies`), under the turn's line."""
    reply = data.get("reply") or {}
    if data.get("draft"):  # the draft's place is printed above with how to approve it
        said = [line for line in reply.get("said") or [] if not line.startswith("drafted")]
    else:
        said = list(reply.get("said") or [])
    return [f"  {line}" for line in said]


def forgot(data: dict[str, Any]) -> str:
    """`hz heinzel forget`: what later turns no longer see (or see instead)."""
    what = data["target"].replace("turn:", "turn ").replace("seq:", "line #")
    queued = f"\nqueued: {data['queued']}" if data.get("queued") else ""
    if data["replacement"] is None:
        return f"{data['name']}: later turns no longer see {what} (the record keeps it){queued}"
    return f"{data['name']}: later turns see {what} as: {data['replacement']}{queued}"
