"""Symbolic integer expressions, so that a layout applied to a symbol gives its formula.

The layout code evaluates layouts with plain Python operators (``+ - * // % & | ^ >> <<``).
An `Expr` supports the same operators with exactly Python's integer semantics (floor
division toward -inf, ``%`` taking the divisor's sign, two's-complement bit operations), so
the same code that computes an offset from an int computes an expression from a `Var`.

Expressions are simplified eagerly, as nodes are built. Every rewrite is an identity for all
values of the variables inside their declared ranges; where a rewrite depends on a range it
is decided by interval analysis (`Expr.bounds`). A result that folds to a constant is
returned as a plain ``int``, so an `Expr` is never constant.

Equality (``==``) and hashing are structural: ``i % 4 + i // 4 * 4 == i`` is ``True``
because the left side simplifies to ``i``, not because anything was proved. Normal forms:

* a sum is an integer linear combination of non-sum atoms plus a constant, terms in a
  canonical order; a product distributes over sums and is a sorted tuple of atoms;
* ``x // c`` and ``x % c`` keep only a positive constant ``c`` (a negative one is moved
  into the numerator); ``x >> k`` and ``x << k`` become ``x // 2**k`` and ``x * 2**k``;
* ``x & m`` with a contiguous run of ones ``m`` becomes div/mod arithmetic.

Build expressions with the operators; the node classes (`Sum`, `Product`, `FloorDiv`,
`Mod`, `BitAnd`, `BitOr`, `BitXor`) are public so a consumer can walk the tree, but their
constructors do not simplify.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from typing import Any, Union

from .errors import LayoutError

__all__ = [
    "BitAnd",
    "BitOr",
    "BitXor",
    "Expr",
    "FloorDiv",
    "Mod",
    "Product",
    "Sum",
    "SymbolicError",
    "Value",
    "Var",
    "bounds",
    "const",
    "evaluate",
]

Value = Union[int, "Expr"]
"""What an operator on expressions returns: an ``int`` when the result is constant."""

Bounds = tuple[int | None, int | None]
"""Inclusive interval; ``None`` is unbounded on that side."""


class SymbolicError(LayoutError):
    """An operation has no meaning on a symbolic value (truth value, variable shift, ...)."""


# Printing precedences, as in Python's grammar (higher binds tighter).
_OR, _XOR, _AND, _ADD, _MUL, _UNARY, _ATOM = range(1, 8)


def _operator(build: Callable[[Any, Any], Any], reflected: bool = False) -> Callable[[Any, Any], Any]:
    """An operator method: ``build(self, other)`` (or ``build(other, self)`` when reflected)
    after coercing `other`; NotImplemented for operands that are not integers or expressions."""

    def method(self: Any, other: Any) -> Any:
        o = _coerce(other)
        if o is NotImplemented:
            return NotImplemented
        return build(o, self) if reflected else build(self, o)

    return method


class Expr:
    """An immutable symbolic integer. Never constant: constants are plain ``int``."""

    __slots__ = ("_bounds", "_hash", "_key", "_vars")
    # Make numpy scalars (e.g. an np.int64 stride) defer to our reflected operators.
    __array_ufunc__ = None

    _key: tuple[Any, ...]
    _hash: int
    _bounds: Bounds | None
    _vars: frozenset[Var]

    def _finish(self, key: tuple[Any, ...], hsh: int, vars_: frozenset[Var]) -> None:
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_hash", hsh)
        object.__setattr__(self, "_bounds", None)
        object.__setattr__(self, "_vars", vars_)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __copy__(self) -> Expr:
        return self

    def __deepcopy__(self, memo: Any) -> Expr:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._fields())

    def _fields(self) -> tuple[Any, ...]:
        raise NotImplementedError

    # ---- structure -------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        """Structural equality (after simplification); never a constraint."""
        if self is other:
            return True
        if not isinstance(other, Expr):
            return NotImplemented
        return self._hash == other._hash and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __bool__(self) -> bool:
        raise SymbolicError("bool", "a symbolic value has no truth value", self)

    def __index__(self) -> int:
        raise SymbolicError("int", "a symbolic value is not an integer constant", self)

    __int__ = __index__

    def free_vars(self) -> frozenset[Var]:
        """The variables the expression depends on."""
        return self._vars

    def bounds(self) -> Bounds:
        """Inclusive interval containing every value the expression takes for in-range variables."""
        if self._bounds is None:
            object.__setattr__(self, "_bounds", self._compute_bounds())
        return self._bounds  # type: ignore[return-value]

    def _compute_bounds(self) -> Bounds:
        raise NotImplementedError

    def evaluate(self, env: Mapping[str, int] | Mapping[Var, int]) -> int:
        """Value for the given variable values (by `Var` or by name); must be in range."""
        return self._eval(env, {})

    def _eval(self, env: Mapping[Any, int], memo: dict[int, int]) -> int:
        raise NotImplementedError

    # ---- printing --------------------------------------------------------------------
    def _fmt(self) -> tuple[str, int]:
        raise NotImplementedError

    def __str__(self) -> str:
        return self._fmt()[0]

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self}>"

    # ---- operators -------------------------------------------------------------------
    # Each operator coerces the other operand (an int or an expression) and builds the
    # simplified node; the reflected forms swap the operands.
    __add__ = _operator(lambda a, b: _add(a, b))
    __radd__ = _operator(lambda a, b: _add(a, b), reflected=True)
    __sub__ = _operator(lambda a, b: _add(a, _neg(b)))
    __rsub__ = _operator(lambda a, b: _add(a, _neg(b)), reflected=True)
    __mul__ = _operator(lambda a, b: _mul(a, b))
    __rmul__ = _operator(lambda a, b: _mul(a, b), reflected=True)
    __floordiv__ = _operator(lambda a, b: _floordiv(a, b))
    __rfloordiv__ = _operator(lambda a, b: _floordiv(a, b), reflected=True)
    __mod__ = _operator(lambda a, b: _mod(a, b))
    __rmod__ = _operator(lambda a, b: _mod(a, b), reflected=True)
    __divmod__ = _operator(lambda a, b: (_floordiv(a, b), _mod(a, b)))
    __rdivmod__ = _operator(lambda a, b: (_floordiv(a, b), _mod(a, b)), reflected=True)
    __and__ = __rand__ = _operator(lambda a, b: _bitop(BitAnd, a, b))
    __or__ = __ror__ = _operator(lambda a, b: _bitop(BitOr, a, b))
    __xor__ = __rxor__ = _operator(lambda a, b: _bitop(BitXor, a, b))

    def __rshift__(self, other: Any) -> Value:
        return _floordiv(self, 1 << _shift_amount(">>", self, other))

    def __lshift__(self, other: Any) -> Value:
        return _mul(self, 1 << _shift_amount("<<", self, other))

    def __rrshift__(self, other: Any) -> Value:
        raise SymbolicError(">>", "the shift amount must be a constant", other, self)

    def __rlshift__(self, other: Any) -> Value:
        raise SymbolicError("<<", "the shift amount must be a constant", other, self)

    def __neg__(self) -> Value:
        return _neg(self)

    def __pos__(self) -> Expr:
        return self

    def __invert__(self) -> Value:
        return _add(_neg(self), -1)

    def __abs__(self) -> Value:
        """``x`` or ``-x`` when the sign is known from bounds; otherwise not representable."""
        lo, hi = self.bounds()
        if lo is not None and lo >= 0:
            return self
        if hi is not None and hi <= 0:
            return _neg(self)
        raise SymbolicError("abs", "the sign of the expression is unknown", self)


# ---- nodes -----------------------------------------------------------------------------


class Var(Expr):
    """A named integer variable ranging over the half-open interval ``[lo, hi)``.

    ``None`` leaves that side unbounded. Simplification relies on the range, so evaluating
    with a value outside it is refused.
    """

    __slots__ = ("hi", "lo", "name")
    name: str
    lo: int | None
    hi: int | None

    def __init__(self, name: str, lo: int | None = 0, hi: int | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise SymbolicError("Var", "the name must be a non-empty string", name)
        lo = None if lo is None else operator.index(lo)
        hi = None if hi is None else operator.index(hi)
        if lo is not None and hi is not None and hi <= lo:
            raise SymbolicError("Var", f"the range [{lo}, {hi}) is empty", name)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        key = (1, name, (0,) if lo is None else (1, lo), (0,) if hi is None else (1, hi))
        self._finish(key, hash(("Var", name, lo, hi)), frozenset())
        object.__setattr__(self, "_vars", frozenset((self,)))

    def _fields(self) -> tuple[Any, ...]:
        return (self.name, self.lo, self.hi)

    def __repr__(self) -> str:
        return f"Var({self.name!r}, {self.lo!r}, {self.hi!r})"

    def _compute_bounds(self) -> Bounds:
        return (self.lo, None if self.hi is None else self.hi - 1)

    def _eval(self, env: Mapping[Any, int], memo: dict[int, int]) -> int:
        if self in env:
            value = env[self]
        elif self.name in env:
            value = env[self.name]
        else:
            raise SymbolicError("evaluate", f"no value for variable {self.name!r}", self)
        value = operator.index(value)
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value >= self.hi):
            lo = "-inf" if self.lo is None else self.lo
            hi = "inf" if self.hi is None else self.hi
            raise SymbolicError(
                "evaluate", f"value {value} of variable {self.name!r} is outside [{lo}, {hi})", self
            )
        return value

    def _fmt(self) -> tuple[str, int]:
        return self.name, _ATOM


class Sum(Expr):
    """``sum(atom * coeff for atom, coeff in terms) + const``; atoms are never sums."""

    __slots__ = ("const", "terms")
    terms: tuple[tuple[Expr, int], ...]
    const: int

    def __init__(self, terms: tuple[tuple[Expr, int], ...], const: int = 0) -> None:
        object.__setattr__(self, "terms", tuple(terms))
        object.__setattr__(self, "const", const)
        key = (10, tuple((a._key, k) for a, k in self.terms), const)
        hsh = hash((10, tuple((a._hash, k) for a, k in self.terms), const))
        self._finish(key, hsh, frozenset().union(*(a._vars for a, _ in self.terms)))

    def _fields(self) -> tuple[Any, ...]:
        return (self.terms, self.const)

    def _compute_bounds(self) -> Bounds:
        lo: int | None = self.const
        hi: int | None = self.const
        for atom, k in self.terms:
            tl, th = _scale_bounds(atom.bounds(), k)
            lo = None if lo is None or tl is None else lo + tl
            hi = None if hi is None or th is None else hi + th
        return lo, hi

    def _eval(self, env: Mapping[Any, int], memo: dict[int, int]) -> int:
        return sum((_ev(a, env, memo) * k for a, k in self.terms), self.const)

    def _fmt(self) -> tuple[str, int]:
        parts: list[str] = []
        for atom, k in self.terms:
            if not parts:
                text = _wrap(atom, _UNARY if k < 0 else _MUL)
                parts.append(("-" if k < 0 else "") + text)
            else:
                parts.append(" - " if k < 0 else " + ")
                parts.append(_wrap(atom, _MUL))
            if abs(k) != 1:
                parts.append(f" * {abs(k)}")
        if self.const:
            parts.append(f" - {-self.const}" if self.const < 0 else f" + {self.const}")
        if len(self.terms) == 1 and not self.const:
            return "".join(parts), _UNARY if self.terms[0][1] == -1 else _MUL
        return "".join(parts), _ADD


class Product(Expr):
    """Product of two or more non-sum atoms, sorted canonically."""

    __slots__ = ("factors",)
    factors: tuple[Expr, ...]

    def __init__(self, factors: tuple[Expr, ...]) -> None:
        object.__setattr__(self, "factors", tuple(factors))
        key = (11, tuple(f._key for f in self.factors))
        hsh = hash((11, tuple(f._hash for f in self.factors)))
        self._finish(key, hsh, frozenset().union(*(f._vars for f in self.factors)))

    def _fields(self) -> tuple[Any, ...]:
        return (self.factors,)

    def _compute_bounds(self) -> Bounds:
        lo: Any = 1
        hi: Any = 1
        for f in self.factors:
            fl, fh = f.bounds()
            ext = (-math.inf if fl is None else fl, math.inf if fh is None else fh)
            lo, hi = _mul_interval((lo, hi), ext)
        return (None if lo == -math.inf else lo, None if hi == math.inf else hi)

    def _eval(self, env: Mapping[Any, int], memo: dict[int, int]) -> int:
        result = 1
        for f in self.factors:
            result *= _ev(f, env, memo)
        return result

    def _fmt(self) -> tuple[str, int]:
        first, *rest = self.factors
        return " * ".join([_wrap(first, _MUL)] + [_wrap(f, _MUL + 1) for f in rest]), _MUL


class _Binary(Expr):
    """A node with two operands, at least one of them symbolic."""

    __slots__ = ("left", "right")
    left: Value
    right: Value
    _rank = 0
    _symbol = ""
    _prec = 0

    def __init__(self, left: Value, right: Value) -> None:
        object.__setattr__(self, "left", left)
        object.__setattr__(self, "right", right)
        key = (self._rank, _key_of(left), _key_of(right))
        hsh = hash((self._rank, hash(left), hash(right)))
        self._finish(key, hsh, _vars_of(left) | _vars_of(right))

    def _fields(self) -> tuple[Any, ...]:
        return (self.left, self.right)

    def _eval(self, env: Mapping[Any, int], memo: dict[int, int]) -> int:
        return self._apply(_ev(self.left, env, memo), _ev(self.right, env, memo))

    _apply: Callable[[Any, Any], Any]  # the Python operator the node stands for

    def _fmt(self) -> tuple[str, int]:
        left, right = _wrap(self.left, self._prec + 1), _wrap(self.right, self._prec + 1)
        return f"{left} {self._symbol} {right}", self._prec


class _Division(_Binary):
    """A division-like node: `num` over `den`."""

    __slots__ = ()

    @property
    def num(self) -> Value:
        return self.left

    @property
    def den(self) -> Value:
        return self.right


class FloorDiv(_Division):
    """``num // den`` (Python floor division); a constant `den` is always positive."""

    __slots__ = ()
    _rank, _symbol, _prec = 3, "//", _MUL
    _apply = staticmethod(operator.floordiv)

    def _compute_bounds(self) -> Bounds:
        return _floordiv_bounds(_bounds_of(self.left), _bounds_of(self.right))


class Mod(_Division):
    """``num % den`` (Python modulo: the result has the divisor's sign); constant `den` > 0."""

    __slots__ = ()
    _rank, _symbol, _prec = 2, "%", _MUL
    _apply = staticmethod(operator.mod)

    def _compute_bounds(self) -> Bounds:
        return _mod_bounds(_bounds_of(self.left), _bounds_of(self.right))


class _BitOp(_Binary):
    """Two's-complement bit operation on unbounded Python ints (commutative)."""

    __slots__ = ()

    def _fmt(self) -> tuple[str, int]:
        # Operands that are not atoms are parenthesised even where Python would not need it.
        return f"{_wrap(self.left, _UNARY)} {self._symbol} {_wrap(self.right, _UNARY)}", self._prec

    def _compute_bounds(self) -> Bounds:
        return _bitop_bounds(type(self), _bounds_of(self.left), _bounds_of(self.right))


class BitAnd(_BitOp):
    __slots__ = ()
    _rank, _symbol, _prec = 4, "&", _AND
    _apply = staticmethod(operator.and_)


class BitOr(_BitOp):
    __slots__ = ()
    _rank, _symbol, _prec = 6, "|", _OR
    _apply = staticmethod(operator.or_)


class BitXor(_BitOp):
    __slots__ = ()
    _rank, _symbol, _prec = 5, "^", _XOR
    _apply = staticmethod(operator.xor)


# ---- module helpers --------------------------------------------------------------------


def const(v: Any) -> int:
    """A constant is just an ``int``; accepts anything with ``__index__`` (e.g. numpy ints)."""
    return operator.index(v)


def evaluate(x: Value, env: Mapping[str, int] | Mapping[Var, int]) -> int:
    """Value of an int or an expression; ints pass through untouched."""
    return x.evaluate(env) if isinstance(x, Expr) else operator.index(x)


def bounds(x: Value) -> Bounds:
    """`Expr.bounds`, extended to ints (a point interval)."""
    return x.bounds() if isinstance(x, Expr) else (x, x)


# ---- small internals -------------------------------------------------------------------


def _coerce(x: Any) -> Any:
    """An Expr or int operand (numpy ints included); NotImplemented for anything else."""
    if isinstance(x, Expr):
        return x
    try:
        return operator.index(x)
    except TypeError:
        return NotImplemented


def _shift_amount(op: str, x: Expr, k: Any) -> int:
    amount = _coerce(k)
    if not isinstance(amount, int):
        raise SymbolicError(op, "the shift amount must be a constant int", x, k)
    if amount < 0:
        raise SymbolicError(op, f"negative shift amount {amount}", x, k)
    return amount


def _key_of(x: Value) -> tuple[Any, ...]:
    return (0, x) if isinstance(x, int) else x._key


def _vars_of(x: Value) -> frozenset[Var]:
    return frozenset() if isinstance(x, int) else x._vars


def _bounds_of(x: Value) -> Bounds:
    return (x, x) if isinstance(x, int) else x.bounds()


def _ev(x: Value, env: Mapping[Any, int], memo: dict[int, int]) -> int:
    if isinstance(x, int):
        return x
    v = memo.get(id(x))
    if v is None:
        v = memo[id(x)] = x._eval(env, memo)
    return v


def _fmt_of(x: Value) -> tuple[str, int]:
    if isinstance(x, int):
        return str(x), _ATOM if x >= 0 else _UNARY
    return x._fmt()


def _wrap(x: Value, min_prec: int) -> str:
    text, prec = _fmt_of(x)
    return f"({text})" if prec < min_prec else text


def _order(atom: Expr) -> tuple[Any, ...]:
    """Sum terms are ordered by the variables they use, then structurally."""
    return (tuple(sorted(v.name for v in atom._vars)), atom._key)


# ---- interval arithmetic (None = unbounded; math.inf only ever compared, never added) ----


def _scale_bounds(b: Bounds, k: int) -> Bounds:
    lo, hi = b
    slo = None if lo is None else lo * k
    shi = None if hi is None else hi * k
    return (slo, shi) if k >= 0 else (shi, slo)


def _mul_interval(a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
    def times(x: Any, y: Any) -> Any:
        if x == 0 or y == 0:
            return 0
        if isinstance(x, float) or isinstance(y, float):
            return math.inf if (x > 0) == (y > 0) else -math.inf
        return x * y

    products = [times(x, y) for x in a for y in b]
    return min(products), max(products)


def _neg_opt(v: int | None) -> int | None:
    return None if v is None else -v


def _union(parts: list[Bounds]) -> Bounds:
    lows = [p[0] for p in parts]
    highs = [p[1] for p in parts]
    lo = None if any(v is None for v in lows) else min(lows)  # type: ignore[type-var]
    hi = None if any(v is None for v in highs) else max(highs)  # type: ignore[type-var]
    return lo, hi


def _floordiv_pos(nl: int | None, nh: int | None, a: int, b: int | None) -> Bounds:
    """Bounds of n // d for n in [nl, nh] and d in [a, b], 1 <= a (b None: unbounded)."""
    if nl is None:
        lo = None
    elif nl >= 0:
        lo = nl // b if b is not None else 0
    else:
        lo = nl // a
    if nh is None:
        hi = None
    elif nh >= 0:
        hi = nh // a
    else:
        hi = nh // b if b is not None else -1
    return lo, hi


def _floordiv_bounds(n: Bounds, d: Bounds) -> Bounds:
    (nl, nh), (dl, dh) = n, d
    parts = []
    if dh is None or dh >= 1:
        parts.append(_floordiv_pos(nl, nh, 1 if dl is None or dl < 1 else dl, dh))
    if dl is None or dl <= -1:
        # n // d == (-n) // (-d) with -d positive.
        top = -1 if dh is None or dh > -1 else dh
        parts.append(_floordiv_pos(_neg_opt(nh), _neg_opt(nl), -top, _neg_opt(dl)))
    return _union(parts) if parts else (0, 0)  # d is always 0: no value is ever produced


def _mod_bounds(n: Bounds, d: Bounds) -> Bounds:
    (nl, nh), (dl, dh) = n, d
    parts: list[Bounds] = []
    if dh is None or dh >= 1:
        hi = None if dh is None else dh - 1
        if nl is not None and nl >= 0 and nh is not None:
            hi = nh if hi is None else min(hi, nh)
        parts.append((0, hi))
    if dl is None or dl <= -1:
        lo = None if dl is None else dl + 1
        if nh is not None and nh <= 0 and nl is not None:
            lo = nl if lo is None else max(lo, nl)
        parts.append((lo, 0))
    return _union(parts) if parts else (0, 0)


def _bits(v: int) -> int:
    """n such that v lies in [-2**n, 2**n - 1]."""
    return v.bit_length() if v >= 0 else (~v).bit_length()


def _bitop_bounds(kind: type, a: Bounds, b: Bounds) -> Bounds:
    (al, ah), (bl, bh) = a, b
    a_nonneg = al is not None and al >= 0
    b_nonneg = bl is not None and bl >= 0
    if a_nonneg and b_nonneg:
        if kind is BitAnd:
            highs = [h for h in (ah, bh) if h is not None]
            return 0, (min(highs) if highs else None)
        lo = max(al, bl) if kind is BitOr else 0  # type: ignore[type-var]
        if ah is None or bh is None:
            return lo, None
        return lo, (1 << max(_bits(ah), _bits(bh))) - 1
    if kind is BitAnd and (a_nonneg or b_nonneg):
        # Anding with a non-negative value keeps a subset of its bits.
        return (0, ah) if a_nonneg else (0, bh)
    ends = (al, ah, bl, bh)
    if any(v is None for v in ends):
        return None, None
    n = max(_bits(v) for v in ends)  # type: ignore[arg-type]
    return -(1 << n), (1 << n) - 1


# ---- linear forms ----------------------------------------------------------------------

_Lin = tuple[dict[Expr, int], int]


def _lin(x: Value) -> _Lin:
    if isinstance(x, int):
        return {}, x
    if isinstance(x, Sum):
        return dict(x.terms), x.const
    return {x: 1}, 0


def _accumulate(terms: dict[Expr, int], x: Value, k: int) -> int:
    """terms += k * x (in place); returns the constant part to add."""
    xt, xc = _lin(x)
    for atom, c in xt.items():
        v = terms.get(atom, 0) + k * c
        if v:
            terms[atom] = v
        else:
            terms.pop(atom, None)
    return k * xc


def _from_lin(terms: dict[Expr, int], const: int) -> Value:
    """Canonical value of ``sum(a * k) + const``, after the div/mod recombinations."""
    terms = {a: k for a, k in terms.items() if k}
    while True:
        step = _recombine_once(terms)
        if step is None:
            break
        removed, dconst, new, mult = step
        for atom, k in removed.items():
            terms[atom] -= k
            if not terms[atom]:
                del terms[atom]
        const += dconst + _accumulate(terms, new, mult)
    if not terms:
        return const
    if len(terms) == 1 and not const:
        ((atom, k),) = terms.items()
        if k == 1:
            return atom
    return Sum(tuple(sorted(terms.items(), key=lambda t: _order(t[0]))), const)


def _recombine_once(terms: dict[Expr, int]) -> tuple[dict[Expr, int], int, Value, int] | None:
    """Find one rewrite that shrinks the sum: (terms to remove, const change, x, k) adds k*x.

    With y % c = y - c * (y // c) and y % (c*m) = y % c + c * ((y // c) % m):
      k*(y % c) + k*c*(y // c)        -> k*y
      k*(y % c) + k*c*((y // c) % m)  -> k*(y % (c*m))
      k*y - k*c*(y // c)              -> k*(y % c)
    """
    for atom, k in terms.items():
        if isinstance(atom, Mod) and isinstance(atom.den, int):
            y, c = atom.num, atom.den
            q = _floordiv(y, c)
            if isinstance(q, Expr) and terms.get(q) == k * c:
                return {atom: k, q: k * c}, 0, y, k
            for other, k2 in terms.items():
                if (
                    k2 == k * c
                    and isinstance(other, Mod)
                    and isinstance(other.den, int)
                    and other.num == q
                ):
                    return {atom: k, other: k2}, 0, _mod(y, c * other.den), k
        elif isinstance(atom, FloorDiv) and isinstance(atom.den, int) and k % atom.den == 0:
            y, c = atom.num, atom.den
            m = -k // c
            yt, yc = _lin(y)
            if all(terms.get(a) == m * ka for a, ka in yt.items()):
                removed = {a: m * ka for a, ka in yt.items()}
                removed[atom] = k
                return removed, -m * yc, _mod(y, c), m
    return None


# ---- simplifying constructors ----------------------------------------------------------


def _neg(x: Value) -> Value:
    return _mul(x, -1)


def _add(a: Value, b: Value) -> Value:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    terms, c = _lin(a)
    c += _accumulate(terms, b, 1)
    return _from_lin(terms, c)


def _factors(x: Expr) -> tuple[Expr, ...]:
    return x.factors if isinstance(x, Product) else (x,)


def _mul(a: Value, b: Value) -> Value:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if isinstance(a, int):
        a, b = b, a
    if isinstance(b, int):
        if b == 0:
            return 0
        if b == 1:
            return a
        at, ac = _lin(a)
        return _from_lin({x: k * b for x, k in at.items()}, ac * b)
    # Distribute: (sum a_i x_i + ca) * (sum b_j y_j + cb).
    at, ac = _lin(a)
    bt, bc = _lin(b)
    terms: dict[Expr, int] = {}
    for x, kx in at.items():
        for y, ky in bt.items():
            p = Product(tuple(sorted(_factors(x) + _factors(y), key=lambda f: f._key)))
            terms[p] = terms.get(p, 0) + kx * ky
    for x, kx in at.items():
        terms[x] = terms.get(x, 0) + kx * bc
    for y, ky in bt.items():
        terms[y] = terms.get(y, 0) + ky * ac
    return _from_lin(terms, ac * bc)


def _floordiv(x: Value, d: Value) -> Value:
    if isinstance(x, int) and isinstance(d, int):
        return x // d
    if isinstance(d, Expr):
        return 0 if x == 0 else FloorDiv(x, d)
    if d == 0:
        raise ZeroDivisionError("integer division or modulo by zero")
    assert isinstance(x, Expr)
    if d < 0:
        return _floordiv(_neg(x), -d)  # x // -c == (-x) // c
    if d == 1:
        return x
    lo, hi = x.bounds()
    if lo is not None and hi is not None and lo // d == hi // d:
        return lo // d
    terms, k0 = _lin(x)
    g = math.gcd(d, k0, *terms.values())
    if g > 1:  # (g*y) // (g*c) == y // c
        return _floordiv(_from_lin({a: k // g for a, k in terms.items()}, k0 // g), d // g)
    if k0 < 0 or k0 >= d or any(k % d == 0 for k in terms.values()):
        # (d*q + r) // d == q + r // d, with r the part not divisible by d.
        q = _from_lin({a: k // d for a, k in terms.items() if k % d == 0}, k0 // d)
        r = _from_lin({a: k for a, k in terms.items() if k % d}, k0 % d)
        return _add(q, _floordiv(r, d))
    if isinstance(x, FloorDiv) and isinstance(x.den, int):
        return _floordiv(x.num, x.den * d)  # (y // a) // b == y // (a*b)
    if isinstance(x, Mod) and isinstance(x.den, int) and x.den % d == 0:
        return _mod(_floordiv(x.num, d), x.den // d)  # (y % (a*b)) // a == (y // a) % b
    return FloorDiv(x, d)


def _mod(x: Value, d: Value) -> Value:
    if isinstance(x, int) and isinstance(d, int):
        return x % d
    if isinstance(d, Expr):
        return 0 if x == 0 else Mod(x, d)
    if d == 0:
        raise ZeroDivisionError("integer division or modulo by zero")
    assert isinstance(x, Expr)
    if d < 0:
        return _neg(_mod(_neg(x), -d))  # x % -c == -((-x) % c)
    if d == 1:
        return 0
    lo, hi = x.bounds()
    if lo is not None and hi is not None and lo // d == hi // d:
        return _add(x, -(lo // d) * d)
    terms, k0 = _lin(x)
    g = math.gcd(d, k0, *terms.values())
    if g > 1:  # (g*y) % (g*c) == g * (y % c)
        return _mul(_mod(_from_lin({a: k // g for a, k in terms.items()}, k0 // g), d // g), g)
    if k0 < 0 or k0 >= d or any(k % d == 0 for k in terms.values()):
        # (d*q + r) % d == r % d
        return _mod(_from_lin({a: k for a, k in terms.items() if k % d}, k0 % d), d)
    if isinstance(x, Mod) and isinstance(x.den, int) and x.den % d == 0:
        return _mod(x.num, d)  # (y % (a*b)) % a == y % a
    return Mod(x, d)


def _low_ones(n: int) -> int:
    return (1 << n) - 1


def _bitop(kind: type[_BitOp], a: Value, b: Value) -> Value:
    if isinstance(a, int) and isinstance(b, int):
        return kind._apply(a, b)
    if isinstance(a, int):
        a, b = b, a
    assert isinstance(a, Expr)
    if isinstance(b, int):
        return _bitop_const(kind, a, b)
    if a == b:
        return 0 if kind is BitXor else a
    if b._key < a._key:
        a, b = b, a
    return kind(a, b)


def _bitop_const(kind: type[_BitOp], x: Expr, m: int) -> Value:
    if kind is BitAnd:
        if m == 0:
            return 0
        if m == -1:
            return x
        if m > 0:
            low = m & -m
            run = m // low
            if run & (run + 1) == 0:
                # A run of ones: x & (2**n-1 << a) == ((x // 2**a) % 2**n) * 2**a.
                return _mul(_mod(_floordiv(x, low), run + 1), low)
        elif (-m) & (-m - 1) == 0:
            return _mul(_floordiv(x, -m), -m)  # x & -2**a == (x // 2**a) * 2**a
    elif kind is BitOr:
        if m == 0:
            return x
        if m == -1:
            return -1
    else:
        if m == 0:
            return x
        if m == -1:
            return _add(_neg(x), -1)  # x ^ -1 == ~x
    lo, hi = x.bounds()
    if lo is not None and lo >= 0 and hi is not None:
        # x only has bits below `width`: decide from m's bits there.
        low_mask = _low_ones(hi.bit_length())
        if m & low_mask == 0:  # disjoint bits
            return 0 if kind is BitAnd else _add(x, m)
        if m & low_mask == low_mask:  # m covers every bit x can have
            if kind is BitAnd:
                return x
            return m if kind is BitOr else _add(m, _neg(x))
    return kind(x, m)
