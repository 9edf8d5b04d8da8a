"""The Argus knowledge base: hardware facts, DSL reference and optimization recipes, as data.

    from argus.kb import KnowledgeBase, describe_source

    kb = KnowledgeBase.load()                                  # the built-in pack and add-ons
    kernel = describe_source(source, target="nvptx:sm_90a", family="gemm", sizes={"K": 4096})
    for hit in kb.search("pipeline", kernel=kernel, kinds=["recipe"]):
        print(hit.score, hit.entry.id, hit.reasons)
    space = kb.get("software-pipelining").parameters          # names and domains, to enumerate
"""

from .conditions import Applicability, Condition, Truth
from .description import KernelDescription, describe_source
from .entry import Benefit, Entry, Fact, Snippet, read_entry
from .errors import EntryError, KbError, PackError, UnknownNameError
from .invariants import InvariantTemplate
from .library import KnowledgeBase
from .packs import BUILTIN, Pack
from .parameters import Parameter, ParameterSpace
from .retrieval import Hit

__all__ = [
    "Applicability", "BUILTIN", "Benefit", "Condition", "Entry", "EntryError", "Fact", "Hit", "InvariantTemplate",
    "KbError", "KernelDescription", "KnowledgeBase", "Pack", "PackError", "Parameter", "ParameterSpace", "Snippet",
    "Truth", "UnknownNameError", "describe_source", "read_entry",
]
