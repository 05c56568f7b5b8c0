"""The service: the operations a user asks of one home, apart from running turns.

`Service` (create, approve, amend, decline, pause, retire, rename, list, show, drafts,
lessons, verify, reindex, prune, doctor) extends `heinzel.session.Sessions`; `drafts`
approves a local draft in its document; `doctor` says what is configured and missing.
"""

from heinzel.service.service import Service

__all__ = ["Service"]
