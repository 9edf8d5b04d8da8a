"""The IR-independent pieces of the checking engine: the tag lattice, tagged memory, and
assertion checking over enumerated points."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from argus.verify.assertions import check
from argus.verify.memory import TagMemory
from argus.verify.tags import BOTTOM, TOP, TagTable, merge, select

ids = st.integers(0, 6)


@settings(max_examples=200, deadline=None)
@given(ids, ids, ids)
def test_merge_is_the_lattice_join(a, b, c):
    join = lambda x, y: int(merge(np.array(x), np.array(y)))  # noqa: E731
    assert join(a, b) == join(b, a)
    assert join(join(a, b), c) == join(a, join(b, c))
    assert join(a, a) == a and join(a, BOTTOM) == a and join(a, TOP) == TOP
    if a not in (BOTTOM, TOP) and b not in (BOTTOM, TOP) and a != b:
        assert join(a, b) == TOP


def test_select_takes_the_chosen_side_when_replaying_and_joins_otherwise():
    a, b, cond = np.array([[2, 3]]), np.array([[4, 3]]), np.array([True])
    assert select(cond, a, b, path_sensitive=True).tolist() == [[2, 3]]
    assert select(cond, a, b, path_sensitive=False).tolist() == [[TOP, 3]]


def test_byte_tags_keep_the_element_tag_and_the_byte_position():
    table = TagTable()
    ids_ = table.byte_ids([(0, 1), (0, 2)], nbytes=2)
    assert ids_.shape == (2, 2) and len(set(ids_.ravel().tolist())) == 4
    assert table.byte_ids([(0, 1)], 2).tolist() == ids_[:1].tolist()  # interned
    assert table.describe(ids_[0, 0]) == (0, 1) and table.describe(ids_[0, 1]) == (0, 1, "byte 1")
    assert table.element_tag(ids_[1]) == (0, 2)
    assert table.element_tag([BOTTOM, BOTTOM]) == "⊥" and table.element_tag([ids_[0, 0], TOP]) == "⊤"


def test_unordered_writes_of_different_data_make_top_and_are_recorded():
    mem = TagMemory.shared("s", 8)
    mem.write(np.array([[0, 1]]), np.array([[5, 6]]), np.array([3]), site=10)
    mem.write(np.array([[0, 1]]), np.array([[7, 6]]), np.array([4]), site=11)  # same epoch, other thread
    assert mem.tags[:2].tolist() == [TOP, 6]
    (conflict,) = mem.conflicts
    assert conflict.byte == 0 and conflict.threads == (3, 4) and conflict.sites == (10, 11)


def test_a_barrier_orders_writes_so_a_later_one_replaces_the_tag():
    mem = TagMemory.shared("s", 4)
    mem.write(np.array([[0]]), np.array([[5]]), np.array([0]), site=1)
    mem.barrier()
    mem.write(np.array([[0]]), np.array([[9]]), np.array([1]), site=2)
    assert mem.tags[0] == 9 and not mem.conflicts and mem.site[0] == 2 and mem.epoch_writer[0] == 1


def test_two_threads_writing_one_byte_in_one_store():
    mem = TagMemory.shared("s", 4)
    mem.write(np.array([[2], [2]]), np.array([[5], [6]]), np.array([0, 1]), site=7)
    assert mem.tags[2] == TOP and mem.conflicts[0].threads == (0, 1)


def test_registers_are_per_thread_and_reset_forgets():
    mem = TagMemory.registers("r", 2, 4)
    mem.write(np.array([[0, 1]]), np.array([[5, 6]]), np.array([1]), site=3)
    assert mem.read(np.array([[0, 1]]), np.array([1])).tolist() == [[5, 6]]
    assert mem.read(np.array([[0, 1]]), np.array([0])).tolist() == [[BOTTOM, BOTTOM]]
    mem.reset()
    assert (mem.tags == BOTTOM).all()


def test_assertion_findings_separate_violations_from_unwritten_and_conflicting_data():
    lhs = np.array([[[2, 3], [4, 5]], [[2, 3], [0, 5]]])
    rhs = np.array([[[2, 3], [4, 6]], [[2, 3], [4, 1]]])
    findings = check(lhs, rhs, equal=True)
    assert [(f.kind, f.point, f.element) for f in findings] == [("violated", 0, 1), ("unwritten", 1, 1)]
    assert check(lhs, lhs.copy(), equal=True)[0].kind == "unwritten"
    ne = check(np.array([[[2, 3]]]), np.array([[[2, 3]]]), equal=False)
    assert [f.kind for f in ne] == ["violated"]
    assert check(np.array([[[2, 3]]]), np.array([[[2, 4]]]), equal=False) == []
