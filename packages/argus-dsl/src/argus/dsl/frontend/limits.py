"""Sizes past which the language refuses a kernel; each backend checks its own, smaller, limits."""

#: Most iterations a static_range may unroll into.
MAX_UNROLL = 4096
#: Largest shared tile (bytes per block) and local tile (bytes per thread).
MAX_SHARED_BYTES = 256 * 1024
MAX_LOCAL_BYTES = 16 * 1024
