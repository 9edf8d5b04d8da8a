"""Op families: each module declares the meaning of a family of ops once; every consumer (the
interpreter, the shadow interpreter, the static checker, launch conditions, the LLVM lowering's
tests) reads it from here, so that no two of them can disagree about what an op computes."""
