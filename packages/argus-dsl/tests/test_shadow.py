"""Shadow tags: tag assertions checked on real launches, with witnesses for violations."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from argus.dsl import Tensor, bf16, kernel, make_local, make_shared, syncthreads, tag, thread_idx
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def load(directory: Path, name: str, replace: tuple[str, str] | None = None):
    """The flash-attention example, optionally with one source change, imported from `directory`."""
    text = (EXAMPLES / "flash_attention.py").read_text()
    if replace is not None:
        assert replace[0] in text
        text = text.replace(*replace)
    target = directory / f"{name}.py"
    target.write_text(text)
    spec = importlib.util.spec_from_file_location(f"shadow_{name}", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, target


def test_the_flash_attention_example_keeps_its_tag_assertions(tmp_path):
    module, _ = load(tmp_path, "original")
    p = module.example_attention(np.random.default_rng(0))
    result = check_launch(module.attention, p.grid, *p.args, **p.constants)
    assert result.verdict is Verdict.PROVED, result.text()


def test_a_wrong_fragment_index_is_caught_with_a_replayable_witness(tmp_path):
    module, path = load(tmp_path, "mutant", ("ks * 16 + 2 * t0 + v0 + 8 * v1]", "ks * 16 + 2 * t0 + v0 + 8 * (1 - v1)]"))
    p = module.example_attention(np.random.default_rng(0))
    result = check_launch(module.attention, p.grid, *p.args, **p.constants)
    assert result.verdict is Verdict.VIOLATED
    w = result.witnesses[0]
    lines = path.read_text().splitlines()
    assert_line = int(w["assertion"].rsplit(":", 2)[1])
    assert "assert tag(qf[:, 0, :, ks][...]) == tag(kf[:, :, j][...])" in lines[assert_line - 1]
    written = int(w["rhs written at"].rsplit(":", 2)[1])
    assert "kf[v0, v1, j] = sK[" in lines[written - 1]
    assert w["kind"] == "violated" and w["message"] == "Q and K pair up along d"
    # the runtime loop over key tiles, and the static loops kept rolled around the assertion
    assert set(w["loops"]) == {"kj", "ks", "j"} and 0 <= w["thread"] < 32
    assert 0 <= w["loops"]["ks"] < p.constants["D"] // 16 and 0 <= w["loops"]["j"] < 2
    head, d = w["lhs tag"]
    assert w["rhs tag"][1] != d  # K's d differs from Q's d at the same fragment position


@kernel(block=(32,))
def staged(q: Tensor[bf16, 32, 8], k: Tensor[bf16, 32, 8]):
    tag(q, lambda s, d: (s, d))
    tag(k, lambda s, d: (s, d))
    sq = make_shared((32, 8), bf16)
    for d in range(8):
        sq[thread_idx.x, d] = q[(thread_idx.x + 1) % 32, d]  # shifted by one row
    syncthreads()
    assert tag(sq[...]) == tag(k[...]), "staged Q rows line up with K rows"


def test_a_shifted_copy_names_thread_element_and_both_tags():
    x = np.zeros((32, 8), np.uint16)
    result = check_launch(staged, 1, x, x.copy())
    w = result.witnesses[0]
    assert result.verdict is Verdict.VIOLATED and w["element"] == (0, 0)
    assert w["lhs tag"] == (1, 0) and w["rhs tag"] == (0, 0)


@kernel(block=(32,))
def reads_nothing(q: Tensor[bf16, 32]):
    tag(q, lambda s: s)
    r = make_local((32,), bf16)
    r[0] = q[0]
    assert tag(r[...]) == tag(q[...])


def test_comparing_unwritten_data_is_reported_as_such():
    result = check_launch(reads_nothing, 1, np.zeros(32, np.uint16))
    assert result.verdict is Verdict.VIOLATED
    w = result.witnesses[0]
    assert w["kind"] == "unwritten" and w["element"] == (1,) and w["lhs tag"] == "⊥" and w["rhs tag"] == (1,)


def test_an_mma_whose_operands_do_not_pair_up_is_caught_without_an_assertion(tmp_path):
    """The same wrong K fragment with the explicit assertion removed: the product itself checks
    that A[m, k] and B[n, k] carry equal tags."""
    text_change = ("ks * 16 + 2 * t0 + v0 + 8 * v1]", "ks * 16 + 2 * t0 + v0 + 8 * (1 - v1)]")
    module, path = load(tmp_path, "no_assert", text_change)
    source = path.read_text().replace(
        '                assert tag(qf[:, 0, :, ks][...]) == tag(kf[:, :, j][...]), "Q and K pair up along d"\n', "")
    path.write_text(source)
    module, path = load_file(path)
    p = module.example_attention(np.random.default_rng(0))
    result = check_launch(module.attention, p.grid, *p.args, **p.constants)
    assert result.verdict is Verdict.VIOLATED
    w = result.witnesses[0]
    assert "must pair up" in w["assertion"] and set(w["element"]) == {"m", "n", "k"}
    assert w["lhs tag"][1] != w["rhs tag"][1]


def load_file(path: Path):
    spec = importlib.util.spec_from_file_location(f"shadow_{path.stem}_edited", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path
