"""What a host sees of its turns: logs, hooks, OpenTelemetry spans."""

__all__: list[str] = []
