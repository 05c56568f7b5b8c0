"""ledger: the durable record, knowing nothing of agents.

The spine (append, chain, fsync, lock, verify, torn-tail containment,
migrate-on-read), turn bodies with expiry, atomic private files and the
derived-index base.
"""

from ledger.errors import HzError, LedgerError

__all__ = ["HzError", "LedgerError"]
