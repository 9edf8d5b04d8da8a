"""Sizes past which the language refuses a kernel; each backend checks its own, smaller, limits.

They bound what reading one kernel may cost: a kernel past one is refused with its line and the
limit, never left to exhaust the compiler's stack, memory or time."""

#: Most iterations a static_range may unroll into.
MAX_UNROLL = 4096
#: Most iterations static loops nested in one another may unroll into together.
MAX_UNROLLED = 1 << 16
#: Most operations a kernel may be traced into (static loops unrolled, device functions inlined).
MAX_OPS = 1 << 17
#: Most threads a block may have (NVIDIA's and AMD's limit alike).
MAX_BLOCK_THREADS = 1024
#: Largest shared tile (bytes per block) and local tile (bytes per thread).
MAX_SHARED_BYTES = 256 * 1024
MAX_LOCAL_BYTES = 16 * 1024
#: Deepest nesting of expressions and statements in a kernel or device function (an operand
#: of an operand of ..., a block in a block in ...).
MAX_NESTING = 100
#: Widest compile-time integer, in bits.
MAX_CONSTANT_BITS = 256
#: Longest compile-time string or tuple.
MAX_CONSTANT_LENGTH = 1 << 16
