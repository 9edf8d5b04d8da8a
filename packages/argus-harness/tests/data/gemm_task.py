"""A numpy-form task: C = A·Bᵀ in f32, starting from the tiled GEMM next to this file."""

import numpy as np

M, N, K = 32, 32, 16
ARGUS_TASK = {"kernel": "tiled_gemm.py:gemm", "family": "gemm"}


def get_inputs(rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.standard_normal((M, K)), rng.standard_normal((N, K))]


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a @ b.T
