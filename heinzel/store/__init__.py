"""The files of a home: its layout (`home`), contract versions (`contracts`), the lifecycle
rules (`lifecycle`), the inbox of requests (`inbox`) and the source cache (`sources`)."""

__all__: list[str] = []
