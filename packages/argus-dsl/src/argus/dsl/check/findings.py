"""Findings of the static checker that hold in some launches only.

Most findings hold in every launch that gets to them (an access past the end of a tile, bytes
nothing wrote). Some hold only in the launches taking some paths: a read of bytes written on
some paths only (`initialization`), an access out of bounds wherever a thread gets to it under
a branch on a runtime condition. Such a finding lists its alternatives — conjunctions of
comparisons on the symbols of the launch, each with the thread it is about — and the checker
asks the solver, once the domain is known, for a launch of the domain satisfying one: that
launch is the witness, replayed like every other; where none does, there is no finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from argus.verify.obligations import Candidate

from .initialization import Conjunction

MAX_ALTERNATIVES = 256
"""Alternatives of one finding (per thread and condition) before they are weakened to one that
holds wherever the finding's op is reached."""


@dataclass
class Conditional(Candidate):
    """A finding in the launches of one of `alternatives`, each with the thread (`points`) it is
    about there. `choose` fixes the alternative, thread and model once the domain is known."""

    alternatives: list[Conjunction] = field(default_factory=list)
    points: list[int] = field(default_factory=list)

    def add(self, alternatives: list[Conjunction], points: list[int]) -> None:
        """More launches in which the same op finds the same fault (another iteration of an
        unrolled loop, another thread, say)."""
        for conjunction, point in zip(alternatives, points):
            if conjunction not in self.alternatives:
                self.alternatives.append(conjunction)
                self.points.append(point)
        if len(self.alternatives) > MAX_ALTERNATIVES:
            self.alternatives, self.points = [()], [self.points[0]]

    def choose(self, alternative: int, model: dict[int, int]) -> None:
        self.condition = list(self.alternatives[alternative])
        self.point = self.points[alternative]
        self.model = model
