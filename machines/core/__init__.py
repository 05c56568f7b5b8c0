"""The engine's core: the turn machine and what runs a turn."""

__all__: list[str] = []
