"""Examples of embedding `machines` in a host that is not hz."""

__all__: list[str] = []
