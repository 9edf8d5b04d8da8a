"""A KernelBench-form task: C = A·Bᵀ, starting from the tiled GEMM next to this file."""

import torch

M, N, K = 32, 32, 16
ARGUS_TASK = {"kernel": "tiled_gemm.py:gemm"}


class Model(torch.nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(M, K), torch.randn(N, K)]


def get_init_inputs() -> list[object]:
    return []
