"""How byte tags move (`argus.verify.byte_moves`): an element laid out in parts (an operand with
rows, a product) stays whole where its bytes move together, and is no element where its bytes
are moved apart or written over in part; plain elements' bytes keep their tags wherever they go."""

from __future__ import annotations

import numpy as np
from argus.verify.byte_moves import concatenated, extracted, permuted, whole_parts
from argus.verify.memory import TagMemory
from argus.verify.products import ROWS
from argus.verify.tags import TOP, TagTable


def _operand(table: TagTable, k: int, m: int, width: int = 2) -> np.ndarray:
    """The bytes of an operand with rows (pair k, row m), laid out in parts."""
    return table.bytes_of(np.array([table.element_id((ROWS, 1, k, 7, m))]), width)


def _plain(table: TagTable, k: int, width: int = 2) -> np.ndarray:
    return table.bytes_of(np.array([table.element_id((k,))]), width)


def test_whole_elements_moved_together_keep_their_tags():
    table = TagTable()
    x, y = _operand(table, 0, 1), _operand(table, 2, 3)
    assert np.array_equal(concatenated([x, y]), np.concatenate([x, y], axis=-1))
    assert np.array_equal(permuted([x, y], [2, 3, 0, 1]), np.concatenate([y, x], axis=-1))
    assert np.array_equal(extracted(np.concatenate([x, y], axis=-1), 2, 2), y)
    assert np.array_equal(whole_parts(x), x)


def test_an_element_in_parts_made_of_two_elements_bytes_is_no_element():
    table = TagTable()
    x, y = _operand(table, 0, 1), _operand(table, 0, 2)  # (one pair, two rows: their even bytes are alike)
    mixed = permuted([y, x], [0, 3])  # y's low byte, x's high byte
    assert mixed[0, 0] == y[0, 0] and mixed[0, 1] == TOP
    assert concatenated([y[:, :1], x[:, 1:]])[0, 1] == TOP
    assert extracted(x, 1, 1)[0, 0] == TOP  # (a last byte alone)
    wide = table.bytes_of(np.array([table.element_id((ROWS, 1, 5, 7, 6))]), 4)
    assert (permuted([wide, wide], [0, 3])[0] == [wide[0, 0], TOP]).all()  # (bytes 0 and 3 of one element)


def test_plain_elements_bytes_keep_their_tags_wherever_they_go():
    table = TagTable()
    x, y = _plain(table, 0), _plain(table, 1)
    assert np.array_equal(permuted([y, x], [0, 3]), np.array([[y[0, 0], x[0, 1]]]))
    assert np.array_equal(extracted(x, 1, 1), x[:, 1:])


def test_a_write_over_part_of_an_element_in_parts_leaves_no_element():
    table = TagTable()
    x, y = _operand(table, 0, 1), _operand(table, 0, 2)
    memory = TagMemory.shared("s", 8)
    memory.write(np.array([[0, 1], [2, 3]]), np.concatenate([x, x]), np.array([0, 1]), 0)
    memory.write(np.array([[0]]), y[:, :1], np.array([0]), 1)  # y's low byte over x's: x's last byte is cut
    assert memory.tags[0] == y[0, 0] and memory.tags[1] == TOP
    assert np.array_equal(memory.tags[2:4], x[0])  # (the element after it is whole)
    registers = TagMemory.registers("r", 2, 4)
    registers.write(np.array([[0, 1, 2, 3]] * 2), np.concatenate([np.concatenate([x, x], -1)] * 2), np.array([0, 1]), 0)
    registers.write(np.array([[2]]), y[:, :1], np.array([1]), 1)  # thread 1 only
    assert registers.tags[1, 3] == TOP
    assert np.array_equal(registers.tags[0], np.concatenate([x, x], -1)[0])


def test_a_written_last_byte_without_its_first_is_no_element():
    table = TagTable()
    x = _operand(table, 0, 1)
    memory = TagMemory.shared("s", 4)
    memory.write(np.array([[1, 2]]), x, np.array([0]), 0)  # whole, one byte on
    assert np.array_equal(memory.tags[1:3], x[0])
    memory.write(np.array([[3]]), x[:, 1:], np.array([0]), 1)  # the last byte alone
    assert memory.tags[3] == TOP
