"""Op families: each module declares the meaning of a family of ops once; every consumer (the
interpreter, the shadow interpreter, the static checker, launch conditions, the LLVM lowering's
tests) reads it from here, so that no two of them can disagree about what an op computes."""

#: The core language's op families, each a module of this package that defines its ops' meaning.
FAMILIES = ("indices", "sync", "tags", "control", "products", "warp", "memory", "tiles", "bits", "arithmetic", "math")


def define_core() -> None:
    """Define every core op family (`argus.dsl.ir.registry.install` calls it once)."""
    from importlib import import_module

    for family in FAMILIES:
        import_module(f"{__name__}.{family}")
