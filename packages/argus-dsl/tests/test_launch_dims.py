"""Dims named alike are one size, on every launch path.

The checker takes a dim's name as one symbol in [1, 2**31): every tensor dim of that name and
an integer argument of that name are the same value. A launch where they differ, or where a
named dim is 0, is one no proof is about, so the interpreter and each GPU runtime's argument
marshalling refuse it (with an error naming the kernel, the arguments, their dims and values)
before anything runs. `argus run`, `argus verify` and `argus compile` take constexprs with -D
and from an example problem that passes them positionally or by keyword."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from argus.dsl import ArgusLaunchError, Tensor, f32, i64, kernel, thread_idx
from argus.dsl import launch_args
from argus.verify import Verdict
from argus.dsl.cli import main


@kernel(block=(32,))
def copy(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    i = thread_idx.x
    if i < n:
        out[i] = x[i]


@kernel(block=(32,))
def rows(a: Tensor[f32, "m", "k"], b: Tensor[f32, "k", 4], out: Tensor[f32, "m"], k: i64):
    i = thread_idx.x
    if i64(i) < k:
        out[0] = a[0, i] + b[i, 0]


def test_a_launch_whose_dims_agree_runs() -> None:
    x, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    copy[1](x, out, 8)
    assert (out == x).all()


def test_dims_named_alike_that_differ_are_refused_before_the_kernel_runs() -> None:
    x, out = np.ones(12, np.float32), np.zeros(8, np.float32)
    with pytest.raises(ArgusLaunchError, match=r"copy: dims named 'n' differ: x\.shape\[0\] = 12 but "
                                               r"out\.shape\[0\] = 8"):
        copy[1](x, out, 8)
    assert not out.any()  # nothing ran


def test_an_integer_argument_named_like_a_dim_must_equal_it() -> None:
    x, out = np.ones(12, np.float32), np.zeros(12, np.float32)
    with pytest.raises(ArgusLaunchError, match=r"copy: argument 'n' = 8 but dim 'n' is x\.shape\[0\] = 12"):
        copy[1](x, out, 8)
    assert not out.any()


def test_dims_named_alike_on_other_axes_and_an_i64_argument_are_one_size() -> None:
    a, b, out = np.ones((2, 5), np.float32), np.ones((6, 4), np.float32), np.zeros(2, np.float32)
    with pytest.raises(ArgusLaunchError, match=r"rows: dims named 'k' differ: a\.shape\[1\] = 5 but "
                                               r"b\.shape\[0\] = 6"):
        rows[1](a, b, out, 5)
    with pytest.raises(ArgusLaunchError, match=r"rows: argument 'k' = 6 but dim 'k' is a\.shape\[1\] = 5"):
        rows[1](a, np.ones((5, 4), np.float32), out, 6)
    rows[1](a, np.ones((5, 4), np.float32), out, 5)
    assert out[0] == 2.0


def test_a_named_dim_of_zero_is_refused() -> None:
    """The checker proves accesses for sizes of at least 1: an empty tensor is another launch."""
    with pytest.raises(ArgusLaunchError, match=r"copy: dim 'n' is x\.shape\[0\] = 0 but a named dim must be from 1"):
        copy[1](np.ones(0, np.float32), np.zeros(0, np.float32), 0)


def test_a_declared_dim_and_the_rank_are_checked_with_the_kernel_named() -> None:
    a, out = np.ones((2, 5), np.float32), np.zeros(2, np.float32)
    with pytest.raises(ArgusLaunchError, match=r"rows: argument 'b' dim 1 is 3, the kernel declares 4"):
        rows[1](a, np.ones((5, 3), np.float32), out, 5)
    with pytest.raises(ArgusLaunchError, match=r"rows: argument 'b' has 1 dims, the kernel declares 2: \['k', 4\]"):
        rows[1](a, np.ones(5, np.float32), out, 5)


def test_a_keyword_naming_no_parameter_is_refused() -> None:
    x, out = np.ones(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(ArgusLaunchError, match=r"copy has no parameter 'N'; its parameters: x, out, n"):
        copy[1](x, out, N=8)
    assert not out.any()


# ---- the GPU runtimes' marshalling (no GPU needed: the arguments are refused before any driver call) ----

def _abi(backend: str, k: Any) -> Any:
    if backend == "nvptx":
        compiler = pytest.importorskip("argus.backends.nvptx.compiler")
        from argus.backends.nvptx.targets import arch

        return compiler.build(k.specialize(), arch("sm_90a"), assemble=False).abi
    compiler = pytest.importorskip("argus.backends.amdgpu.compiler")
    from argus.backends.amdgpu.targets import chip

    return compiler.build(k.specialize(), chip("gfx942")).abi


def _marshal(backend: str, abi: Any, args: list[Any], views: list[Any]) -> Any:
    """What each runtime's launch calls before its driver: the NVIDIA runtime's `marshal`, and
    the AMD runtime's call of `launch_args.marshal` with its error class."""
    if backend == "nvptx":
        from argus.backends.nvptx import runtime

        return runtime.marshal(abi, args, views)
    from argus.backends.amdgpu import runtime

    return launch_args.marshal(abi, args, views, runtime.HipError, memory="HIP")


def _error(backend: str) -> type[Exception]:
    if backend == "nvptx":
        from argus.backends.nvptx.runtime import CudaError

        return CudaError
    from argus.backends.amdgpu.runtime import HipError

    return HipError


def _views(*shapes: tuple[int, ...]) -> list[Any]:
    found: list[Any] = [launch_args.DeviceArray(0x1000 * (i + 1), s, "<f4", 0, True) for i, s in enumerate(shapes)]
    return found + [None]


@pytest.mark.parametrize("backend", ["nvptx", "amdgpu"])
def test_gpu_marshalling_refuses_dims_that_differ(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    abi = _abi(backend, copy)
    args: list[Any] = [object(), object(), 8]
    values = _marshal(backend, abi, args, _views((8,), (8,)))[0]
    assert values == [0x1000, 8, 0x2000, 8, 8]
    with pytest.raises(_error(backend), match=r"copy: dims named 'n' differ: x\.shape\[0\] = 12 but "
                                              r"out\.shape\[0\] = 8"):
        _marshal(backend, abi, args, _views((12,), (8,)))
    with pytest.raises(_error(backend), match=r"copy: argument 'n' = 8 but dim 'n' is x\.shape\[0\] = 12"):
        _marshal(backend, abi, [object(), object(), 8], _views((12,), (12,)))
    with pytest.raises(_error(backend), match=r"copy: dim 'n' is x\.shape\[0\] = 0 but a named dim must be from 1"):
        _marshal(backend, abi, [object(), object(), 0], _views((0,), (0,)))


@pytest.mark.parametrize("backend", ["nvptx", "amdgpu"])
def test_gpu_marshalling_checks_declared_dims_and_ranks(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tensor declared (k, 4) may not arrive as (k, 3) or as a vector: the kernel would read
    past it where the checker proved every access in bounds."""
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    abi = _abi(backend, rows)
    args: list[Any] = [object(), object(), object(), 5]
    _marshal(backend, abi, args, _views((2, 5), (5, 4), (2,)))
    with pytest.raises(_error(backend), match=r"rows: argument 'b' dim 1 is 3, the kernel declares 4"):
        _marshal(backend, abi, args, _views((2, 5), (5, 3), (2,)))
    with pytest.raises(_error(backend), match=r"rows: argument 'b' has 1 dims, the kernel declares 2"):
        _marshal(backend, abi, args, _views((2, 5), (5,), (2,)))
    with pytest.raises(_error(backend), match=r"rows: argument 'k' = 6 but dim 'k' is a\.shape\[1\] = 5"):
        _marshal(backend, abi, [*args[:3], 6], _views((2, 5), (5, 4), (2,)))


def test_a_stored_abi_keeps_the_declared_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel launched from the disk cache is checked as one just compiled."""
    from argus.dsl.llvm.translate import KernelABI

    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    abi = _abi("nvptx", rows)
    again = KernelABI.from_json(abi.to_json())
    assert again == abi
    assert [p.shape for p in again.params if p.kind == "pointer"] == [("m", "k"), ("k", 4), ("m",)]


# ---- constexprs on the command line ----------------------------------------------------------

SOURCE = '''
import numpy as np
from argus.dsl import kernel, Tensor, f32, thread_idx, block_idx, constexpr, Problem

@kernel(block=(64,))
def scale(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int, BLOCK: constexpr):
    i = block_idx.x * BLOCK + thread_idx.x
    if i < n:
        out[i] = x[i] * 2.0

def example_scale(rng):
    x = rng.standard_normal(100).astype(np.float32)
    return Problem((2,), (x, np.zeros(100, np.float32), 100{positional}), {{1: 2 * x}}{keyword})

@kernel(block=(32,))
def plain(x: Tensor[f32, "n"], n: int):
    if thread_idx.x < n:
        x[thread_idx.x] = 1.0
'''


@pytest.fixture(params=["positional", "keyword"])
def kernel_file(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A kernel file whose example problem passes the constexpr BLOCK positionally or by keyword."""
    path = tmp_path / f"scale_{request.param}.py"
    positional = request.param == "positional"
    path.write_text(SOURCE.format(positional=", 64" if positional else "",
                                  keyword="" if positional else ", constants={'BLOCK': 64}"))
    return path


def test_run_compile_and_verify_take_the_example_problems_constexprs(kernel_file: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{kernel_file}:scale"]) == 0
    assert "matches the reference" in capsys.readouterr().out
    assert main(["verify", f"{kernel_file}:scale"]) == 0
    assert "found none of the faults" in capsys.readouterr().out
    assert main(["verify", str(kernel_file)]) == 0  # every kernel of the file
    assert main(["compile", f"{kernel_file}:scale"]) == 0
    assert "arith.constant 64" in capsys.readouterr().out


def test_a_define_replaces_the_example_problems_constexpr(kernel_file: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", f"{kernel_file}:scale", "-D", "BLOCK=48"]) == 0
    out = capsys.readouterr().out
    assert "arith.constant 48" in out and "arith.constant 64" not in out
    assert main(["verify", f"{kernel_file}:scale", "-D", "BLOCK=48"]) == 0
    assert main(["verify", str(kernel_file), "-D", "BLOCK=48"]) == 0  # (plain has no BLOCK: not given one)
    capsys.readouterr()
    # BLOCK = 32 with the example's 2 blocks leaves elements 64..99 unwritten: run says so
    assert main(["run", f"{kernel_file}:scale", "-D", "BLOCK=32"]) == 2
    assert "scale does not match the reference" in capsys.readouterr().err
    assert main(["run", f"{kernel_file}:scale", "-D", "BLOCK=64"]) == 0


@pytest.mark.parametrize("command", ["run", "verify", "compile"])
@pytest.mark.parametrize("define, message", [
    ("n=5", "-D n: 'n' is a runtime argument of scale, not a constexpr"),
    ("BLOCKS=64", "-D BLOCKS: scale has no parameter 'BLOCKS' (its constexprs: BLOCK)"),
])
def test_a_define_naming_no_constexpr_is_an_error(kernel_file: Path, capsys: pytest.CaptureFixture[str],
                                                  command: str, define: str, message: str) -> None:
    assert main([command, f"{kernel_file}:scale", "-D", define]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and "Traceback" not in err


def test_verify_of_a_file_names_a_define_no_kernel_takes(kernel_file: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(kernel_file), "-D", "TILE=4"]) == 2
    assert "-D TILE: no kernel of" in capsys.readouterr().err


def test_a_constexpr_without_a_value_names_what_to_give(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bare.py"
    path.write_text(SOURCE.split("def example_scale")[0])
    for command in ("verify", "compile"):
        assert main([command, f"{path}:scale"]) == 2
        assert "scale has constexpr parameters ['BLOCK'] without a value: give them with -D" in capsys.readouterr().err
    assert main(["verify", f"{path}:scale", "-D", "BLOCK=64"]) == 0


TILE = 16


@kernel(block=(16,))
def _fixed_by_module_int(x: Tensor[f32, TILE]):
    x[thread_idx.x] = 1.0


def test_a_dim_named_by_a_module_int_is_that_size():
    """`Tensor[f32, TILE]` with `TILE = 16` in the module is a tensor of 16 elements, not a size
    named "TILE" known only at launch (which a launch could make 1)."""
    assert str(_fixed_by_module_int.specialize().op.body.block.args[0].type) == "!argus.tensor<f32, [16]>"
    assert _fixed_by_module_int.verify().verdict is not Verdict.VIOLATED
    with pytest.raises(ArgusLaunchError):
        _fixed_by_module_int[(1,)](np.zeros(8, np.float32))
