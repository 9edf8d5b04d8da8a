"""From a kernel's Python syntax tree to the ``argus`` dialect (see core.py)."""

from .core import FrontEnd
from .values import KernelSource, Slot, TensorRef, TileRef, Value

__all__ = ["FrontEnd", "KernelSource", "Slot", "TensorRef", "TileRef", "Value"]
