"""argus.verify: prove or refute, with concrete counterexamples.

This version holds the standalone layout checker (`argus.verify.layouts`, and the
``argus-verify layout ...`` command); it needs only argus-layout.

>>> from argus.layout import parse
>>> from argus.verify import injective
>>> print(injective(parse("(4,8):(1,2)")).text())
violated: (4,8):(1,2) is injective
  two coordinates share an offset
  counterexample: first = (2,0), second = (0,1), offset = 2
"""

from .layouts import ENUMERATION_LIMIT, bank_conflict_free, bijective, composition, equal, injective, partition
from .results import Result, Verdict

__all__ = [
    "ENUMERATION_LIMIT",
    "Result",
    "Verdict",
    "bank_conflict_free",
    "bijective",
    "composition",
    "equal",
    "injective",
    "partition",
]
