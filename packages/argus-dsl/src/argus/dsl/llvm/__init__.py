"""The shared LLVM-text translator that every LLVM-based backend subclasses.

`translate` holds the translator and the generic op rules; this package gives backends the
names they build on (the `Translator` to subclass, the generic `RULES` table, the kernel ABI the
runtime launches by, and the type and layout helpers), so that a backend never reaches into a
module of the translator.
"""

from .translate import (
    RULES,
    KernelABI,
    Memory,
    Param,
    Rule,
    Translator,
    arith_type,
    element_type,
    ident,
    llvm_type,
    natural_alignment,
    shared_layout,
)

__all__ = ["RULES", "KernelABI", "Memory", "Param", "Rule", "Translator", "arith_type", "element_type", "ident",
           "llvm_type", "natural_alignment", "shared_layout"]
