"""ledger: the durable record, knowing nothing of agents.

The spine (append, chain, fsync, lock, verify, torn-tail containment,
migrate-on-read), turn bodies with expiry, atomic private files and the
derived-index base.
"""

from typing import TYPE_CHECKING

from ledger.lazy import lazy_exports

# A submodule of the same name as the function: bound now, so the function wins.
from ledger.verify import Break, BreakReason, VerifyReport, verify

if TYPE_CHECKING:
    from ledger.bodies import BODIES_DIR, Bodies
    from ledger.errors import HzError, LedgerError
    from ledger.event import Clock, Event, canonical, format_ts, make_event, parse_ts, sha256_hex
    from ledger.files import ensure_private_dir, open_append, read_bytes, write_atomic
    from ledger.index import Index, Projection, Watermark
    from ledger.reading import Upgrades, read_events
    from ledger.spine import BREAK_CONTAINED, LOCK_NAME, SPINE_NAME, TORN_TAIL, Spine

__all__ = [
    "BODIES_DIR",
    "BREAK_CONTAINED",
    "LOCK_NAME",
    "SPINE_NAME",
    "TORN_TAIL",
    "Bodies",
    "Break",
    "BreakReason",
    "Clock",
    "Event",
    "HzError",
    "Index",
    "LedgerError",
    "Projection",
    "Spine",
    "Upgrades",
    "VerifyReport",
    "Watermark",
    "canonical",
    "ensure_private_dir",
    "format_ts",
    "make_event",
    "open_append",
    "parse_ts",
    "read_bytes",
    "read_events",
    "sha256_hex",
    "verify",
    "write_atomic",
]

_WHERE: dict[str, str] = {
    "BODIES_DIR": "ledger.bodies",
    "Bodies": "ledger.bodies",
    "HzError": "ledger.errors",
    "LedgerError": "ledger.errors",
    "Clock": "ledger.event",
    "Event": "ledger.event",
    "canonical": "ledger.event",
    "format_ts": "ledger.event",
    "make_event": "ledger.event",
    "parse_ts": "ledger.event",
    "sha256_hex": "ledger.event",
    "ensure_private_dir": "ledger.files",
    "open_append": "ledger.files",
    "read_bytes": "ledger.files",
    "write_atomic": "ledger.files",
    "Index": "ledger.index",
    "Projection": "ledger.index",
    "Watermark": "ledger.index",
    "Upgrades": "ledger.reading",
    "read_events": "ledger.reading",
    "BREAK_CONTAINED": "ledger.spine",
    "LOCK_NAME": "ledger.spine",
    "SPINE_NAME": "ledger.spine",
    "TORN_TAIL": "ledger.spine",
    "Spine": "ledger.spine",
}

__getattr__ = lazy_exports(__name__, _WHERE, globals())
