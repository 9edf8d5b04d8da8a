"""The example-problem convention of kernel files.

A kernel file may declare, next to kernel ``K``, a function ``example_K(rng)`` returning a
`Problem`: the launch grid, the arguments (fresh random inputs and the output buffers), and
the expected outputs from a float64 numpy reference. ``argus run FILE:K`` and the tests use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Problem:
    grid: tuple[int, ...]
    args: tuple[Any, ...]
    expected: dict[int, np.ndarray]
    """Expected contents of the arguments at these positions after the launch."""
    constants: dict[str, Any] = field(default_factory=dict)
    atol: float = 1e-5
    rtol: float = 1e-5
    decode: dict[int, Any] = field(default_factory=dict)
    """Turns an argument's storage into comparable values (e.g. bf16 bits to floats)."""

    def check(self) -> dict[int, float]:
        """Largest absolute error per output; raises AssertionError beyond the tolerances."""
        errors = {}
        for index, want in self.expected.items():
            got = self.args[index]
            got = self.decode[index](got) if index in self.decode else got
            got = np.asarray(got, dtype=np.float64)
            errors[index] = float(np.max(np.abs(got - want))) if want.size else 0.0
            if not np.allclose(got, want, atol=self.atol, rtol=self.rtol):
                bad = np.argwhere(~np.isclose(got, want, atol=self.atol, rtol=self.rtol))[0]
                raise AssertionError(
                    f"argument {index} differs from the reference at {tuple(int(i) for i in bad)}: "
                    f"got {got[tuple(bad)]}, expected {want[tuple(bad)]} (max error {errors[index]:.3g})"
                )
        return errors
