"""The arithmetic that decides bounds obligations without a solver (`bounds.Refuter`): it refutes
the common ways out of bounds a kernel's assumptions rule out, and never one a launch takes."""

from __future__ import annotations

from argus.dsl.check.bounds import Refuter
from argus.verify.affine import Space


def _tile_space() -> tuple[Space, int, int, int]:
    space = Space()
    block = space.symbol("block_y", "block", lo=0)
    m = space.symbol("M", "size", lo=1)
    quotient = space.atom("floordiv", (0, ((m, 1),)), (64, ()))
    divisible = space.atom("eq", (0, ((m, 1), (quotient, -64))), (0, ()))
    return space, block, m, divisible


def test_a_tile_inside_a_multiple_of_its_size_is_refuted() -> None:
    space, block, m, divisible = _tile_space()
    # the grid covers the data: 64·block_y ≤ M − 1; M a multiple of 64
    domain = [("ge0", (-1, ((block, -64), (m, 1)))), ("eq0", (-1, ((divisible, 1),)))]
    past = [("ge0", (63, ((block, 64), (m, -1))))]  # 64·block_y + 63 ≥ M
    assert Refuter(space, domain).refutes(past)


def test_a_ragged_last_tile_is_not_refuted() -> None:
    space, block, m, _ = _tile_space()
    domain = [("ge0", (-1, ((block, -64), (m, 1))))]  # no divisibility assumed: M = 65 runs past
    assert not Refuter(space, domain).refutes([("ge0", (63, ((block, 64), (m, -1))))])


def test_a_loop_index_bounded_through_the_grid_is_refuted_and_one_past_is_not() -> None:
    space = Space()
    block = space.symbol("block_x", "block", lo=0)
    seq = space.symbol("seq", "size", lo=1)
    kj = space.symbol("kj", "loop", lo=0)
    quotient = space.atom("floordiv", (0, ((seq, 1),)), (16, ()))
    divisible = space.atom("eq", (0, ((seq, 1), (quotient, -16))), (0, ()))
    domain = [("eq0", (-1, ((divisible, 1),))), ("ge0", (-1, ((block, -16), (seq, 1)))),
              ("ge0", (0, ((block, 1), (kj, -1))))]  # kj ≤ block_x, 16·block_x ≤ seq − 1
    refuter = Refuter(space, domain)
    assert refuter.refutes([("ge0", (15, ((seq, -1), (kj, 16))))])  # 16·kj + 15 ≥ seq
    assert not refuter.refutes([("ge0", (31, ((seq, -1), (kj, 16))))])  # 16·kj + 31 ≥ seq: kj = block_x = seq/16 − 1


def test_a_floor_division_bounds_its_quotient() -> None:
    space = Space()
    block = space.symbol("block_y", "block", lo=0)
    half = space.atom("floordiv", (0, ((block, 1),)), (2, ()))
    refuter = Refuter(space, [("ge0", (0, ((block, 1),)))])
    assert refuter.refutes([("ge0", (-1, ((half, -1),)))])  # block_y // 2 ≤ −1
    assert not refuter.refutes([("ge0", (0, ((half, -1),)))])  # block_y // 2 ≤ 0: block_y = 0
