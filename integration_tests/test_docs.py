"""The examples in the guides and READMEs are run: what the documentation shows is what Argus does."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [
    ROOT / "docs" / "layout.md",
    ROOT / "packages" / "argus-layout" / "README.md",
    ROOT / "packages" / "argus-verify" / "README.md",
    ROOT / "README.md",
]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_examples_run_as_shown(document: Path) -> None:
    text = document.read_text()
    blocks = PYTHON_BLOCK.findall(text)
    assert blocks, f"{document} has no python examples"
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    globs: dict[str, object] = {}
    for i, block in enumerate(blocks):
        test = parser.get_doctest(block, globs, f"{document.name}[block {i}]", str(document), 0)
        runner.run(test, clear_globs=False)
        globs = test.globs  # later blocks see what earlier ones defined
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} example(s) in {document.name} do not do what they show"
