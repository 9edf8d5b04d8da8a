"""Recipes as the planners use them: the knowledge base's recipes instantiate to candidates in
the accepted format, with a launch grid read off their example problems."""

from __future__ import annotations

from pathlib import Path

import pytest
from argus.harness import RecipeBook, extract_candidate, parse_candidate
from harness_testing import DATA, tile_recipe

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
    assert (DATA / "tiled_gemm.py").is_file()


def test_knowledge_base_recipes_instantiate_in_the_candidate_format() -> None:
    pytest.importorskip("argus.kb")
    book = RecipeBook()
    recipes = book.recipes("nvptx:sm_90a", "gemm")
    if not recipes:
        pytest.skip(f"the knowledge base offers no recipe here ({book.unavailable or 'none for nvptx/gemm'})")
    made = 0
    for recipe in recipes:
        candidate = parse_candidate(recipe.instantiate(recipe.defaults()))
        made += candidate.grid is not None
    assert made == len(recipes)
