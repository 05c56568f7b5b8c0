"""The derived SQLite index of a home: its schema, the projections that fold spine events
into rows (`projection` for the Heinzelmännchen, `due` for what the tick asks), and the
queries that read them. Rebuildable from the spines; never authoritative."""

__all__: list[str] = []
