"""Suite-wide settings: no test ever reaches a real model."""

from __future__ import annotations

import os

os.environ.setdefault("HZ_TESTING", "1")
os.environ.pop("HZ_CRASH_AT", None)
os.environ.pop("HZ_NOW", None)
