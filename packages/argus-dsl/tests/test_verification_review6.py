"""The static tag checker against concrete launches: shared reads whose data a later tag
function on a register tile replaces.

Each `xfail` test builds a launch inside the documented domain (accesses in bounds, no
declared assumption broken) on which the interpreter finds a problem, and asks the checker not
to answer `proved` for the kernel and not to fail with anything but an `ArgusError`."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl import (
    Tensor,
    bf16,
    kernel,
    make_local,
    make_shared,
    syncthreads,
    tag,
    thread_idx,
    to_storage,
)

pytestmark = pytest.mark.usefixtures("no_result_cache")


# ---- a racy shared read into registers that are re-tagged afterwards ---------------------------


@kernel(block=(32,), verify=False)
def racy_read_retagged(x: Tensor[bf16, 32]):
    tag(x, lambda i: (i,))
    s = make_shared((32,), bf16)
    s[thread_idx.x] = x[thread_idx.x]
    r = make_local((1,), bf16)
    r[0] = s[(thread_idx.x + 1) % 32]  # another thread's write, no barrier between
    tag(r, lambda i: (0,))  # relabels the registers; the read above still races
    syncthreads()
    got = make_local((1,), bf16)
    got[0] = s[thread_idx.x]
    want = make_local((1,), bf16)
    tag(want, lambda i: (thread_idx.x,))
    assert tag(got[...]) == tag(want[...]), "s holds x"


def test_a_racy_shared_read_into_registers_that_are_retagged(races):
    races(racy_read_retagged, (1,), to_storage(np.zeros(32), bf16))
