"""The operations a user asks of one ``HZ_HOME``, apart from running turns.

A `Service` creates Heinzelmännchen from contract files, approves versions, amendments and
local drafts, pauses and retires, renames, lists and shows from the index, verifies the
chains, rebuilds the index and prunes. Every change is a spine event appended under the
session's lock (`heinzel.session.Sessions`, which it extends); the index is updated from
the same event once it is durable. Turns are `heinzel.turns.Turns`; the surfaces get both
from `heinzel.app.App`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heinzel.errors import HeinzelError
from heinzel.ids import new_id, validate_name
from heinzel.index.notices import notices, notices_by_id
from heinzel.session.questions import waiting_questions
from heinzel.session.sessions import Sessions
from heinzel.store.contracts import approved_text, load_facts, store_version
from heinzel.strings.waits import asks_notice, draft_waits
from ledger.errors import HzError
from ledger.event import format_ts
from ledger.files import ensure_private_dir

if TYPE_CHECKING:
    import sqlite3

    from heinzel.contract import CompiledContract
    from heinzel.index.listing import Listing
    from ledger.verify import VerifyReport

# The compiler (pydantic, YAML), the lifecycle machine, amendments and drafts load inside the
# operations that use them: listing and showing need none of them (start-up by need).

__all__ = ["Service"]

LIFECYCLE_EVENTS = {
    "pause": "heinzel.paused",
    "unpause": "heinzel.unpaused",
    "retire": "heinzel.retired",
    "unretire": "heinzel.unretired",
}


class Service(Sessions):
    """hz's operations over one home, with one clock and one configuration."""

    # -- creation ----------------------------------------------------------------

    def create_from_files(
        self, paths: Sequence[str], *, name: str | None = None, namespace: str | None = None
    ) -> list[dict[str, Any]]:
        """Compile every file first; create nothing unless all of them compile."""
        if name and len(paths) > 1:
            raise HeinzelError(
                "HZH070",
                "--name goes with a single --from file",
                "create them one by one to name each",
            )
        from heinzel.contract import compile_contract
        from heinzel.contract.compiler import read_contract_text
        from heinzel.service.outputs import check_outputs

        compiled: list[tuple[Path, str, CompiledContract]] = []
        warnings: list[list[str]] = []
        for raw in paths:
            path = Path(raw)
            text = read_contract_text(path, str(raw))
            contract = compile_contract(text, source=str(raw))
            found = check_outputs(contract, path.resolve().parent, self.protected)
            warnings.append(found + self._unserved(contract))
            compiled.append((path.resolve(), text, contract))
        claimed: set[tuple[str, str]] = set()
        plans = []
        for path, text, contract in compiled:
            chosen = validate_name(name or contract.name)
            ns = namespace or contract.frontmatter.hz.namespace
            if (ns, chosen) in claimed or self.queries.find_by_name(ns, chosen):
                raise HeinzelError(
                    "HZH072",
                    f"the name {chosen!r} is taken in namespace {ns}",
                    "choose another with --name, or retire and rename the old one",
                )
            claimed.add((ns, chosen))
            plans.append((path, text, contract, chosen, ns))
        rows = [self._create(*plan) for plan in plans]
        return [{**r, "warnings": w} if w else r for r, w in zip(rows, warnings, strict=True)]

    def _unserved(self, contract: CompiledContract) -> list[str]:
        """What the contract needs that this machine lacks, as warnings: capabilities no
        adapter serves (HZH104) and skills no skill directory holds (HZC052)."""
        from heinzel.service.doctor import adapter_warnings, skill_warnings, unserved

        found = adapter_warnings(contract, unserved(self))
        return found + skill_warnings(contract, self.settings.heinzel.skills)

    def _unserved_stored(self, heinzel_id: str, version: int) -> list[str]:
        from heinzel.service.doctor import stored_warnings

        return stored_warnings(self, heinzel_id, version)

    def _create(
        self, path: Path, text: str, contract: CompiledContract, name: str, namespace: str
    ) -> dict[str, Any]:
        heinzel_id = new_id(self.clock)
        facts = store_version(self.home, heinzel_id, 1, text, contract)
        # the folder of its turns' bodies, made now: a first wake creates no folder (each
        # new one costs its parent's fsync; the home's source cache is made with the index)
        ensure_private_dir(self.home.turns_dir(heinzel_id))
        with self.open_spine(heinzel_id) as spine:
            spine.append(
                "heinzel.created",
                {
                    "name": name,
                    "namespace": namespace,
                    "owner": self.owner,
                    "origin": str(path.parent),
                },
                short_text=("origin",),  # a deep folder's path is longer than a plain field
            )
            spine.append(
                "contract.proposed", {"version": 1, "fingerprint": facts.fingerprint, "by": "user"}
            )
        return self.queries.row(heinzel_id)

    # -- lifecycle ---------------------------------------------------------------

    def lifecycle(self, ref: str, verb: str) -> dict[str, Any]:
        from heinzel.store.lifecycle import Lifecycle

        row = self.resolve(ref, write=True)
        heinzel_id = str(row["id"])
        if heinzel_id in self._held:  # this process's running turn holds the spine
            Lifecycle(str(row["state"])).fire(verb, row["name"])
            self.append(heinzel_id, LIFECYCLE_EVENTS[verb], {})
            return self.queries.row(heinzel_id)
        with self.open_spine(heinzel_id) as spine:
            # the state as of the lock: another process's pause, written between the row
            # read above and the lock, makes this one "already paused", never a second line
            self.index.catch_up(heinzel_id, self.home.spine_path(heinzel_id))
            state = self.queries.row(heinzel_id)["state"]
            Lifecycle(str(state)).fire(verb, row["name"])
            spine.append(LIFECYCLE_EVENTS[verb], {})
        return self.queries.row(heinzel_id)

    def rename(self, ref: str, new_name: str) -> dict[str, Any]:
        """Rename one; to the name it has already, nothing changes (``unchanged``)."""
        row = self.resolve(ref, write=True)
        chosen = validate_name(new_name)
        if chosen == row["name"]:
            return {**row, "unchanged": True}
        if self.queries.find_by_name(row["namespace"], chosen):
            raise HeinzelError(
                "HZH072",
                f"the name {chosen!r} is taken in namespace {row['namespace']}",
                "choose another name",
            )
        self.append(row["id"], "heinzel.renamed", {"name": chosen})
        return {**self.queries.row(row["id"]), "unchanged": False}

    # -- versions and amendments -------------------------------------------------

    def approve(self, item: str) -> dict[str, Any]:
        """Approve v1 of a proposed one, its pending amendment, or a local draft."""
        from heinzel.service.drafts import approve_draft
        from heinzel.store.lifecycle import Lifecycle

        if "@" in item:
            by_key = approve_draft(self, item)
            if by_key is not None:
                return by_key
        row = self.resolve(item, write=True)
        pending = json.loads(row["pending"]) if row["pending"] else None
        if row["state"] == "proposed" or (pending and pending["kind"] == "approval"):
            Lifecycle("proposed").fire("approve", row["name"])
            if row["proposed_version"] is None:
                raise HeinzelError(
                    "HZH294",
                    f"{row['name']} has no contract to approve: its creation never finished",
                    f"`hz heinzel retire {row['name']}`, then `hz heinzel new` again",
                )
            version = int(row["proposed_version"])
            from heinzel.service.outputs import check_stored_outputs, remember_outputs
            from heinzel.session.graph import refuse_cycle

            refuse_cycle(self, row["id"], version)

            warnings = check_stored_outputs(self.home, row["id"], version, self.protected)
            warnings += self._unserved_stored(row["id"], version)
            facts = load_facts(self.home, row["id"], version, self._fingerprint(row, version))
            remember_outputs(self.home, row["id"], version)
            self.append(
                row["id"],
                "contract.approved",
                {"version": version, "fingerprint": facts.fingerprint, "approver": self.owner},
            )
            done = {"approved": f"{row['name']} v{version}", **self.queries.row(row["id"])}
            return {**done, "warnings": warnings} if warnings else done
        amendment = self.queries.pending_amendment(row["id"])
        if amendment:
            from heinzel.service.outputs import check_stored_outputs, remember_outputs

            version = int(amendment["version"])
            from heinzel.session.graph import refuse_cycle

            refuse_cycle(self, row["id"], version)
            warnings = check_stored_outputs(self.home, row["id"], version, self.protected)
            warnings += self._unserved_stored(row["id"], version)
            remember_outputs(self.home, row["id"], version)
            self.append(
                row["id"],
                "contract.amended",
                {
                    "version": amendment["version"],
                    "fingerprint": amendment["fingerprint"],
                    "amendment": amendment["id"],
                    "approver": self.owner,
                },
            )
            return {
                "approved": f"{row['name']} v{amendment['version']}",
                **self.queries.row(row["id"]),
                **({"warnings": warnings} if warnings else {}),
            }
        if pending and pending["kind"] == "draft":
            approved = approve_draft(self, str(row["id"]))
            if approved is not None:
                return approved
        what = (
            f"{row['name']} has nothing to approve"
            if row["contract_version"] is None
            else f"{row['name']} v{row['contract_version']} is already approved; nothing is pending"
        )
        raise HeinzelError(
            "HZH073",
            what,
            f"nothing to do; `hz heinzel show {row['name']}` shows its state",
        )

    def _fingerprint(self, row: Mapping[str, Any], version: int) -> str:
        path = self.home.contract_json_path(row["id"], version)
        return str(json.loads(path.read_text(encoding="utf-8"))["facts"]["fingerprint"])

    def propose_amendment(
        self, ref: str, text: str, *, by: str, source: str, reason: str = ""
    ) -> dict[str, Any]:
        """File an amendment (`heinzel.session.amendments.propose_amendment`)."""
        from heinzel.session.amendments import propose_amendment

        return propose_amendment(self, ref, text, by=by, source=source, reason=reason)

    def amend(self, ref: str, file: str) -> dict[str, Any]:
        from heinzel.contract.compiler import read_contract_text

        text = read_contract_text(Path(file), file)
        row = self.resolve(ref, write=True)
        if row["contract_version"] is None and row["proposed_version"] is not None:
            from heinzel.contract import compile_contract
            from heinzel.service.outputs import check_outputs

            origin = Path(file).resolve().parent
            check_outputs(compile_contract(text, source=file), origin, self.protected)
        return self.propose_amendment(ref, text, by="user", source=file)

    def decline(self, ref: str) -> dict[str, Any]:
        row = self.resolve(ref, write=True)
        amendment = self.queries.pending_amendment(row["id"])
        if not amendment:
            raise HeinzelError(
                "HZH076",
                f"{row['name']} has no pending amendment",
                f"`hz heinzel show {row['name']}` shows its pending item",
            )
        self.append(row["id"], "amendment.declined", {"amendment": amendment["id"]})
        return self.queries.amendment(amendment["id"])

    # -- lessons -----------------------------------------------------------------

    def lessons(self, ref: str) -> list[dict[str, Any]]:
        return self.queries.lessons(self.resolve(ref)["id"])

    def dismiss(self, ref: str, lesson: str) -> list[dict[str, Any]]:
        row = self.resolve(ref, write=True)
        found = self.queries.lesson(row["id"], row["name"], lesson)
        if found["dismissed"]:
            raise HeinzelError(
                "HZH077",
                f"lesson {lesson} is already dismissed",
                f"`hz heinzel lessons {row['name']}` lists them",
            )
        self.append(row["id"], "lesson.dismissed", {"lesson": found["seq"]})
        return self.lessons(ref)

    # -- what later turns see -------------------------------------------------------

    def forget(self, ref: str, target: str, instead: str | None = None) -> dict[str, Any]:
        """Hide a turn (its lines and body) or one spine line from what later turns see:
        a ``context.edit`` (ADR 0049 statement 18), ``replacement`` null, or ``instead``
        as a short text the model sees in its place. The record never changes."""
        row = self.resolve(ref, write=True)
        heinzel_id, name = str(row["id"]), str(row["name"])
        edit = self._edit_target(heinzel_id, name, target)
        if instead is not None and (not instead.strip() or "\n" in instead or len(instead) > 200):
            raise HeinzelError(
                "HZH401",
                "--instead must be one line of at most 200 characters",
                "leave --instead out to hide the line, or say in one short line what the "
                "model should see in its place",
            )
        if self._edited(heinzel_id, edit, instead):
            raise HeinzelError(
                "HZH402",
                f"{target} is already forgotten" + (" that way" if instead else ""),
                f"`hz heinzel show {name}` shows what it knows; nothing to do",
            )
        data = {"target": edit, "replacement": instead.strip() if instead else None}
        said = {"name": name, "target": edit, "replacement": data["replacement"]}
        from heinzel.session.open_turns import lock_held

        if not lock_held(self.home.session_dir(heinzel_id) / "lock"):
            try:
                written = self.append(heinzel_id, "context.edit", data, short_text=("replacement",))
            except HzError as error:
                if error.code != "HZL010":
                    raise
            else:
                return {**said, "seq": written.seq}
        # a turn runs in another process (it holds the spine's lock): the edit waits in the
        # inbox and is written before the next turn starts, as forgetting promises
        from heinzel.store.inbox import EDIT_PREFIX, Inbox

        rid = EDIT_PREFIX + new_id(self.clock)[3:]
        Inbox(self.home, heinzel_id).write(rid, "edit", json.dumps(data), at=self.clock())
        return {
            **said,
            "queued": "a turn runs now and keeps what it read; the edit is written before "
            "the next turn starts",
        }

    def _edit_target(self, heinzel_id: str, name: str, target: str) -> str:
        """``turn:ID`` for a turn of this one, ``seq:N`` for one of its spine's lines;
        HZH400 for anything else."""
        db = self.read_db
        if target.isdigit():
            mark = db.execute(
                "SELECT seq FROM _watermarks WHERE source = ?", [heinzel_id]
            ).fetchone()
            if 0 < int(target) <= (int(mark[0]) if mark else 0):
                return f"seq:{int(target)}"
        elif db.execute(
            "SELECT 1 FROM turns WHERE heinzel = ? AND id = ?", [heinzel_id, target]
        ).fetchone():
            return f"turn:{target}"
        raise HeinzelError(
            "HZH400",
            f"{name} has no turn or spine line {target!r}",
            f"name a turn id or a seq: `hz heinzel report {name}` lists its turns, each "
            "with the seqs of its lines (`--json`: `seqs`)",
        )

    def _edited(self, heinzel_id: str, target: str, instead: str | None) -> bool:
        """Whether the last ``context.edit`` of ``target`` already says ``instead``."""
        from ledger.spine import read_events

        path = self.home.spine_path(heinzel_id)
        last: Any = ()
        for (offset,) in self.read_db.execute(
            "SELECT line_offset FROM marks WHERE heinzel = ? AND kind = 'context.edit' "
            "ORDER BY seq",
            [heinzel_id],
        ):
            event = next(read_events(path, from_offset=int(offset)), None)
            if event is not None and event.data.get("target") == target:
                last = event.data.get("replacement")
        wanted = instead.strip() if instead else None
        return bool(last != () and last == wanted)

    # -- listing -----------------------------------------------------------------

    def listing(
        self,
        *,
        artifact: str | tuple[str, ...] | None = None,
        state: str | None = None,
        contract: str | None = None,
    ) -> list[dict[str, Any]]:
        rows = self.queries.listing(artifact=artifact, state=state, contract=contract)
        each = self._today_each()
        for row in rows:
            row["cost_today"] = each.get(str(row["id"]), 0.0)
        notices(self.read_db, rows, today=self._today(), now=self._now())
        self._asked_in_words((str(row["id"]), str(row["name"]), row["notices"]) for row in rows)
        return rows

    def listed(
        self,
        *,
        artifact: str | tuple[str, ...] | None = None,
        state: str | None = None,
        contract: str | None = None,
    ) -> Listing:
        """`listing` as tuples (`heinzel.index.listing.Listing`), its notices set: what
        ``hz heinzel list`` prints from, without a dict per row."""
        listed = self.queries.listed(artifact=artifact, state=state, contract=contract)
        listed.spent(self._today_each())
        names = listed.names()
        every = not artifact and not state and not contract  # as `Queries.listed` filters
        listed.notices = notices_by_id(
            self.read_db, names, today=self._today(), every=every, now=self._now()
        )
        self._asked_in_words(
            (heinzel_id, names[heinzel_id], said)
            for heinzel_id, said in listed.notices.items()
            if said
        )
        return listed

    def _asked_in_words(self, rows: Iterable[tuple[str, str, list[dict[str, str]]]]) -> None:
        """A question's notice in its words (id, name, notices of each row): only the rows
        that have one read a spine."""
        for heinzel_id, name, said in rows:
            if any(notice["reason"] == "question" for notice in said):
                _asked(said, waiting_questions(self, heinzel_id, name))

    def show(self, ref: str) -> dict[str, Any]:
        """The index's view of one, and whether its approved contract file still is the
        approved one (``contract_problem``: the code and message a turn would refuse with); a
        proposed version also with what approving it grants and the contract file to read
        (`heinzel.service.outputs.grant`)."""
        row = self.resolve(ref)
        shown = self.queries.show(row["id"])
        notices(self.read_db, [shown], today=self._today(), now=self._now())
        ended = float(shown.get("cost_today") or 0.0)
        shown.update(self._spend_today(row["id"]))
        shown["contract_problem"] = None
        if shown.get("contract_version") is not None:
            try:
                approved_text(
                    self.home, shown["id"], int(shown["contract_version"]), shown["fingerprint"]
                )
            except HzError as error:
                shown["contract_problem"] = f"{error.code}: {error.message}"
        from heinzel.index.versions import newer, newer_known

        later = newer(self.read_db, [row["id"]]).get(row["id"])
        shown["newer"] = None if later is None else newer_known(later)
        shown["questions"] = waiting_questions(self, row["id"], str(row["name"]))
        _asked(shown["notices"], shown["questions"])
        for draft in shown["drafts"]:
            draft["said"] = draft_waits(draft.get("asset") or draft.get("output"))
        shown["failure"] = self._last_failure(row["id"], shown["turns"])
        _add_open(shown, round(shown["cost_today"] - ended, 9))
        _add_trials(shown["cost_month"], self.read_db, str(row["id"]), self._today()[:7])
        from heinzel.session.summaries import latest_summary

        shown["summary"] = latest_summary(
            self.read_db, self.home.spine_path(row["id"]), str(row["id"])
        )
        proposed = row.get("proposed_version")
        if row["contract_version"] is None and proposed is not None:  # paused while proposed too
            path = self.home.contract_text_path(row["id"], int(proposed))
            from heinzel.service.outputs import grant

            shown["grant"] = grant(path)
        return shown

    def _last_failure(self, heinzel_id: str, turns: list[dict[str, Any]]) -> Any:
        """Why the last turn failed or was abandoned (code, message, hint, from its body
        while it exists: `heinzel.turns.failure`), None when it did not."""
        from heinzel.session.causes import cause_of

        ended = [t for t in turns if t.get("ended_at")]
        if not ended or ended[-1].get("state") not in ("finished",):
            return None
        last = ended[-1]
        if last.get("disposition") not in ("failed", "abandoned"):
            return None
        found = cause_of(self.home.session_dir(heinzel_id), str(last["id"]))
        return {"turn": last["id"], **found} if found else None

    def in_words(self, done: dict[str, Any]) -> dict[str, Any]:
        """A verb's answer (``name`` set) with what its turn did and said (``reply``,
        `heinzel.session.replies`, once that turn ended) and the questions now waiting on
        the user in their words (``questions``, when there are any): the wake, chat,
        answer, retry and resume lines show what the Heinzelmännchen did, said and asked,
        not only how its turn ended."""
        if not done.get("name"):
            return done
        from heinzel.session.replies import turn_reply

        row = self.resolve(str(done["name"]))
        if done.get("turn") and done.get("state") not in (None, "running", "waiting"):
            reply = turn_reply(self, str(row["id"]), str(done["turn"]))
            if reply is not None:
                done["reply"] = reply
        waiting = waiting_questions(self, str(row["id"]), str(row["name"]))
        if waiting:
            done["questions"] = waiting
        return done

    def _today_each(self, only: str | None = None) -> dict[str, float]:
        """Today's spend of each Heinzelmännchen (`heinzel.session.spend.today_each`: ended
        turns, usage, and what open turns spent and hold reserved): the one figure of
        "today" on every surface."""
        from heinzel.session.spend import today_each

        return today_each(self.read_db, self.home, self._today(), only=only)

    def _spend_today(self, heinzel_id: str) -> dict[str, Any]:
        """Today's real spend: this one's (``cost_today``) and the home's against the daily
        cap (``spend_today``: the sum over the home, as the cap reads it)."""
        each = self._today_each()
        cap = self.settings.heinzel.max_usd_per_day
        return {
            "cost_today": each.get(heinzel_id, 0.0),
            "spend_today": {"usd": round(sum(each.values()), 9), "cap": cap},
        }

    def drafts(self) -> list[dict[str, Any]]:
        """The pending drafts, each with its Heinzelmännchen's notices."""
        rows = self.queries.drafts()
        notices(self.read_db, rows, today=self._today(), id_field="heinzel", now=self._now())
        self._asked_in_words((str(r["heinzel"]), str(r["name"]), r["notices"]) for r in rows)
        for row in rows:
            row["said"] = draft_waits(row.get("asset") or row.get("output"))
        return rows

    def questions(self) -> list[dict[str, Any]]:
        """Every question waiting on the user, of every Heinzelmännchen, in its words."""
        from heinzel.session.questions import every_waiting_question

        return every_waiting_question(self)

    def _today(self) -> str:
        return format_ts(self.clock())[:10]

    def _now(self) -> str:
        return format_ts(self.clock())

    # -- the record --------------------------------------------------------------

    def verify(self, ref: str | None = None) -> list[dict[str, Any]]:
        from ledger.spine import verify

        ids = [self.resolve(ref)["id"]] if ref else list(self.home.session_ids())
        reports = []
        for heinzel_id in ids:
            path = self.home.spine_path(heinzel_id)
            report = verify(path)
            if any(b.reason != "torn-tail" for b in report.uncontained()):
                report = self._contain(heinzel_id, report)
            reports.append(
                {
                    "id": heinzel_id,
                    "file": str(path),
                    "ok": report.ok,
                    "lines": report.count,
                    "breaks": [
                        {
                            "seq": b.seq,
                            "reason": b.reason,
                            "detail": b.detail,
                            "contained": b.contained,
                        }
                        for b in report.breaks
                    ],
                }
            )
        return reports

    def _contain(self, heinzel_id: str, found: VerifyReport) -> VerifyReport:
        """Record the breaks ``found`` that no ``spine.break_contained`` records yet, as the
        spine's writer does (`Spine.verify`), when its lock is free at once; else (a turn
        holds it, a read-only disk) ``found`` as it is: the next verify records them."""
        try:
            with self.open_spine(heinzel_id, lock_timeout=0) as spine:
                return spine.verify()
        except HzError:
            return found

    def reindex(self) -> dict[str, Any]:
        sources = {i: self.home.spine_path(i) for i in self.home.session_ids()}
        self.index.rebuild(sources)
        return {"sessions": len(sources), "index": str(self.home.index_path)}

    def prune(self) -> dict[str, Any]:
        """Every expired body, inbox request and cache entry (`heinzel.session.retention`)."""
        from heinzel.session.retention import prune_all

        return prune_all(self)

    def doctor(self, *, online: bool = False) -> dict[str, Any]:
        from heinzel.service.doctor import diagnose  # the runners load only here

        return diagnose(self, online=online)


def _asked(said: list[dict[str, str]], asked: list[dict[str, Any]]) -> None:
    """The question notice among ``said`` in the words of the questions ``asked`` (as
    every surface words it, `heinzel.strings.waits`), with the command that answers the
    oldest."""
    for notice in said:
        if notice["reason"] == "question" and asked:
            notice["message"] = asks_notice([q["text"] for q in asked])
            notice["next"] = asked[0]["answer"]


def _add_open(shown: dict[str, Any], usd: float) -> None:
    """What this one's open turn spent so far (``usd``, today's figure less its ended
    turns'): on the open turn's line and in this month's cost, so show's turns, today and
    this month agree while a turn runs."""
    if usd <= 0:
        return
    open_turns = [t for t in shown["turns"] if not t.get("ended_at")]
    if not open_turns:
        return
    turn = open_turns[-1]
    turn["cost_usd"] = round(turn["cost_usd"] + usd, 9)
    cost = shown["cost_month"]
    cause = str(turn["cause"])
    cost["by_cause"][cause] = round(cost["by_cause"].get(cause, 0.0) + usd, 9)
    cost["total"] = round(cost["total"] + usd, 9)


def _add_trials(cost: dict[str, Any], db: sqlite3.Connection, heinzel: str, month: str) -> None:
    """The month's `hz heinzel try` spend in ``cost_month`` as the cause ``trial``, from the
    index (`heinzel.session.spend.trial_spend`)."""
    from heinzel.session.spend import trial_spend

    usd, tokens, cached = trial_spend(db, heinzel, month)
    if not usd and not tokens:
        return
    cost["by_cause"]["trial"] = round(usd, 6)
    cost["total"] = round(cost["total"] + usd, 6)
    cost["tokens"] += tokens
    cost["tokens_cached"] += cached
    cost["tokens_by_cause"]["trial"] = {"tokens": tokens, "tokens_cached": cached}
