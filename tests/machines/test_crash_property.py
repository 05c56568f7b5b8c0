"""In process, for many turn shapes: a crash at any append, then resumes, ends like a clean run."""

from __future__ import annotations

import contextlib

from hypothesis import example, given, settings
from hypothesis import strategies as st

from machines.crashkit.testing import HANDOFF, SEARCH, Harness, SimulatedCrash

SHAPES = st.fixed_dictionaries(
    {
        "model_calls": st.integers(min_value=0, max_value=3),
        "tools": st.lists(st.sampled_from([SEARCH, HANDOFF]), max_size=3),
        "decision": st.sampled_from(["draft", "ask"]),
        "probe": st.sampled_from(["world", "local"]),
    }
)


def clean(shape: dict[str, object]) -> Harness:
    h = Harness.make(**shape)  # type: ignore[arg-type]
    h.start()
    return h


class TestCrashAnywhere:
    @settings(derandomize=True, deadline=None, max_examples=60)
    @example({"model_calls": 1, "tools": [], "decision": "draft", "probe": "world"}, 0, 0)
    @example({"model_calls": 1, "tools": [], "decision": "ask", "probe": "local"}, 0, 1)
    @given(SHAPES, st.integers(min_value=0, max_value=40), st.integers(min_value=0, max_value=2))
    def test_one_crash_then_resumes_matches_the_clean_run(
        self, shape: dict[str, object], point: int, again: int
    ) -> None:
        """Effects once per key, the same spend and disposition, unsafe tools at most once.

        ``point`` 0 crashes right after the world write, before effect.done."""
        reference = clean(shape)
        h = Harness.make(**shape)  # type: ignore[arg-type]
        if point == 0:
            h.world.crash_after_write = True
        else:
            h.crash_after = point
        try:
            state = h.start()
        except SimulatedCrash:
            for _ in range(again):
                h.crash_after = 1
                with contextlib.suppress(SimulatedCrash):
                    h.resume()
            h.crash_after = None
            state = h.resume()
        expected = reference.journal.turn_events("t1")[-1].data
        assert set(h.world.performed.values()) <= {1}
        assert h.world.performed.keys() == reference.world.performed.keys()
        assert state.spend_usd == expected["usd"]
        assert state.disposition == expected["disposition"]
        assert h.steps.tool_runs.get("handoff", 0) <= reference.steps.tool_runs.get("handoff", 0)
