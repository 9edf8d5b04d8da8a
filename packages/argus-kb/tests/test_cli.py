"""``argus kb list|show|search`` (and ``argus-kb``): output, JSON for programs, errors as one
``error:`` line with status 2, and the verb reaching the ``argus`` command as a plugin."""

from __future__ import annotations

import json
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from argus.kb.cli import KB, main

GEMM = '''
from argus.dsl import kernel, make_shared, matmul, syncthreads, warp_mma_16x8x16, bf16, f32
MMA = warp_mma_16x8x16(bf16, bf16, f32)

@kernel(block=(32,))
def gemm(a: Tensor[bf16, "M", "K"], b: Tensor[bf16, "N", "K"], c: Tensor[f32, "M", "N"], M: int, N: int, K: int):
    s = make_shared((16, 16), bf16)
    for k0 in range(0, K, 16):
        syncthreads()
        matmul(x, y, z, MMA)
'''


@pytest.fixture(autouse=True)
def only_builtin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_DISABLE_PLUGINS", "no-such-plugin")
    from argus.kb import packs

    monkeypatch.setattr(packs, "entry_points", lambda group: [])


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_list_filters_and_prints_one_line_per_entry(capsys) -> None:
    status, out, _ = run(capsys, "list", "--target", "amdgpu:gfx942", "--kind", "recipe")
    lines = out.splitlines()
    assert status == 0 and any(line.startswith("agprs ") for line in lines)
    assert not any(line.startswith("wgmma ") for line in lines) and all("recipe" in line for line in lines)
    status, out, _ = run(capsys, "list", "--family", "attention", "--json")
    data = json.loads(out)
    assert status == 0 and {"online-softmax", "gqa-packing"} <= {d["id"] for d in data}


def test_show_prints_the_file_or_its_data(capsys) -> None:
    status, out, _ = run(capsys, "show", "split-k")
    assert status == 0 and out.startswith("---\nid: split-k\n") and "```python after" in out
    status, out, _ = run(capsys, "show", "split-k", "--json")
    data = json.loads(out)
    assert data["parameters"][0] == {"name": "SPLITS", "says": "blocks sharing one output tile",
                                     "values": [2, 3, 4, 8, 16], "default": 2}
    assert data["applies-when"] == [{"uses": ["matmul", "range"]}, {"shape": "K >= 4 * max(M, N)"}]


def test_search_describes_a_kernel_file_and_explains_the_ranking(capsys, tmp_path: Path) -> None:
    kernel = tmp_path / "gemm.py"
    kernel.write_text(GEMM)
    status, out, _ = run(capsys, "search", "pipeline", "--kernel", str(kernel), "--target", "nvptx:sm_90a",
                         "--family", "gemm", "--size", "M=4096", "--size", "N=4096", "--size", "K=4096",
                         "--limit", "2")
    assert status == 0
    assert out.splitlines()[0].split()[:2] == ["12.0", "tma-mbarrier-pipeline"]
    assert "score: target nvptx:sm_90a +2; family gemm +2; applies +3" in out
    assert "applies: target nvptx:sm_90a has tma; uses matmul" in out
    status, out, _ = run(capsys, "search", "split", "--kernel", str(kernel), "--target", "nvptx:sm_90a", "--json")
    hits = {h["id"]: h for h in json.loads(out)}
    assert hits["split-k"]["applies"] == "unknown" and "needs sizes K, M, N" in hits["split-k"]["why"][0]
    status, out, _ = run(capsys, "search", "zebra", "giraffe")
    assert status == 0 and out == "no entry matches\n"


@pytest.mark.parametrize("argv, message", [
    (["show", "split-kk"], "error: no entry 'split-kk' (did you mean split-k?)"),
    (["list", "--family", "gemms"], "error: unknown family 'gemms'"),
    (["search", "--kernel", "/no/such/file.py"], "error: no such kernel file: /no/such/file.py"),
    (["search", "--size", "K=4096"], "error: --size describes a kernel: give --kernel FILE too"),
    (["search", "--kernel", __file__, "--size", "K=big"], "error: --size takes NAME=INT, got 'K=big'"),
    (["search", "x", "--limit", "0"], "error: --limit takes a positive int, got 0"),
    ([], "error: say what to do"),
])
def test_errors_are_one_line_and_status_2(capsys, argv: list[str], message: str) -> None:
    status, out, err = run(capsys, *argv)
    assert status == 2 and err.startswith(message), err


def test_the_verb_is_a_plugin_of_the_argus_command(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("argus.dsl")
    from argus.dsl import cli as argus_cli
    from argus.verify import plugins

    ep = EntryPoint("kb", "argus.kb.cli:KB", "argus.commands")
    monkeypatch.setattr(plugins, "entry_points", lambda group: [ep] if group == "argus.commands" else [])
    assert argus_cli.main(["kb", "show", "agprs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == "agprs"
    assert argus_cli.main(["kb", "show", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: no entry 'nope'")
    assert KB.name == "kb" and callable(KB.configure) and callable(KB.run)


def test_the_installed_distribution_registers_the_pack_and_the_verb() -> None:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        eps = distribution("argus-kb").entry_points
    except PackageNotFoundError:
        pytest.skip("argus-kb is not installed (entry points exist only in an installed distribution)")
    assert {(ep.group, ep.name, ep.value) for ep in eps} >= {
        ("argus.kb", "argus", "argus.kb.packs:BUILTIN"), ("argus.commands", "kb", "argus.kb.cli:KB")}
    assert next(ep for ep in eps if ep.group == "argus.kb").load().files()
