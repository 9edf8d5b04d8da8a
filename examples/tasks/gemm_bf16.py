"""A bf16 GEMM, C = A·Bᵀ (KernelBench form), to optimize from the naive example kernel.

    argus optimize examples/tasks/gemm_bf16.py --rounds 30 --out runs/gemm

The reference is torch.matmul (cuBLAS on the GPU, which is what the speedups are measured
against); the kernel starts as examples/gemm.py (64×64 tiles, mma.sync, no pipelining) and
keeps its arguments: A and B in bf16, C in f32. Tests run at the small shapes, the time at 4096³.
"""

import torch

M, N, K = 4096, 4096, 4096
ARGUS_TASK = {
    "kernel": "../gemm.py:gemm",
    "family": "gemm",
    "target": "nvptx:sm_90a",
    "shapes": [{"M": 256, "N": 256, "K": 512}, {"M": 512, "N": 256, "K": 1024}],
    "bench_shape": {"M": 4096, "N": 4096, "K": 4096},
}


class Model(torch.nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(M, K, dtype=torch.bfloat16), torch.randn(N, K, dtype=torch.bfloat16)]


def get_init_inputs() -> list[object]:
    return []
