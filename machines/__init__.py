"""machines: the explicit state machines of a turn, knowing nothing of Heinzelmännchen."""

__all__: list[str] = []
