"""The crash-testing kit: crash points, the crash matrix, golden spines."""

__all__: list[str] = []
