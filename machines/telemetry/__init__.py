"""What a host sees of its turns: `machines`' log lines (`logs`), the hooks (`observe`) and
OpenTelemetry spans (`otel`, the `otel` extra). It imports the base only (the core's types
under TYPE_CHECKING); `StepId`, `Observer` and `Tracing` import from `machines`.
"""

__all__: list[str] = []
