"""The test recipe as a recipes file for ``argus optimize --recipes``."""

from pathlib import Path

from argus.harness import TemplateRecipe

RECIPES = [TemplateRecipe("tile-shape", "GEMM tile shape", (Path(__file__).parent / "tiled_gemm.py").read_text(),
                          {"BM": (16, 32), "BN": (16, 32), "BK": (4, 8)}, families=("gemm",),
                          summary="choose the block tile of C and the K slice", constraints=("M % BM == 0",))]
