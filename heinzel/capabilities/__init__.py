"""Capabilities: what a contract may read and write, by name (adapters plug in later)."""

from heinzel.capabilities.registry import (
    CAPABILITIES,
    DEFAULT_REGISTRY,
    Capability,
    Method,
    Mode,
    Registry,
)

__all__ = ["CAPABILITIES", "DEFAULT_REGISTRY", "Capability", "Method", "Mode", "Registry"]
