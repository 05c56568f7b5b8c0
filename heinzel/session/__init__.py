"""One home's sessions: the spines written under their locks, the index kept current,
the amendment rules shared by the service and the turn host, and open turns seen from
outside (another process's lock, abandoning)."""

from heinzel.session.sessions import Sessions

__all__ = ["Sessions"]
