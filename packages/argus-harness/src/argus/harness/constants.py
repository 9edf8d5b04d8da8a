"""Computing a candidate's constants (module constants, ``@kernel`` options, the launch grid)
from its syntax tree, without running any of its Python.

A candidate is data. The evaluator computes with plain data (numbers, bounded strings and
tuples) and the language's values (layouts, swizzles, atoms, dtypes), and nothing else: it calls
only the functions `language.CONSTANT_FUNCTIONS` lists and the methods `language.METHODS`
lists, reads only the attributes `language.VALUE_ATTRIBUTES` lists, never reads an attribute of
any other object, and refuses a value of any other kind (a function, a module, a numpy object).
Every operation whose result could exhaust memory or time is bounded first (`limits`): a value
counts its elements at every depth, repeats included, and a call is charged for what it is given,
since a function's work follows its arguments. This is the second line behind the format check
(`candidate`), which refuses the same on the text.
"""

from __future__ import annotations

import ast
import builtins
import functools
import operator
import types
from collections.abc import Callable
from typing import Any, NamedTuple

from argus.layout import ArithmeticTuple, ComposedLayout, Layout, ScaledBasis, Swizzle

from .candidate import snippet
from .errors import CandidateError, SourceLocation
from .language import (
    CONSTANT_FUNCTIONS,
    METHODS,
    VALUE_ATTRIBUTES,
    ModuleView,
    is_language_value,
    language_object,
)
from .limits import (
    LAYOUT_ELEMENTS_PER_STEP,
    MAX_CALL_BITS,
    MAX_DICT_ENTRIES,
    MAX_INT_BITS,
    MAX_ITEMS,
    MAX_LAYOUT_SIZE,
    MAX_STEPS,
    MAX_STRING_CHARS,
    MAX_VALUE_NESTING,
)

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
           ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert, ast.Not: operator.not_}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
            ast.GtE: operator.ge}
_MISSING = object()
_NUMBERS = (int, float, bool)
_BASES = (ScaledBasis, ArithmeticTuple)
"""The layout's basis values: strides of identity layouts, with their own + - and *."""
_LAYOUTS = (Layout, ComposedLayout, Swizzle)
"""Values that are functions themselves: ``L(i)`` is the offset of coordinate i."""


def bounded_round(number: Any, ndigits: int | None = None) -> Any:
    """`round`, with `ndigits` bounded: ``round(5, -10**8)`` would compute ``10 ** 10**8``. Constants
    and kernels' code call this one under the name ``round``."""
    if ndigits is not None and not -64 <= ndigits <= 64:
        raise ValueError(f"round(x, ndigits) takes ndigits from -64 to 64, got {ndigits}")
    return round(number, ndigits)


_BUILTIN_FUNCTIONS: dict[str, Callable[..., Any]] = {
    name: bounded_round if name == "round" else getattr(builtins, name) for name in CONSTANT_FUNCTIONS["builtins"]}


@functools.cache
def _callable_functions() -> dict[int, Any]:
    """The language functions a constant may call, by identity."""
    found = {id(f): f for f in _BUILTIN_FUNCTIONS.values()}
    for module, names in CONSTANT_FUNCTIONS.items():
        if module != "builtins":
            found.update((id(f), f) for f in (language_object(module, n) for n in names))
    return found


def _may_call(fn: Any) -> bool:
    return _callable_functions().get(id(fn)) is fn


def _describe(value: Any) -> str:
    """What `value` is, for messages, read off its type alone (no attribute of it is read)."""
    kind = type(value)
    if kind is ModuleView:
        return "a module"
    if kind in (types.FunctionType, types.BuiltinFunctionType, type):
        return f"the function {value.__name__}"
    return f"a {kind.__name__}" if kind.__module__ == "builtins" else f"a {kind.__module__}.{kind.__qualname__}"


class _Measure(NamedTuple):
    """What a checked tuple holds, at every depth."""

    nesting: int
    """Levels of tuples inside it (0: it holds no tuple)."""
    elements: int
    """Its elements and theirs, counted as often as they appear."""
    bits: int
    """Bits of the integers among them, counted likewise."""
    loose: bool
    """Whether it holds an intermediate range, dict or slice."""


class Evaluator:
    """Computes the constant expressions of a checked candidate over `namespace` (its constants
    and imported language names); `protected` names (imports, builtins) cannot be rebound."""

    def __init__(self, namespace: dict[str, Any], filename: str, protected: frozenset[str] | set[str] = frozenset()
                 ) -> None:
        self.namespace = namespace
        self.filename = filename
        self.protected = protected
        self.steps = 0
        self._measured: dict[int, tuple[tuple[Any, ...], _Measure]] = {}
        """Tuples already checked, by identity (kept alive here, so ids stay theirs), with what
        they hold."""

    def error(self, node: ast.AST, message: str) -> CandidateError:
        return CandidateError(message, SourceLocation.of(node, self.filename), snippet(node))

    # ---- entry points ----------------------------------------------------------------
    def value(self, node: ast.expr) -> Any:
        """The value of `node`: data or a value of the language, as a constant may hold."""
        try:
            return self._held(self._value(node), node)
        except CandidateError:
            raise
        except Exception as err:  # noqa: BLE001 - any failure of a constant is the candidate's
            reason = str(err)
            reason = reason if len(reason) <= 300 else reason[:300] + "..."
            raise self.error(node, f"this constant cannot be computed: {type(err).__name__}: {reason}") from None

    def assign(self, target: ast.expr, value: Any) -> None:
        """Bind `value` to `target`: a name, or a tuple of targets unpacking a tuple."""
        if isinstance(target, ast.Name):
            if target.id in self.protected:
                raise self.error(target, f"{target.id!r} is a name of the language; a constant cannot rebind it")
            if target.id.startswith("_"):
                raise self.error(target, f"names starting with '_' are not accepted ({target.id!r})")
            self.namespace[target.id] = self._held(value, target)
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, tuple):
                raise self.error(target, f"only a tuple unpacks into names; this is {_describe(value)}")
            if len(value) != len(target.elts):
                raise self.error(target, f"{len(target.elts)} names for {len(value)} values")
            for t, v in zip(target.elts, value):
                self.assign(t, v)
            return
        raise self.error(target, "assign constants to names")

    # ---- what a value may be ---------------------------------------------------------
    def _held(self, value: Any, node: ast.AST) -> Any:
        """`value` if a constant may hold it: plain data or the language's values."""
        self._check(value, node, final=True)
        return value

    def _check(self, value: Any, node: ast.AST, final: bool = False) -> Any:
        """`value` if it is data, a language value or (unless `final`) an intermediate range,
        dict or slice, within the limits; walked without recursion (tuples may nest deep)."""
        pending = [value]
        while pending:
            item = pending.pop()
            kind = type(item)
            if kind is tuple:
                if self._tuple(item, node).loose and final:
                    raise self._intermediate(node, item)
            elif kind is dict:
                if final:
                    raise self._intermediate(node, item)
                self._count(node, len(item), "entries of a dict", MAX_DICT_ENTRIES)
                self._tick(node, len(item))
                pending.extend(x for pair in item.items() for x in pair)
            elif self._leaf(item, node) and final:
                raise self._intermediate(node, item)
        return value

    def _leaf(self, item: Any, node: ast.AST) -> bool:
        """Check a value that is neither a tuple nor a dict; whether it is an intermediate
        range or slice: an expression computes them on the way (``for s in range(3)``,
        ``t[1:]``, like a dict in ``{1: u32}[VEC]``), a constant does not hold them."""
        kind = type(item)
        if item is None or kind in (bool, float):
            return False
        if kind is int:
            if item.bit_length() > MAX_INT_BITS:
                raise self.error(node, f"an integer of {item.bit_length()} bits; constants hold integers of at "
                                       f"most {MAX_INT_BITS} bits")
        elif kind is str:
            if len(item) > MAX_STRING_CHARS:
                raise self.error(node, f"a string of {len(item)} characters; constants hold strings of at most "
                                       f"{MAX_STRING_CHARS}")
            if "__" in item:
                raise self.error(node, "strings with '__' are not accepted: they can only name private attributes")
        elif is_language_value(item):
            self._check_layout(item, node)
        elif kind is range:
            self._count(node, len(item), "values of a range")
            return True
        elif kind is slice:
            self._check((item.start, item.stop, item.step), node)
            return True
        else:
            raise self.error(node, f"a constant is plain data (numbers, strings, tuples) or a value of the "
                                   f"language (a layout, swizzle, atom or dtype); this is {_describe(item)}")
        return False

    def _tuple(self, root: tuple[Any, ...], node: ast.AST) -> _Measure:
        """Check the tuple `root` and what it holds: how deep tuples nest in it, and how many
        elements it holds at every depth, counted as often as they appear (a tuple made of one
        tuple twice, twenty times over, holds a million). Each distinct tuple is walked once."""
        stack: list[tuple[tuple[Any, ...], bool]] = [(root, False)]
        while stack:
            item, children_done = stack.pop()
            known = self._measured.get(id(item))
            if known is not None and known[0] is item:
                continue
            if not children_done:
                stack.append((item, True))
                stack.extend((e, False) for e in item if type(e) is tuple)
                continue
            nesting, elements, bits, loose = 0, len(item), 0, False
            for element in item:
                if type(element) is tuple:
                    inner = self._measured[id(element)][1]
                    nesting, elements = max(nesting, inner.nesting + 1), elements + inner.elements
                    bits, loose = bits + inner.bits, loose or inner.loose
                elif type(element) is dict:
                    self._check(element, node)
                    loose = True
                else:
                    loose = self._leaf(element, node) or loose
                    bits += element.bit_length() if type(element) is int else 0
            if nesting > MAX_VALUE_NESTING:
                raise self.error(node, f"tuples nest more than {MAX_VALUE_NESTING} deep in this value")
            self._count(node, elements, "elements of a tuple (at every depth, repeats included)")
            self._tick(node, len(item))
            self._measured[id(item)] = (item, _Measure(nesting, elements, bits, loose))
        return self._measured[id(root)][1]

    def _intermediate(self, node: ast.AST, item: Any) -> CandidateError:
        what = "a tuple holding a range, dict or slice" if type(item) is tuple else _describe(item)
        return self.error(node, f"a constant holds plain data or values of the language, not {what}; use it inside "
                                "the expression (a tuple(...) of a range, a dict subscripted)")

    def _check_layout(self, value: Any, node: ast.AST) -> None:
        """A layout of at most `MAX_LAYOUT_SIZE` elements (its size is cheap; its offsets are not)
        whose numbers, a stride's basis included, are integers a constant may hold."""
        if isinstance(value, ScaledBasis):
            self._leaf(value.scale, node)
            return
        if isinstance(value, ArithmeticTuple):
            for entry in value.entries.values():
                self._leaf(entry, node)
            return
        parts = [value.outer, value.offset, value.inner] if isinstance(value, ComposedLayout) else [value]
        for part in parts:
            if isinstance(part, Swizzle):
                exponent = part.base + part.bits + abs(part.shift)
                if exponent > MAX_LAYOUT_SIZE.bit_length() - 1:
                    raise self.error(node, f"a swizzle over 2**{exponent} offsets; layouts span at most "
                                           f"{MAX_LAYOUT_SIZE} elements")
            elif isinstance(part, Layout):
                if part.size() > MAX_LAYOUT_SIZE:
                    raise self.error(node, f"a layout of {part.size()} elements; layouts hold at most "
                                           f"{MAX_LAYOUT_SIZE}")
                self._check(part.shape, node)
                self._check(part.stride, node)
            elif type(part) is int:
                self._leaf(part, node)

    def _count(self, node: ast.AST, count: int, what: str, limit: int = MAX_ITEMS) -> None:
        if count > limit:
            raise self.error(node, f"{count} {what}; a constant holds at most {limit}")

    def _tick(self, node: ast.AST, steps: int = 1) -> None:
        self.steps += steps
        if self.steps > MAX_STEPS:
            raise self.error(node, f"computing the constants takes more than {MAX_STEPS} steps (loops in "
                                   "comprehensions, large tuples); a kernel's constants need a few hundred")

    # ---- expressions -----------------------------------------------------------------
    def _value(self, node: ast.expr) -> Any:
        self._tick(node)
        method = getattr(self, f"_eval_{type(node).__name__}", None)
        if method is None:
            raise self.error(node, f"{type(node).__name__} is not accepted in a constant")
        return self._check(method(node), node)

    def _eval_Constant(self, node: ast.Constant) -> Any:
        if node.value is not None and type(node.value) not in (int, float, bool, str):
            raise self.error(node, f"constant {node.value!r} is not accepted")
        return node.value

    def _eval_Name(self, node: ast.Name) -> Any:
        found = self.namespace.get(node.id, _MISSING)
        if found is _MISSING:
            if node.id in _BUILTIN_FUNCTIONS:
                raise self.error(node, f"{node.id} is a function; a constant holds what it returns: {node.id}(...)")
            raise self.error(node, f"name {node.id!r} is not defined")
        return self._named(node, node.id, found)

    def _named(self, node: ast.AST, name: str, found: Any) -> Any:
        """A name's value, if it is one a constant may compute with (not a function or module)."""
        if type(found) is ModuleView:
            raise self.error(node, f"{name} is a module; a constant uses the names it offers ({name}.NAME)")
        if callable(found) and type(found) not in _LAYOUTS:
            raise self.error(node, f"{name} is a function of the language, not a value; a constant holds what a "
                                   f"call returns ({name}(...)), and only kernels use their operations")
        self._check(found, node)
        return found

    def _eval_Tuple(self, node: ast.Tuple | ast.List) -> tuple[Any, ...]:
        return tuple(self._value(e) for e in node.elts)

    _eval_List = _eval_Tuple

    def _eval_BinOp(self, node: ast.BinOp) -> Any:
        left, right = self._value(node.left), self._value(node.right)
        op = type(node.op)
        self._bound_binary(node, op, left, right)
        return _BINARY[op](left, right)

    def _bound_binary(self, node: ast.BinOp, op: type, left: Any, right: Any) -> None:
        """Refuse what Python would compute for too long or into too much memory, or what is
        not arithmetic (%-formatting of a string, operators of other objects)."""
        numbers = isinstance(left, _NUMBERS) and isinstance(right, _NUMBERS)
        if op is ast.Pow and numbers and isinstance(right, int) and isinstance(left, int) and abs(left) > 1:
            if right > MAX_INT_BITS or abs(left).bit_length() * right > MAX_INT_BITS + 1:
                raise self.error(node, f"{left!r} ** {right!r} has more than {MAX_INT_BITS} bits; constants hold "
                                       f"integers of at most {MAX_INT_BITS} bits")
            return
        if op in (ast.LShift, ast.RShift) and isinstance(left, int) and isinstance(right, int):
            if op is ast.LShift and left and (right > MAX_INT_BITS or left.bit_length() + right > MAX_INT_BITS):
                raise self.error(node, f"{left!r} << {right!r} has more than {MAX_INT_BITS} bits; constants hold "
                                       f"integers of at most {MAX_INT_BITS} bits")
            return
        if numbers:
            return
        sequences = (str, tuple)
        if op is ast.Mult and (isinstance(left, sequences) and isinstance(right, int)
                               or isinstance(right, sequences) and isinstance(left, int)):
            sequence, times = (left, right) if isinstance(left, sequences) else (right, left)
            limit = MAX_STRING_CHARS if isinstance(sequence, str) else MAX_ITEMS
            if len(sequence) * times > limit:
                raise self.error(node, f"repeating {len(sequence)} items {times} times; a constant holds at most "
                                       f"{limit}")
            return
        if op is ast.Add and type(left) is type(right) and isinstance(left, sequences):
            return
        if op in (ast.Add, ast.Sub, ast.Mult) and (isinstance(left, _BASES) or isinstance(right, _BASES)) \
                and all(isinstance(v, (int, *_BASES)) for v in (left, right)):
            return
        if op is ast.Mod and isinstance(left, str):
            raise self.error(node, "%-formatting is not accepted in a constant; a constant computes numbers, "
                                   "tuples and the language's values")
        raise self.error(node, f"the operator {op.__name__} is not accepted between {_describe(left)} and "
                               f"{_describe(right)} in a constant; constants do arithmetic on numbers, join and "
                               "repeat strings and tuples")

    def _eval_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self._value(node.operand)
        if not isinstance(node.op, ast.Not) and not isinstance(operand, (*_NUMBERS, *_BASES)):
            raise self.error(node, f"the operator {type(node.op).__name__} is not accepted on {_describe(operand)}")
        return _UNARY[type(node.op)](operand)

    def _eval_BoolOp(self, node: ast.BoolOp) -> Any:  # short-circuits, as Python does
        result = self._value(node.values[0])
        for v in node.values[1:]:
            if (not result) if isinstance(node.op, ast.And) else result:
                break
            result = self._value(v)
        return result

    def _eval_Compare(self, node: ast.Compare) -> bool:
        left = self._value(node.left)
        for op, comparator in zip(node.ops, node.comparators):
            if type(op) not in _COMPARE:
                raise self.error(node, f"the comparison {type(op).__name__} is not accepted in a constant; "
                                       "accepted: == != < <= > >=")
            right = self._value(comparator)
            if not isinstance(op, (ast.Eq, ast.NotEq)) and not all(isinstance(v, (*_NUMBERS, str, tuple))
                                                                    for v in (left, right)):
                raise self.error(node, f"{_describe(left)} and {_describe(right)} are not ordered; constants order "
                                       "numbers, strings and tuples")
            self._tick(node, self._size(left, node)[0] + self._size(right, node)[0])  # compared element by element
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def _eval_IfExp(self, node: ast.IfExp) -> Any:
        return self._value(node.body) if self._value(node.test) else self._value(node.orelse)

    def _eval_Attribute(self, node: ast.Attribute) -> Any:
        if self._is_member(node):
            return self._named(node, snippet(node), self._member(node))
        return self._attribute(node, self._value(node.value))

    def _attribute(self, node: ast.Attribute, base: Any) -> Any:
        """A data attribute the language lists for `base`'s type; nothing else is ever read."""
        allowed = VALUE_ATTRIBUTES.get(type(base), frozenset())
        if node.attr not in allowed:
            methods = METHODS.get(int if type(base) is bool else type(base), frozenset())
            hint = f"; call it: .{node.attr}()" if node.attr in methods else (
                f"; it offers {', '.join(sorted(allowed))}" if allowed else "")
            raise self.error(node, f"a constant reads no attribute {node.attr!r} of {_describe(base)}{hint}")
        return getattr(base, node.attr)

    def _is_member(self, node: ast.expr) -> bool:
        """Whether `node` is ``nv.NAME`` on an imported language module."""
        return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            type(self.namespace.get(node.value.id)) is ModuleView

    def _member(self, node: ast.Attribute) -> Any:
        """``nv.NAME``: what the language module offers under NAME."""
        assert isinstance(node.value, ast.Name)
        view = self.namespace[node.value.id]
        found = vars(view).get(node.attr, _MISSING) if not node.attr.startswith("_") else _MISSING
        if found is _MISSING:
            raise self.error(node, f"{node.value.id} offers no {node.attr!r}")
        return found

    def _eval_Subscript(self, node: ast.Subscript) -> Any:
        base = self._value(node.value)
        index = self._value(node.slice)
        if not isinstance(base, (tuple, str, dict, range, Layout, ComposedLayout)):
            raise self.error(node, f"{_describe(base)} cannot be indexed in a constant; tuples, strings, dicts, "
                                   "ranges and layouts can")
        if type(base) is dict:
            self._tick(node, self._size(index, node)[0])  # the key is hashed and compared whole
        return base[index]

    def _eval_Slice(self, node: ast.Slice) -> slice:
        return slice(*(self._value(p) if p is not None else None for p in (node.lower, node.upper, node.step)))

    def _eval_Dict(self, node: ast.Dict) -> dict[Any, Any]:
        if any(k is None for k in node.keys):
            raise self.error(node, "a constant dict lists its keys: {KEY: value, ...} (no ** unpacking)")
        self._count(node, len(node.keys), "entries of a dict", MAX_DICT_ENTRIES)
        entries = [(self._value(k), self._value(v)) for k, v in zip(node.keys, node.values)]  # type: ignore[arg-type]
        self._tick(node, sum(self._size(key, node)[0] for key, _ in entries))  # each key is hashed whole
        return dict(entries)

    def _eval_ListComp(self, node: ast.ListComp | ast.GeneratorExp) -> tuple[Any, ...]:
        out: list[Any] = []
        self._comprehension(node.elt, node.generators, out)
        return tuple(out)

    _eval_GeneratorExp = _eval_ListComp

    def _comprehension(self, element: ast.expr, generators: list[ast.comprehension], out: list[Any]) -> None:
        first, rest = generators[0], generators[1:]
        target = first.target
        if first.is_async or not isinstance(target, ast.Name):
            raise self.error(target, "a comprehension in a constant binds one name: (f(i) for i in range(n))")
        if target.id in self.protected or target.id.startswith("_"):
            raise self.error(target, f"{target.id!r} is a name of the language; a comprehension cannot rebind it")
        iterable = self._value(first.iter)
        if not isinstance(iterable, (tuple, range, str, dict)):
            raise self.error(first.iter, f"a comprehension runs over a tuple, range, string or dict, not "
                                         f"{_describe(iterable)}")
        saved = self.namespace.get(target.id, _MISSING)
        try:
            for value in iterable:
                self._tick(target)
                self.namespace[target.id] = value
                if all(self._value(condition) for condition in first.ifs):
                    if rest:
                        self._comprehension(element, rest, out)
                    else:
                        out.append(self._value(element))
                        self._count(element, len(out), "items built by a comprehension")
        finally:
            if saved is _MISSING:
                self.namespace.pop(target.id, None)
            else:
                self.namespace[target.id] = saved

    def _eval_Call(self, node: ast.Call) -> Any:
        if any(k.arg is None for k in node.keywords):
            raise self.error(node, "a call in a constant names its arguments (no ** unpacking)")
        fn, owner = self._callee(node.func)
        args = [self._value(a) for a in node.args]
        kwargs = {k.arg: self._value(k.value) for k in node.keywords if k.arg}
        if type(fn) not in _LAYOUTS:  # a layout applied to a coordinate is arithmetic on its modes
            self._charge(node, fn, [owner, *args, *kwargs.values()])
        return fn(*args, **kwargs)

    def _charge(self, node: ast.Call, fn: Callable[..., Any], given: list[Any]) -> None:
        """Count a call's work in steps by what it is given, which its own work follows: a
        tuple's elements, a string's characters, a layout's modes and elements (some functions
        enumerate them, `LAYOUT_ELEMENTS_PER_STEP` a step). The language's own functions are
        given at most `MAX_CALL_BITS` bits of integers: products of them grow with each."""
        steps, bits = 0, 0
        for value in given:
            walk, held = self._size(value, node)
            steps, bits = steps + walk, bits + held
        self._tick(node, steps)
        if bits > MAX_CALL_BITS and not any(fn is f for f in _BUILTIN_FUNCTIONS.values()):
            raise self.error(node, f"the call is given integers of {bits} bits in all; the language's functions are "
                                   f"given at most {MAX_CALL_BITS} (a layout's modes are a few numbers of a few "
                                   "digits)")

    def _size(self, value: Any, node: ast.AST) -> tuple[int, int]:
        """What walking `value` costs in steps (a tuple's elements, a string's characters, a
        range's or dict's length, a layout's `_layout_steps`), and the bits of the integers it
        holds."""
        if type(value) is tuple:
            held = self._tuple(value, node)
            return held.elements, held.bits
        if type(value) in (str, range, dict):
            return len(value), 0
        if type(value) is int:
            return 0, value.bit_length()
        if isinstance(value, _LAYOUTS):
            return self._layout_steps(value, node), 0
        return 0, 0

    def _layout_steps(self, layout: Layout | ComposedLayout | Swizzle, node: ast.AST) -> int:
        """What enumerating `layout` costs, in steps: its modes, and its elements in
        `LAYOUT_ELEMENTS_PER_STEP`s."""
        if isinstance(layout, Swizzle):
            return (1 << (layout.base + layout.bits + abs(layout.shift))) // LAYOUT_ELEMENTS_PER_STEP
        inner = layout.inner if isinstance(layout, ComposedLayout) else layout
        modes = self._tuple(inner.shape, node).elements if type(inner.shape) is tuple else 1
        return modes + inner.size() // LAYOUT_ELEMENTS_PER_STEP

    def _callee(self, node: ast.expr) -> tuple[Callable[..., Any], Any]:
        """The function a call in a constant may make (one the language lists, a method its
        values list, or a layout applied to a coordinate), and the value it is a method of."""
        if isinstance(node, ast.Name) and node.id not in self.namespace and node.id in _BUILTIN_FUNCTIONS:
            return _BUILTIN_FUNCTIONS[node.id], None
        if isinstance(node, ast.Name) and node.id in self.namespace:
            found = self.namespace[node.id]
        elif self._is_member(node):
            found = self._member(node)  # type: ignore[arg-type]
        elif isinstance(node, ast.Attribute):
            base = self._value(node.value)
            if node.attr in METHODS.get(int if type(base) is bool else type(base), ()):
                return getattr(base, node.attr), base
            found = self._attribute(node, base)
        else:
            found = self._value(node)
        if _may_call(found) or type(found) in _LAYOUTS:
            return found, None  # type: ignore[return-value]
        raise self.error(node, f"{snippet(node) or 'this'} is not a function a constant may call; constants call "
                               "the language's constructors and compile-time functions (atoms, layouts, swizzles, "
                               "math, range, min, max, ...) and the methods of its values (.size(), .bit_length())")
