"""A cooperative copy runs as an NVIDIA instruction only when its whole description (vector
bytes, thread count, source and target layouts) is that instruction's: the checker and the
interpreter move data as the atom's own layouts say, so an atom that only borrows a
registered name must be refused, never compiled as the instruction it names."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from argus.backends.nvptx import compiler
from argus.backends.nvptx import language as nv
from argus.backends.nvptx.errors import CodegenError
from argus.backends.nvptx.targets import arch
from argus.dsl import Tensor, copy, kernel, local_tile, make_local, make_shared, syncthreads, thread_idx, u16
from argus.dsl.atoms import CopyAtom
from argus.dsl.cli import main as argus_main
from argus.layout import Layout


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def loader(atom: CopyAtom) -> Any:
    """Lane l names row l of a 32×8 shared tile and writes what the atom hands it to row l of `out`."""

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


def storer(atom: CopyAtom) -> Any:
    """Lane l holds row l of `src` in registers and the atom stores them to a shared tile."""

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


ROWS = Layout((32, 8), (8, 1))
#: A register fragment other than ldmatrix's: lane t receives values 8t … 8t + 7 (no redistribution).
IDENTITY = Layout((32, 8), (8, 1))


IMPOSTORS = [
    pytest.param(loader, CopyAtom("ldmatrix_x4", 16, 32, ROWS, IDENTITY), "target layout", id="load-other-fragment"),
    pytest.param(loader, CopyAtom("ldmatrix_x4", 16, 32, ROWS, nv.LDMATRIX_X4_TRANS.dst_layout), "target layout",
                 id="load-named-plain-laid-out-transposed"),
    pytest.param(loader, CopyAtom("ldmatrix_x4_trans", 16, 32, ROWS, nv.LDMATRIX_X4.dst_layout), "target layout",
                 id="load-named-transposed-laid-out-plain"),
    pytest.param(loader, CopyAtom("ldmatrix_x4", 16, 32, Layout((32, 8), (1, 32)), nv.LDMATRIX_X4.dst_layout),
                 "source layout", id="load-other-rows"),
    pytest.param(loader, CopyAtom("ldmatrix_x4", 4, 32, ROWS, nv.LDMATRIX_X4.dst_layout), "vectors are 4 bytes, not 16",
                 id="load-narrower-vectors"),
    pytest.param(storer, CopyAtom("stmatrix_x4", 16, 32, IDENTITY, ROWS), "source layout", id="store-other-fragment"),
    pytest.param(storer, CopyAtom("stmatrix_x4", 16, 32, ROWS, nv.LDMATRIX_X4.dst_layout), "layout",
                 id="store-named-laid-out-as-load"),
]


@pytest.mark.parametrize("make, atom, differs", IMPOSTORS)
def test_an_atom_with_a_registered_name_and_other_layouts_is_refused(make: Any, atom: CopyAtom, differs: str) -> None:
    with pytest.raises(CodegenError, match=rf"test_atom_dispatch\.py:\d+:\d+: .*copy atom {atom.name}\b.*{differs}"):
        compiler.build(make(atom).specialize(), arch("sm_90a"), assemble=False)


def test_an_atom_with_a_registered_name_and_more_threads_is_refused() -> None:
    wide = CopyAtom("ldmatrix_x4", 16, 64, Layout((64, 8), (8, 1)), Layout((64, 8), (8, 1)))

    @kernel(block=(64,))
    def load_rows(src: Tensor[u16, 64, 8], out: Tensor[u16, 64, 8]):
        lane = thread_idx.x
        rows = make_shared((64, 8), u16)
        regs = make_local((8,), u16)
        for c in range(8):
            rows[lane, c] = src[lane, c]
        syncthreads()
        copy(local_tile(rows, (1, 8), lane), regs, wide)
        for v in range(8):
            out[lane, v] = regs[v]

    with pytest.raises(CodegenError, match=r"copy atom ldmatrix_x4\b.*threads are 64, not 32"):
        compiler.build(load_rows.specialize(), arch("sm_90a"), assemble=False)


@pytest.mark.parametrize("fragment, instruction", [
    (Layout(((4, 8), (2, (2, 2))), ((2, 8), (1, (64, 128)))), "ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
    (Layout(((4, 8), (2, 4)), ((16, 1), (8, 64))), "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16")])
def test_an_atom_otherwise_named_runs_as_the_instruction_its_layouts_describe(fragment: Layout, instruction: str
                                                                              ) -> None:
    """The layouts decide, not how they are written: an atom of another name moving data as an
    ldmatrix does (which is how the interpreter runs it) is that ldmatrix."""
    same = CopyAtom("my_matrix_load", 16, 32, ROWS, fragment)
    binary = compiler.build(loader(same).specialize(), arch("sm_90a"), assemble=False)
    assert instruction in binary.ptx


@pytest.mark.parametrize("atom, instruction", [(nv.LDMATRIX_X4, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
                                               (nv.LDMATRIX_X4_TRANS, "ldmatrix.sync.aligned.m8n8.x4.trans.shared"),
                                               (nv.STMATRIX_X4, "stmatrix.sync.aligned.m8n8.x4.shared.b16"),
                                               (nv.STMATRIX_X4_TRANS, "stmatrix.sync.aligned.m8n8.x4.trans.shared")])
def test_the_registered_atoms_still_run_as_their_instructions(atom: CopyAtom, instruction: str) -> None:
    make = storer if atom.name.startswith("stmatrix") else loader
    binary = compiler.build(make(atom).specialize(), arch("sm_90a"), assemble=False)
    assert instruction in binary.ptx


def test_an_unknown_cooperative_atom_is_refused_naming_what_runs() -> None:
    other = CopyAtom("shuffle_rows", 16, 32, ROWS, IDENTITY)
    with pytest.raises(CodegenError, match=r"copy atom shuffle_rows .*ldmatrix_x4"):
        compiler.build(loader(other).specialize(), arch("sm_90a"), assemble=False)


def test_argus_compile_refuses_the_impostor_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through the command line, as a user compiles for a GPU: an error naming the atom, no PTX."""
    source = tmp_path / "impostor.py"
    source.write_text(textwrap.dedent("""
        from argus.dsl import Tensor, copy, kernel, local_tile, make_local, make_shared, syncthreads, thread_idx, u16
        from argus.dsl.atoms import CopyAtom
        from argus.layout import Layout

        ATOM = CopyAtom("ldmatrix_x4", 16, 32, Layout((32, 8), (8, 1)), Layout((32, 8), (8, 1)))

        @kernel(block=(32,))
        def load_rows(src: Tensor[u16, 32, 8], out: Tensor[u16, 32, 8]):
            lane = thread_idx.x
            rows = make_shared((32, 8), u16)
            regs = make_local((8,), u16)
            for c in range(8):
                rows[lane, c] = src[lane, c]
            syncthreads()
            copy(local_tile(rows, (1, 8), lane), regs, ATOM)
            for v in range(8):
                out[lane, v] = regs[v]
    """))
    for stage in ("llvm", "ptx"):
        code = argus_main(["compile", f"{source}:load_rows", "--target", "nvptx:sm_90a", "--emit", stage])
        out, err = capsys.readouterr()
        assert code != 0
        assert "ldmatrix" not in out
        assert "copy atom ldmatrix_x4" in err and "target layout" in err
