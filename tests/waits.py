"""How long a test waits for what it expects: until it happens. Where a wait needs a bound
(a process that should exit, an answer that should come, a page element that should
appear), the bound is this ceiling, which only catches a hang: it never judges how fast
the machine is, so the suite passes on a loaded machine as on an idle one."""

HANG = 600.0
"""Seconds: the ceiling of any wait for something that is expected to happen."""

HANG_MS = int(HANG * 1000)
"""The same in milliseconds (Playwright's and Claude Code's unit)."""
