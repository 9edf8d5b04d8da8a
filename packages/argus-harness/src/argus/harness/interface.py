"""Whether a candidate can stand in for the task's kernel: the same parameters in the same
order, inputs of the same element types, outputs at least as precise as the task's.

Keeping inputs' types fixed closes the "lower precision slips through the tolerance" hack: a
candidate cannot quietly read fp8 where the task gives bf16. Names may change (a recipe's kernel
may call its sizes differently); sizes are read from each candidate's own tensor dims.
"""

from __future__ import annotations

from .candidate import Candidate, Parameter
from .errors import CandidateError, SourceLocation

#: Significand bits of the float types, to compare precision.
_PRECISION = {"f64": 53, "f32": 24, "f16": 11, "bf16": 8, "f8e4m3": 4, "f8e5m2": 3, "f8e4m3fnuz": 4, "f8e5m2fnuz": 3}


def check_interface(candidate: Candidate, interface: tuple[Parameter, ...], outputs: tuple[int, ...]) -> None:
    """Raise `CandidateError` unless `candidate` takes the task's arguments."""
    got = [p for p in candidate.parameters if p.kind != "constexpr"]
    where = SourceLocation(candidate.filename, 1, 1)
    want = ", ".join(p.text() for p in interface)
    if candidate.grid is None and any(p.kind == "constexpr" for p in candidate.parameters):
        raise CandidateError("constexpr parameters are not accepted in a candidate; use module constants", where)
    if len(got) != len(interface):
        raise CandidateError(f"the kernel takes {len(got)} arguments; the task passes {len(interface)}: ({want})", where)
    for i, (mine, theirs) in enumerate(zip(got, interface)):
        if mine.kind != theirs.kind:
            raise CandidateError(f"argument {i + 1} ({mine.name}) is a {mine.kind}; the task passes a {theirs.kind} "
                                 f"there: ({want})", where)
        if mine.kind == "tensor" and len(mine.dims) != len(theirs.dims):
            raise CandidateError(f"tensor {mine.name} has {len(mine.dims)} dims; the task's has {len(theirs.dims)}: "
                                 f"({want})", where)
        if i in outputs:
            if _PRECISION.get(mine.dtype, 0) < _PRECISION.get(theirs.dtype, 0) or (
                    theirs.dtype not in _PRECISION and mine.dtype != theirs.dtype):
                raise CandidateError(f"output {mine.name} is {mine.dtype}, less precise than the task's "
                                     f"{theirs.dtype}; outputs keep at least the task's precision", where)
        elif mine.dtype != theirs.dtype:
            raise CandidateError(f"argument {mine.name} is {mine.dtype}; the task passes {theirs.dtype}: ({want})",
                                 where)
