"""The stores: where a turn's record lives. The `Journal` and `Body` protocols with the
in-memory ones (`journal`), the spine (`spine_journal`), Postgres (`pg_journal`), the durable
body (`disk_body`) and migration on read (`upgrades`).

They import the base and the crash points (`machines.crashkit.crash`), never the core, the
rest of the kit or the door (docs/architecture.md).
"""

__all__: list[str] = []
