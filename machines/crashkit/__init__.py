"""The crash-testing kit: crash points (`crash`), the crash matrix (`matrix`, `python -m
machines.crashkit.matrix`), its runs and rig, scenarios, golden spines and test doubles
(`testing`). It imports the core, telemetry, the stores and the base, never the door.

The crash points are the one module of the kit that production code imports (a store, hz
and the short API install them), so they import only the base and the stores' protocols.
"""

__all__: list[str] = []
