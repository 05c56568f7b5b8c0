"""The strings a surface shows or a lesson keeps: text, USD, scrubbed."""

__all__: list[str] = []
