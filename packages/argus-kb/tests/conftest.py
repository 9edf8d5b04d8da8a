"""Helpers for writing entry files in tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

#: A minimal valid recipe without snippets (it says why in dsl-gap); tests edit its lines.
RECIPE = """\
---
id: sample-recipe
title: A sample recipe
kind: recipe
summary: Something to apply.
targets: [nvptx:sm_90a]
families: [gemm]
keywords: [sample, pipeline]
applies-when:
  - uses: matmul
transformation: Do the thing.
controls: [syncthreads]
invariants:
  - id: pairing
    says: operands pair up
    template: |
      tag({A}, lambda m, k: (k,))
    example: {A: a}
benefit: It is faster.
dsl-gap: The language cannot show it.
sources: [somewhere]
---

Body text.
"""


@pytest.fixture
def write(tmp_path: Path):
    """`write(name, text)`: an entry file in a fresh directory, dedented."""
    def make(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return make
