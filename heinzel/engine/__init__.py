"""The turn engine: Pydantic AI runs the think step of a turn (ADR 0050).

One Agent per turn, built from a context hz renders itself (`context`), with
read-only typed tools generated from the contract (`tools`), a structured
outcome judged in code (`outcome`), a checkpoint per model request and tool call
(`run`, `body`), money caps (`money`), models by configuration (`models`) and
the deterministic ``offline`` model (`offline`). The host adapts the rest of hz
to the small interfaces of `spec`.
"""

from typing import TYPE_CHECKING

from ledger.lazy import lazy_exports

if TYPE_CHECKING:
    from heinzel.engine.body import Saved
    from heinzel.engine.chat import Answer, Proposal
    from heinzel.engine.context import ContextSettings, TurnContext, active_lessons, build_context
    from heinzel.engine.errors import EngineError
    from heinzel.engine.models import ModelChoice, choose_model, resolve_model
    from heinzel.engine.money import Budget, Hold, Price, Pricing, Purse, turn_cap
    from heinzel.engine.offline import offline_model
    from heinzel.engine.outcome import Disposition, Outcome, check_against, judge
    from heinzel.engine.run import ThinkResult, think
    from heinzel.engine.spec import (
        HandoffRequest,
        InputSpec,
        LessonView,
        ReadCapability,
        ReadMethod,
        Recorder,
        Runner,
        Skill,
        SpineRecord,
        SpineView,
        TurnSpec,
    )
    from heinzel.engine.tools import Report, TurnServices, build_toolset

__all__ = [
    "Answer",
    "Budget",
    "ContextSettings",
    "Disposition",
    "EngineError",
    "HandoffRequest",
    "Hold",
    "InputSpec",
    "LessonView",
    "ModelChoice",
    "Outcome",
    "Price",
    "Pricing",
    "Proposal",
    "Purse",
    "ReadCapability",
    "ReadMethod",
    "Recorder",
    "Report",
    "Runner",
    "Saved",
    "Skill",
    "SpineRecord",
    "SpineView",
    "ThinkResult",
    "TurnContext",
    "TurnServices",
    "TurnSpec",
    "active_lessons",
    "build_context",
    "build_toolset",
    "check_against",
    "choose_model",
    "judge",
    "offline_model",
    "resolve_model",
    "think",
    "turn_cap",
]

_WHERE: dict[str, str] = {
    "Saved": "heinzel.engine.body",
    "Answer": "heinzel.engine.chat",
    "Proposal": "heinzel.engine.chat",
    "ContextSettings": "heinzel.engine.context",
    "TurnContext": "heinzel.engine.context",
    "active_lessons": "heinzel.engine.context",
    "build_context": "heinzel.engine.context",
    "EngineError": "heinzel.engine.errors",
    "ModelChoice": "heinzel.engine.models",
    "choose_model": "heinzel.engine.models",
    "resolve_model": "heinzel.engine.models",
    "Budget": "heinzel.engine.money",
    "Hold": "heinzel.engine.money",
    "Purse": "heinzel.engine.money",
    "Price": "heinzel.engine.money",
    "Pricing": "heinzel.engine.money",
    "turn_cap": "heinzel.engine.money",
    "offline_model": "heinzel.engine.offline",
    "Disposition": "heinzel.engine.outcome",
    "Outcome": "heinzel.engine.outcome",
    "check_against": "heinzel.engine.outcome",
    "judge": "heinzel.engine.outcome",
    "ThinkResult": "heinzel.engine.run",
    "think": "heinzel.engine.run",
    "HandoffRequest": "heinzel.engine.spec",
    "InputSpec": "heinzel.engine.spec",
    "LessonView": "heinzel.engine.spec",
    "ReadCapability": "heinzel.engine.spec",
    "ReadMethod": "heinzel.engine.spec",
    "Recorder": "heinzel.engine.spec",
    "Runner": "heinzel.engine.spec",
    "Skill": "heinzel.engine.spec",
    "SpineRecord": "heinzel.engine.spec",
    "SpineView": "heinzel.engine.spec",
    "TurnSpec": "heinzel.engine.spec",
    "Report": "heinzel.engine.tools",
    "TurnServices": "heinzel.engine.tools",
    "build_toolset": "heinzel.engine.tools",
}

__getattr__ = lazy_exports(__name__, _WHERE, globals())
