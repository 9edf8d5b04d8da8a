"""Recipes as the planners use them: the knowledge base's recipes instantiate to candidates in
the accepted format, with a launch grid read off their example problems."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from argus.harness import PlannerConfig, RecipeBook, TemplateRecipe, extract_candidate, load_task, parse_candidate
from argus.harness.kb import failed_assumption
from argus.harness.loader import load_candidate
from argus.harness.planners.search import SearchPlanner
from argus.harness.planning import Observation, Plan
from harness_testing import DATA, gemm_template, tile_recipe

ROOT = Path(__file__).resolve().parents[3]


def test_a_template_recipe_instantiates_each_point() -> None:
    recipe = tile_recipe()
    text = recipe.instantiate({"BM": 32, "BN": 16, "BK": 8})
    candidate = parse_candidate(text)
    assert "BM, BN = 32, 16" in text and "BK = 8" in text and candidate.grid == ("M", "N", "K")
    assert recipe.admits({"BM": 32, "BN": 16, "BK": 8}, {"M": 64}) and not recipe.admits(
        {"BM": 32, "BN": 16, "BK": 8}, {"M": 48})


def test_the_grid_of_an_example_problem_becomes_the_candidates() -> None:
    text = (ROOT / "examples" / "gemm.py").read_text()
    assert "def grid(M, N, K):\n    return (N // BN, M // BM)" in extract_candidate(text, "gemm").text


def test_knowledge_base_recipes_instantiate_in_the_candidate_format(tmp_path: Path) -> None:
    """Every GEMM recipe becomes a candidate whose kernel builds and whose grid, with every
    constant it names, evaluates at a shape."""
    book = RecipeBook()
    recipes = book.recipes("nvptx:sm_90a", "gemm")
    assert recipes and not book.unavailable, book.unavailable
    for recipe in recipes:
        candidate = parse_candidate(recipe.instantiate(recipe.defaults()))
        assert candidate.grid is not None, recipe.id
        loaded = load_candidate(candidate, tmp_path / f"{recipe.id}.py")
        assert loaded.grid_node is not None, recipe.id
        grid = loaded.grid({a.arg: 1024 for a in loaded.grid_node.args.args})
        assert 1 <= len(grid) <= 3 and all(d >= 1 for d in grid), (recipe.id, grid)


def test_a_constraint_may_name_a_constant_of_the_recipes_code() -> None:
    """``setmaxnreg``'s exchange must balance against the kernel's REGS, which the code fixes
    and no point sets: a point that takes more than is given back is never proposed (on the
    GPU it would wait for registers forever)."""
    template = "REGS = 128\nSHARE = 2 * REGS\nGIVE = 40\nTAKE = 216\n" + gemm_template()
    recipe = TemplateRecipe("regs", "registers", template, {"GIVE": (40, 56), "TAKE": (216, 240)},
                            constraints=("GIVE + TAKE <= SHARE",))
    assert recipe.admits({"GIVE": 40, "TAKE": 216}, {})
    assert not recipe.admits({"GIVE": 56, "TAKE": 240}, {})


def test_a_kernels_assumptions_are_judged_at_a_shape_from_its_text() -> None:
    text = tile_recipe().instantiate({"BM": 32, "BN": 16, "BK": 8})
    assert failed_assumption(text, {"M": 48, "N": 32, "K": 16}) == "assume(M % BM == 0)"
    assert failed_assumption(text, {"M": 64, "N": 32, "K": 12}) == "assume(K % BK == 0)"
    assert failed_assumption(text, {"M": 64, "N": 32, "K": 16}) is None
    assert failed_assumption(text, {"rows": 48}) is None  # sizes under other names: not judged here


@pytest.mark.parametrize("constraints", [("M % BM == 0",), ()], ids=["by-constraint", "by-assumption"])
def test_the_search_proposes_no_point_a_test_shape_cannot_run(tmp_path: Path, constraints: tuple[str, ...]) -> None:
    """BM = 32 fits the timed shape (M = 64) but not the second test shape (M = 48): the
    kernel assumes whole tiles, so that candidate could only fail its tests. The planner leaves
    it out whether the recipe states the constraint or only its kernel assumes it."""
    task = load_task(str(DATA / "gemm_task.py"), shapes=[{"M": 32, "N": 32, "K": 16}, {"M": 48, "N": 32, "K": 16}],
                     bench_shape={"M": 64, "N": 64, "K": 16})
    recipe = replace(tile_recipe(), constraints=constraints)
    planner = SearchPlanner(PlannerConfig(task, tmp_path, RecipeBook([recipe], use_kb=False),
                                          policy_path=tmp_path / "policy.json"))
    proposed = []
    for round_ in range(1, 6):  # each round's points count as tried, as after lowering them
        observation = Observation(task, round_, 5, task.initial.text, None, None, None, [], "")
        for proposal in planner.propose(observation):
            planner.lower(Plan(proposal, proposal.parameters, ""), observation)
            proposed.append((proposal.parameters["BM"], proposal.parameters["BN"], proposal.parameters["BK"]))
    # every admissible point once, but the baseline's own (16, 16, 4), the kernel being improved
    assert sorted(proposed) == [(16, 16, 8), (16, 32, 4), (16, 32, 8)]


def test_a_recipe_constraint_outside_the_expression_language_names_the_recipe() -> None:
    from argus.harness import PlannerError

    with pytest.raises(PlannerError, match=r"recipe tile-shape: constraint 'open\(1\)' calls something other than"):
        replace(tile_recipe(), constraints=("open(1)",))
    undecided = replace(tile_recipe(), constraints=("M % (BM - BM) == 0",))
    assert undecided.admits({"BM": 32, "BN": 16, "BK": 8}, {"M": 64})  # a division by zero decides nothing


def test_the_interpreter_gets_the_recipes_written_for_any_target() -> None:
    book = RecipeBook()
    recipes = book.recipes("interp", "gemm", (ROOT / "examples" / "gemm.py").read_text(), {"M": 256})
    assert not book.unavailable and recipes
    assert all("any" in r.targets for r in recipes)


def test_a_recipe_whose_code_is_written_for_another_target_is_not_offered() -> None:
    """matrix-core-matmul covers NVIDIA and AMD, but its code is AMD's (TARGETS, wave64): an
    NVIDIA task would only see it refused at launch."""
    book = RecipeBook()
    assert "matrix-core-matmul" not in {r.id for r in book.recipes("nvptx:sm_90a", "gemm")}
    assert "matrix-core-matmul" in {r.id for r in book.recipes("amdgpu:gfx942", "gemm")}


def test_an_example_constant_named_like_a_size_neither_decides_a_constraint_nor_joins_the_candidate() -> None:
    """A recipe's module may set ``M = 48`` for its example; the task's M is another thing: a
    constraint over M stays undecided when the task gives no M, and the candidate's grid takes
    M as its parameter without the module's M."""
    template = gemm_template() + "\nM = 48\n"
    recipe = TemplateRecipe("sized", "sized", template, {"BM": (16, 32)}, constraints=("M % BM == 0",))
    assert recipe.admits({"BM": 32}, {})  # 48 % 32 != 0, but the task's M is unknown here
    assert not recipe.admits({"BM": 32}, {"M": 48}) and recipe.admits({"BM": 16}, {"M": 48})
    candidate = recipe.instantiate({"BM": 32})
    assert "M = 48" not in candidate and "def grid(" in candidate
