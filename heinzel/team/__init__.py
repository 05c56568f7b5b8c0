"""Team Heinzelmännchen across machines through git (docs/team.md): receipts on the
orphan branch ``hz/state``, leases as ``refs/hz/lease/<team id>``, owner then delegate."""

from heinzel.team.members import Member
from heinzel.team.team import Team

__all__ = ["Member", "Team"]
