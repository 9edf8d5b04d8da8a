import sys, time, cProfile, pstats
sys.path.insert(0, "examples")
import torch
import gemm_tma as g
k = g.gemm_tma
m = n = kk = 1024
a = torch.randn(m, kk, device="cuda").to(torch.bfloat16); b = torch.randn(n, kk, device="cuda").to(torch.bfloat16)
c = torch.empty((m, n), device="cuda")
grid = (n // g.BN, m // g.BM)
k[grid](a, b, c, m, n, kk); torch.cuda.synchronize()
for _ in range(3):
    t = time.perf_counter()
    for _ in range(1000):
        k[grid](a, b, c, m, n, kk)
    t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
    print(f"host per launch {(t1 - t) * 1e3:.1f} us, with GPU {(t2 - t) * 1e3:.1f} us", flush=True)
t = time.perf_counter()
for _ in range(1000):
    torch.matmul(a, b.T)
torch.cuda.synchronize(); print(f"torch.matmul per call {(time.perf_counter() - t) * 1e3:.1f} us")
pr = cProfile.Profile(); pr.enable()
for _ in range(1000):
    k[grid](a, b, c, m, n, kk)
pr.disable(); torch.cuda.synchronize()
pstats.Stats(pr).sort_stats("tottime").print_stats(25)
