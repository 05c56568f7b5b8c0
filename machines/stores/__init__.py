"""The stores: where a turn's record lives (protocols, spine, Postgres)."""

__all__: list[str] = []
