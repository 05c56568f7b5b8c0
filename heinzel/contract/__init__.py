"""Contracts: the ``.prose.md`` format, its compiler, amendments (HZC050) and skills (HZC051)."""

from heinzel.contract.amend import check_amendment, widenings
from heinzel.contract.body import Body, Item, Section
from heinzel.contract.compiler import (
    CompiledContract,
    compile_contract,
    fingerprint,
    load_contract,
)
from heinzel.contract.model import Agent, Frontmatter, Hz, Input, Output
from heinzel.contract.skills import Skill, load_skill, resolve_skills

__all__ = [
    "Agent",
    "Body",
    "CompiledContract",
    "Frontmatter",
    "Hz",
    "Input",
    "Item",
    "Output",
    "Section",
    "Skill",
    "check_amendment",
    "compile_contract",
    "fingerprint",
    "load_contract",
    "load_skill",
    "resolve_skills",
    "widenings",
]
