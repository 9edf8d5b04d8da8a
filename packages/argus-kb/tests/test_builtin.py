"""The built-in pack covers what the knowledge base promises: every optimization of the
paper's Table 1, their Hopper counterparts, attention and MoE recipes, hardware facts and DSL
reference; every recipe has invariants, sources and a verified snippet or a stated gap."""

from __future__ import annotations

from argus.kb import KnowledgeBase
from argus.kb.packs import BUILTIN

KB = KnowledgeBase.load([BUILTIN])

TABLE_1 = {"software-pipelining", "split-k", "matrix-core-matmul", "stagger-k", "async-copies",
           "bank-conflict-swizzle", "vectorized-loads", "loop-unrolling", "workgroup-swizzling", "oob-guarded-loads",
           "agprs", "instruction-scheduling"}
HOPPER = {"wgmma", "tma-mbarrier-pipeline", "warp-specialization", "setmaxnreg", "persistent-tiles",
          "cluster-multicast", "async-warpgroup-gemm"}
ATTENTION = {"online-softmax", "v-transpose", "gqa-packing", "causal-block-skipping"}
MOE = {"moe-token-sorting", "fp8-requantization", "expert-parallel-grid"}


def test_the_promised_recipes_are_there() -> None:
    recipes = {e.id for e in KB if e.kind == "recipe"}
    assert TABLE_1 | HOPPER | ATTENTION | MOE <= recipes
    assert {e.id for e in KB if e.kind == "hardware-fact"} >= {"h200-hopper", "mi300x-cdna3"}
    assert len([e for e in KB if e.kind == "dsl-reference"]) >= 2


def test_every_recipe_is_complete() -> None:
    for e in KB:
        assert e.sources, e.id
        if e.kind != "recipe":
            continue
        assert e.invariants and e.benefit and e.transformation and e.controls and e.applies_when, e.id
        assert bool(e.snippets) != bool(e.dsl_gap), e.id
        assert e.benefit.speedup is not None and e.benefit.limit is not None, e.id
    assert not [e.id for e in KB if e.dsl_gap]  # every recipe here has verified code


def test_the_snippets_of_a_recipe_share_their_kernel_name_and_differ() -> None:
    import ast

    for e in KB:
        if e.kind == "recipe" and e.snippets:
            names = [{n.name for n in ast.parse(s.code).body if isinstance(n, ast.FunctionDef)
                      and any("kernel" in ast.unparse(d) for d in n.decorator_list)} for s in e.snippets]
            assert names[0] == names[1] and names[0], e.id
            assert e.snippet("before").code != e.snippet("after").code, e.id
