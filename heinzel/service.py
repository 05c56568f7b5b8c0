"""The Python API over one ``HZ_HOME``: what every command of ``hz`` calls.

A `Service` creates Heinzelmännchen from contract files, approves versions and
amendments, pauses and retires, and answers list/show from the index. Every
change is a spine event appended under the session's lock; the index is updated
from the same event once it is durable.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from heinzel.clock import Clock, clock_from_env
from heinzel.config import Settings, default_site_path, default_user_path, load_settings
from heinzel.contract import CompiledContract, check_amendment, compile_contract, widenings
from heinzel.contract.compiler import read_contract_text
from heinzel.contracts_store import load_facts, store_version
from heinzel.errors import HeinzelError
from heinzel.home import Home
from heinzel.ids import new_id, validate_name
from heinzel.inbox import Inbox
from heinzel.lifecycle import Lifecycle
from heinzel.logs import bind_heinzel, configure_logging, get_logger
from heinzel.projections import HeinzelProjection
from heinzel.queries import Queries
from heinzel.tick_projection import TickProjection
from heinzel.turns.api import TurnOperations
from ledger.bodies import Bodies
from ledger.event import Event
from ledger.files import ensure_private_dir
from ledger.index import Index
from ledger.spine import Spine, verify

__all__ = ["Service"]

LIFECYCLE_EVENTS = {
    "pause": "heinzel.paused",
    "unpause": "heinzel.unpaused",
    "retire": "heinzel.retired",
    "unretire": "heinzel.unretired",
}


class Service(TurnOperations):
    """hz's operations over one home, with one clock and one configuration (its turns:
    `heinzel.turns.api.TurnOperations`)."""

    def __init__(self, home: Home, clock: Clock, settings: Settings, *, owner: str) -> None:
        self.home = home
        self.clock = clock
        self.settings = settings
        self.owner = owner
        self._index: Index | None = None
        self._held: dict[str, Spine] = {}

    @classmethod
    def from_environment(cls, home_option: str | None, env: Mapping[str, str]) -> Service:
        """The service a command runs with: ``--home``/``HZ_HOME``, ``HZ_NOW``, the config."""
        loaded = load_settings(
            env=env, cwd=Path.cwd(), site=default_site_path(), user=default_user_path()
        )
        home = (
            Home(Path(home_option).expanduser().resolve())
            if home_option
            else Home(loaded.settings.heinzel.home)
        )
        owner = env.get("HZ_USER") or env.get("USER") or "me"
        clock = clock_from_env(env)
        configure_logging(
            "cli", stream=sys.stderr, clock=clock, level=env.get("HZ_LOG_LEVEL", "warning")
        )
        return cls(home, clock, loaded.settings, owner=owner)

    # -- plumbing ----------------------------------------------------------------

    @property
    def index(self) -> Index:
        if self._index is None:
            ensure_private_dir(self.home.heinzel_dir)
            self._index = Index(
                self.home.index_path, [HeinzelProjection(self.home), TickProjection(self.home)]
            )
        return self._index

    @property
    def queries(self) -> Queries:
        return Queries(self.index.db, self.clock)

    def open_spine(
        self, heinzel_id: str, *, on_durable: Sequence[Callable[[Event], None]] = ()
    ) -> Spine:
        """The session's spine for writing (its lock held), the index kept current;
        ``on_durable`` hooks run after the index's (a crash hook last of all)."""
        ensure_private_dir(self.home.session_dir(heinzel_id))
        self.index.catch_up(heinzel_id, self.home.spine_path(heinzel_id))
        spine = Spine.open(
            self.home.session_dir(heinzel_id),
            clock=self.clock,
            lock_timeout=self.settings.heinzel.lock_timeout.total_seconds(),
            on_durable=[
                lambda event: self.index.apply(heinzel_id, event),
                _log_event(heinzel_id),
                *on_durable,
            ],
        )
        self.index.catch_up(heinzel_id, spine.path)
        return spine

    @contextmanager
    def hold_spine(
        self, heinzel_id: str, *, on_durable: Sequence[Callable[[Event], None]] = ()
    ) -> Iterator[Spine]:
        """The spine opened for a turn: while held, `append` writes through it."""
        with self.open_spine(heinzel_id, on_durable=on_durable) as spine:
            self._held[heinzel_id] = spine
            try:
                yield spine
            finally:
                del self._held[heinzel_id]

    def append(
        self,
        heinzel_id: str,
        kind: str,
        data: Mapping[str, Any],
        *,
        short_text: Sequence[str] = (),
        key: str | None = None,
    ) -> Event:
        held = self._held.get(heinzel_id)
        if held is not None:
            return held.append(kind, data, short_text=short_text, key=key)
        with self.open_spine(heinzel_id) as spine:
            return spine.append(kind, data, short_text=short_text, key=key)

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
        compiled: list[tuple[Path, str, CompiledContract]] = []
        for raw in paths:
            path = Path(raw)
            text = read_contract_text(path, str(raw))
            compiled.append((path.resolve(), text, compile_contract(text, source=str(raw))))
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
        return [self._create(*plan) for plan in plans]

    def _create(
        self, path: Path, text: str, contract: CompiledContract, name: str, namespace: str
    ) -> dict[str, Any]:
        heinzel_id = new_id(self.clock)
        facts = store_version(self.home, heinzel_id, 1, text, contract)
        with self.open_spine(heinzel_id) as spine:
            spine.append(
                "heinzel.created",
                {
                    "name": name,
                    "namespace": namespace,
                    "owner": self.owner,
                    "origin": str(path.parent),
                },
            )
            spine.append(
                "contract.proposed", {"version": 1, "fingerprint": facts.fingerprint, "by": "user"}
            )
        return self.queries.row(heinzel_id)

    # -- lifecycle ---------------------------------------------------------------

    def resolve(self, ref: str) -> dict[str, Any]:
        return self.queries.resolve(ref)

    def lifecycle(self, ref: str, verb: str) -> dict[str, Any]:
        row = self.resolve(ref)
        Lifecycle(str(row["state"])).fire(verb, row["name"])
        self.append(row["id"], LIFECYCLE_EVENTS[verb], {})
        return self.queries.row(row["id"])

    def rename(self, ref: str, new_name: str) -> dict[str, Any]:
        row = self.resolve(ref)
        chosen = validate_name(new_name)
        if self.queries.find_by_name(row["namespace"], chosen):
            raise HeinzelError(
                "HZH072",
                f"the name {chosen!r} is taken in namespace {row['namespace']}",
                "choose another name",
            )
        self.append(row["id"], "heinzel.renamed", {"name": chosen})
        return self.queries.row(row["id"])

    # -- versions and amendments -------------------------------------------------

    def approve(self, item: str) -> dict[str, Any]:
        """Approve v1 of a proposed one, its pending amendment, or a local draft."""
        from heinzel.verbs import approve_draft

        if "@" in item:
            by_key = approve_draft(self, item)
            if by_key is not None:
                return by_key
        row = self.resolve(item)
        pending = json.loads(row["pending"]) if row["pending"] else None
        if row["state"] == "proposed" or (pending and pending["kind"] == "approval"):
            Lifecycle("proposed").fire("approve", row["name"])
            version = int(row["proposed_version"])
            facts = load_facts(self.home, row["id"], version, self._fingerprint(row, version))
            self.append(
                row["id"],
                "contract.approved",
                {"version": version, "fingerprint": facts.fingerprint, "approver": self.owner},
            )
            return {"approved": f"{row['name']} v{version}", **self.queries.row(row["id"])}
        amendment = self.queries.pending_amendment(row["id"])
        if amendment:
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
            }
        if pending and pending["kind"] == "draft":
            approved = approve_draft(self, str(row["id"]))
            if approved is not None:
                return approved
        raise HeinzelError(
            "HZH073",
            f"{row['name']} has nothing to approve",
            "`hz heinzel show NAME` shows its pending item",
        )

    def _fingerprint(self, row: Mapping[str, Any], version: int) -> str:
        path = self.home.contract_json_path(row["id"], version)
        return str(json.loads(path.read_text(encoding="utf-8"))["facts"]["fingerprint"])

    def propose_amendment(
        self, ref: str, text: str, *, by: str, source: str, reason: str = ""
    ) -> dict[str, Any]:
        """File an amendment: the user's is accepted; the Heinzelmännchen's may not widen."""
        row = self.resolve(ref)
        if row["contract_version"] is None:
            raise HeinzelError(
                "HZH074",
                f"{row['name']} has no approved version to amend",
                "approve version 1 first: `hz approve NAME`",
            )
        if self.queries.pending_amendment(row["id"]):
            raise HeinzelError(
                "HZH075",
                f"{row['name']} already has a pending amendment",
                "approve it (`hz approve NAME`) or decline it first",
            )
        current = int(row["contract_version"])
        old = compile_contract(
            self.home.contract_text_path(row["id"], current).read_text(encoding="utf-8"),
            source=f"v{current}",
        )
        new = compile_contract(text, source=source)
        check_amendment(
            old, new, proposed_by="heinzel" if by == "heinzel" else "user", source=source
        )
        if by == "heinzel":
            self._refuse_declined(row, old, new)
        widens = bool(widenings(old, new))
        version = self.queries.next_version(row["id"])
        facts = store_version(self.home, row["id"], version, text, new)
        amendment = "am-" + new_id(self.clock)[3:]
        self.append(
            row["id"],
            "amendment.proposed",
            {
                "amendment": amendment,
                "version": version,
                "fingerprint": facts.fingerprint,
                "by": by,
                "widens": widens,
                "reason": reason[:200],
            },
            short_text=("reason",),
        )
        return self.queries.amendment(amendment)

    def _refuse_declined(
        self, row: Mapping[str, Any], old: CompiledContract, new: CompiledContract
    ) -> None:
        """HZH079: the Heinzelmännchen proposes again what the user declined: the same
        contract, or an input that only a declined amendment had."""
        declined = self.queries.declined_amendments(row["id"])
        offered = set(new.hz.inputs) - set(old.hz.inputs)
        for amendment in declined:
            facts = load_facts(self.home, row["id"], amendment["version"], amendment["fingerprint"])
            again = offered & (set(facts.inputs) - set(old.hz.inputs))
            if facts.fingerprint == new.fingerprint or again:
                what = f"input {sorted(again)[0]}" if again else "this amendment"
                raise HeinzelError(
                    "HZH079",
                    f"{row['name']} proposed {what} again after the user declined it "
                    f"(v{amendment['version']})",
                    "a declined source is never proposed again; the user may still amend",
                )

    def amend(self, ref: str, file: str) -> dict[str, Any]:
        text = read_contract_text(Path(file), file)
        return self.propose_amendment(ref, text, by="user", source=file)

    def decline(self, ref: str) -> dict[str, Any]:
        row = self.resolve(ref)
        amendment = self.queries.pending_amendment(row["id"])
        if not amendment:
            raise HeinzelError(
                "HZH076",
                f"{row['name']} has no pending amendment",
                "`hz heinzel show NAME` shows its pending item",
            )
        self.append(row["id"], "amendment.declined", {"amendment": amendment["id"]})
        return self.queries.amendment(amendment["id"])

    # -- lessons -----------------------------------------------------------------

    def lessons(self, ref: str) -> list[dict[str, Any]]:
        return self.queries.lessons(self.resolve(ref)["id"])

    def dismiss(self, ref: str, lesson: str) -> list[dict[str, Any]]:
        row = self.resolve(ref)
        found = self.queries.lesson(row["id"], lesson)
        if found["dismissed"]:
            raise HeinzelError(
                "HZH077",
                f"lesson {lesson} is already dismissed",
                "`hz heinzel lessons NAME` lists them",
            )
        self.append(row["id"], "lesson.dismissed", {"lesson": found["seq"]})
        return self.lessons(ref)

    # -- listing -----------------------------------------------------------------

    def listing(
        self, *, artifact: str | None = None, state: str | None = None, contract: str | None = None
    ) -> list[dict[str, Any]]:
        return self.queries.listing(artifact=artifact, state=state, contract=contract)

    def show(self, ref: str) -> dict[str, Any]:
        return self.queries.show(self.resolve(ref)["id"])

    def drafts(self) -> list[dict[str, Any]]:
        return self.queries.drafts()

    # -- the record --------------------------------------------------------------

    def verify(self, ref: str | None = None) -> list[dict[str, Any]]:
        ids = [self.resolve(ref)["id"]] if ref else list(self.home.session_ids())
        reports = []
        for heinzel_id in ids:
            path = self.home.spine_path(heinzel_id)
            report = verify(path)
            reports.append(
                {
                    "id": heinzel_id,
                    "file": str(path),
                    "ok": report.ok,
                    "lines": report.count,
                    "breaks": [
                        {"seq": b.seq, "reason": b.reason, "detail": b.detail}
                        for b in report.breaks
                    ],
                }
            )
        return reports

    def reindex(self) -> dict[str, Any]:
        sources = {i: self.home.spine_path(i) for i in self.home.session_ids()}
        self.index.rebuild(sources)
        return {"sessions": len(sources), "index": str(self.home.index_path)}

    def prune(self) -> dict[str, Any]:
        days = self.settings.heinzel.retention_days
        removed: list[str] = []
        for heinzel_id in self.home.session_ids():
            ended = self.queries.ended_turns(heinzel_id)
            removed += Bodies(self.home.session_dir(heinzel_id)).prune(
                now=self.clock(), retention_days=days, ended=ended
            )
            removed += Inbox(self.home, heinzel_id).prune(self.clock(), days)
        return {"retention_days": days, "removed": removed}

    def doctor(self) -> dict[str, Any]:
        from heinzel.doctor import diagnose

        return diagnose(self)


def _log_event(heinzel_id: str) -> Callable[[Event], None]:
    """Log every durable event by kind and seq, bound to the id (never its data)."""
    log = bind_heinzel(get_logger(), heinzel_id)

    def logged(event: Event) -> None:
        bound = log.bind(turn=event.turn) if event.turn else log
        bound.info("appended", kind=event.kind, seq=event.seq)

    return logged
