"""heinzel: the product. Durable agents with one contract and one session each."""

__all__: list[str] = []
