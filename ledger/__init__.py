"""ledger: the durable record, knowing nothing of agents.

The spine (append, chain, fsync, lock, verify, torn-tail containment,
migrate-on-read), turn bodies with expiry, atomic private files and the
derived-index base.
"""

from ledger.bodies import BODIES_DIR, Bodies
from ledger.errors import HzError, LedgerError
from ledger.event import Clock, Event, canonical, format_ts, make_event, parse_ts, sha256_hex
from ledger.files import ensure_private_dir, open_append, read_bytes, write_atomic
from ledger.index import Index, Projection, Watermark
from ledger.reading import Upgrades, read_events
from ledger.spine import BREAK_CONTAINED, LOCK_NAME, SPINE_NAME, TORN_TAIL, Spine
from ledger.verify import Break, BreakReason, VerifyReport, verify

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
