"""Contracts: the ``.prose.md`` format, its compiler, amendments (HZC050) and skills (HZC051)."""

from typing import TYPE_CHECKING

from ledger.lazy import lazy_exports

if TYPE_CHECKING:
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

_WHERE: dict[str, str] = {
    "check_amendment": "heinzel.contract.amend",
    "widenings": "heinzel.contract.amend",
    "Body": "heinzel.contract.body",
    "Item": "heinzel.contract.body",
    "Section": "heinzel.contract.body",
    "CompiledContract": "heinzel.contract.compiler",
    "compile_contract": "heinzel.contract.compiler",
    "fingerprint": "heinzel.contract.compiler",
    "load_contract": "heinzel.contract.compiler",
    "Agent": "heinzel.contract.model",
    "Frontmatter": "heinzel.contract.model",
    "Hz": "heinzel.contract.model",
    "Input": "heinzel.contract.model",
    "Output": "heinzel.contract.model",
    "Skill": "heinzel.contract.skills",
    "load_skill": "heinzel.contract.skills",
    "resolve_skills": "heinzel.contract.skills",
}

__getattr__ = lazy_exports(__name__, _WHERE, globals())
