"""The warp's matrix loads and stores (`LDMATRIX_X4`, `STMATRIX_X4` and their transposed forms):
the interpreter moves values as the PTX ISA defines, the checker follows them, the code uses
the instructions, and targets without them refuse with the line."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from argus.backends.nvptx import compiler
from argus.backends.nvptx import language as nv
from argus.backends.nvptx.errors import CodegenError
from argus.backends.nvptx.targets import arch
from argus.dsl import Tensor, copy, f32, kernel, local_tile, make_local, make_shared, syncthreads, tag, thread_idx, u16
from argus.verify import Verdict


def loader(atom: Any) -> Any:
    """Lane l names row l of a 32×8 shared tile (row l % 8 of matrix l // 8) and writes what it
    receives to row l of `out`."""

    @kernel(block=(32,))
    def load_rows(src: Tensor[u16, 32, 8], out: Tensor[u16, 32, 8]):
        lane = thread_idx.x
        rows = make_shared((32, 8), u16)
        regs = make_local((8,), u16)
        for c in range(8):
            rows[lane, c] = src[lane, c]
        syncthreads()
        copy(local_tile(rows, (1, 8), lane), regs, atom)
        for v in range(8):
            out[lane, v] = regs[v]

    return load_rows


def storer(atom: Any) -> Any:
    """Lane l holds row l of `src` in registers; the atom stores them to a 32×8 shared tile,
    lane l naming row l, which is copied to `out`."""

    @kernel(block=(32,))
    def store_rows(src: Tensor[u16, 32, 8], out: Tensor[u16, 32, 8]):
        lane = thread_idx.x
        rows = make_shared((32, 8), u16)
        regs = make_local((8,), u16)
        for v in range(8):
            regs[v] = src[lane, v]
        copy(regs, local_tile(rows, (1, 8), lane), atom)
        syncthreads()
        for c in range(8):
            out[lane, c] = rows[lane, c]

    return store_rows


def fragments(rows: np.ndarray, trans: bool) -> np.ndarray:
    """What lane t receives, per the PTX ISA: of matrix j (rows 8j … 8j + 7), values 2j and
    2j + 1 are row t // 4, columns 2·(t % 4) and the next; transposed, column t // 4 of rows
    2·(t % 4) and the next."""
    out = np.zeros((32, 8), rows.dtype)
    for t in range(32):
        for j in range(4):
            for h in range(2):
                r, c = (t // 4, 2 * (t % 4) + h) if not trans else (2 * (t % 4) + h, t // 4)
                out[t, 2 * j + h] = rows[8 * j + r, c]
    return out


ATOMS = [(nv.LDMATRIX_X4, False), (nv.LDMATRIX_X4_TRANS, True)]
STORES = [(nv.STMATRIX_X4, False), (nv.STMATRIX_X4_TRANS, True)]


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


@pytest.mark.parametrize("atom, trans", ATOMS)
def test_a_matrix_load_hands_out_the_isa_fragments(atom: Any, trans: bool) -> None:
    src = np.arange(256, dtype=np.uint16).reshape(32, 8)
    out = np.zeros((32, 8), np.uint16)
    loader(atom)[1](src, out)
    np.testing.assert_array_equal(out, fragments(src, trans))


@pytest.mark.parametrize("atom, trans", STORES)
def test_a_matrix_store_is_the_inverse_of_the_load(atom: Any, trans: bool) -> None:
    rows = np.random.default_rng(0).integers(0, 1 << 16, (32, 8)).astype(np.uint16)
    out = np.zeros((32, 8), np.uint16)
    storer(atom)[1](fragments(rows, trans), out)
    np.testing.assert_array_equal(out, rows)


def test_the_checker_follows_a_matrix_load() -> None:
    """Each lane's values come from the rows the ISA says: a tag assertion built from the
    fragment mapping is proved, and one off by a row is refuted."""

    def checked(shift: int) -> Any:
        @kernel(block=(32,), verify=False)
        def fragment_tags(src: Tensor[u16, 32, 8], out: Tensor[u16, 32, 8]):
            lane = thread_idx.x
            rows = make_shared((32, 8), u16)
            regs = make_local((8,), u16)
            want = make_local((8,), u16)
            tag(src, lambda r, c: (r, c))
            tag(want, lambda v: (8 * (v // 2) + (lane // 4 + shift) % 8, 2 * (lane % 4) + v % 2))
            for c in range(8):
                rows[lane, c] = src[lane, c]
            syncthreads()
            copy(local_tile(rows, (1, 8), lane), regs, nv.LDMATRIX_X4)
            assert tag(regs[...]) == tag(want[...])

        return fragment_tags

    assert checked(0).verify().verdict is Verdict.PROVED
    assert checked(1).verify().verdict is Verdict.VIOLATED


@pytest.mark.parametrize("make, atom, instruction", [(loader, nv.LDMATRIX_X4, "ldmatrix.sync.aligned.m8n8.x4.shared"),
                                                     (loader, nv.LDMATRIX_X4_TRANS, "m8n8.x4.trans.shared"),
                                                     (storer, nv.STMATRIX_X4, "stmatrix.sync.aligned.m8n8.x4.shared")])
def test_the_code_uses_the_instruction(make: Any, atom: Any, instruction: str) -> None:
    binary = compiler.build(make(atom).specialize(), arch("sm_90a"), assemble=False)
    assert instruction in binary.ptx


def test_a_matrix_store_is_refused_before_hopper_with_its_line() -> None:
    with pytest.raises(CodegenError, match=r"test_matrices\.py:\d+:\d+: .*stmatrix.*needs nvptx:sm_90"):
        compiler.build(storer(nv.STMATRIX_X4).specialize(), arch("sm_80"), assemble=False)


def test_a_matrix_load_of_32_bit_values_is_refused() -> None:
    @kernel(block=(32,))
    def wide(out: Tensor[f32, 32, 8]):
        rows = make_shared((32, 8), f32)
        regs = make_local((8,), f32)
        for c in range(8):
            rows[thread_idx.x, c] = 0.0
        syncthreads()
        copy(local_tile(rows, (1, 8), thread_idx.x), regs, nv.LDMATRIX_X4)
        out[thread_idx.x, 0] = regs[0]

    with pytest.raises(CodegenError, match="moves 16-bit elements; these tiles hold f32"):
        compiler.build(wide.specialize(), arch("sm_90a"), assemble=False)
