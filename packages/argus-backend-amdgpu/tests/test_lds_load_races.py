"""`buffer_load_lds` over words other lanes of the wave read: the load is the issuing thread's
write of the tile at the issue, so another lane's earlier read is ordered before it only by a
barrier between them (as for a cp.async copy landing later, see the nvptx backend's tests)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from argus.backends.amdgpu import language as amd
from argus.dsl import KernelFault, Tensor, kernel, make_shared, syncthreads, thread_idx, u32
from argus.dsl.machine import using


@pytest.fixture(autouse=True)
def unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def load_over_neighbour(ordered: bool) -> Any:
    """Each lane reads its neighbour's word s[t+1], then loads x[64+t] into its own s[t]
    (`ordered`: a barrier between the reads and the loads)."""

    @kernel(block=(64,), warp_size=64)
    def shift(x: Tensor[u32, 128], out: Tensor[u32, 64]):
        s = make_shared((64,), u32)
        t = thread_idx.x
        s[t] = x[t]
        syncthreads()
        v = s[(t + 1) % 64]
        if ordered:
            syncthreads()
        amd.buffer_load_lds(s, (t,), x, (64 + t,))
        syncthreads()
        out[t] = v + s[t]

    return shift


@pytest.mark.parametrize("schedule", ["round-robin", "delay-async", "random:1"])
def test_a_load_into_lds_over_a_word_another_lane_read_races(schedule: str) -> None:
    x = np.arange(128, dtype=np.uint32)
    out = np.zeros(64, np.uint32)
    with using(schedule):
        with pytest.raises(KernelFault, match=rf"data-race: thread 0 writes byte 0 of shared#0 and thread 63 read it "
                                              rf"at .*, with nothing ordering the two \(schedule {schedule}\)"):
            load_over_neighbour(False)[1](x, out)
        load_over_neighbour(True)[1](x, out)
    t = np.arange(64)
    np.testing.assert_array_equal(out, (t + 1) % 64 + 64 + t)
