"""The engine's core: what runs a turn (the table and the turn machine, the fold, steps and
their context, effects, tools, values, the runner, resume, session, waits, `run_sync`).

It imports telemetry, the stores' protocols (`machines.stores.journal`) and the base; never
a concrete store, the crash-testing kit or the door (docs/architecture.md). Hosts import
its public names from `machines`.
"""

__all__: list[str] = []
