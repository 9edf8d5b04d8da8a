"""Inputs for fuzzing the layout commands: CuTe notation, and mutations of it along its grammar.

The same seed gives the same inputs. The mutations are those that once crashed the
commands or fooled them: deep nesting, huge integers, negative and zero sizes, swizzle
parameters out of range, unbalanced parentheses, unicode, empty text, stray characters. The
commands' tests draw a few hundred inputs; ``benchmarks/fuzz_layout.py`` draws many more.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

__all__ = ["LayoutTexts", "layout_command_problem", "verify_command_problem"]

_UNICODE = ["٣", "²", "é", "\u200b", "∘", "（", "）", "：", "−", "🙂", "\u0301", "Ⅳ", "\x00", "\ufeff"]
_STRAY = list("()():,,<>@_-+ x*.;[]{}'\"\\") + ["o", " o ", "Sw<", ">", "\t", "\n"]


class LayoutTexts:
    """A deterministic source of layout texts, numbers and layout-algebra expressions."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    # ---- valid notation --------------------------------------------------------------

    def int_tuple(self, low: int, high: int, depth: int = 0) -> tuple[str, str]:
        """A shape (positive leaves) and a congruent stride (any leaves), as text."""
        rng = self.rng
        if depth >= 2 or rng.random() < 0.55:
            return str(rng.randint(1, high)), str(rng.randint(low, high))
        parts = [self.int_tuple(low, high, depth + 1) for _ in range(rng.randint(1, 3))]
        return "(" + ",".join(s for s, _ in parts) + ")", "(" + ",".join(d for _, d in parts) + ")"

    def plain(self, low: int = -4, high: int = 12) -> str:
        shape, stride = self.int_tuple(low, high)
        return shape if self.rng.random() < 0.1 else f"{shape}:{stride}"

    def layout(self) -> str:
        """A plain layout, a swizzled one or one composed after another, most of them small."""
        rng = self.rng
        kind = rng.random()
        if kind < 0.55:
            return self.plain()
        inner = self.plain(0, 16)
        if kind < 0.85:
            bits = rng.randint(0, 3)
            swizzle = f"Sw<{bits},{rng.randint(0, 4)},{rng.choice([1, -1]) * rng.randint(bits, 4)}>"
            return f"{swizzle} o {rng.choice([0, 0, rng.randint(0, 64)])} o {inner}"
        return f"{self.plain(0, 8)} o {rng.choice([0, rng.randint(0, 9)])} o {inner}"

    def large_layout(self) -> str:
        """A valid layout past the checker's enumeration limit (a compact one, maybe swizzled)."""
        rng = self.rng
        sizes = [rng.choice([512, 1024, 2048, 4096, 3000, 5000]) for _ in range(rng.randint(2, 3))]
        strides, step = [], 1
        for s in sizes:
            strides.append(step * rng.choice([1, 1, 1, 2, 0]))
            step *= s
        inner = f"({','.join(map(str, sizes))}):({','.join(map(str, strides))})"
        if rng.random() < 0.5:
            return f"Sw<3,{rng.randint(0, 4)},3> o {rng.choice([0, 0, 16])} o {inner}"
        return inner

    # ---- mutations -------------------------------------------------------------------

    def mutated(self, text: str) -> str:
        """`text` with one or two grammar-aware mutations."""
        for _ in range(self.rng.randint(1, 2)):
            text = self.rng.choice(self._MUTATIONS)(self, text)
        return text

    def _deep(self, text: str) -> str:
        depth = self.rng.choice([33, 40, 200, 2000])
        return "(" * depth + text + ")" * depth

    def _huge(self, text: str) -> str:
        digits = self.rng.choice([20, 64, 1000, 4001, 5000, 20000])
        return self._replace_number(text, "9" * digits)

    def _negative_or_zero(self, text: str) -> str:
        return self._replace_number(text, self.rng.choice(["0", "-1", "-7", "-0", "--3"]))

    def _bad_swizzle(self, text: str) -> str:
        b, m, s = self.rng.choice([(100, 0, 100), (-1, 0, 1), (3, 4, 1), (0, 70, 0), (3, 4, 3), (40, 40, 40)])
        inner = text.split(" o ")[-1]
        return f"Sw<{b},{m},{s}> o 0 o {inner}"

    def _unbalance(self, text: str) -> str:
        spots = [i for i, c in enumerate(text) if c in "()"]
        if spots and self.rng.random() < 0.5:
            i = self.rng.choice(spots)
            return text[:i] + text[i + 1 :]
        i = self.rng.randint(0, len(text))
        return text[:i] + self.rng.choice("()") + text[i:]

    def _unicode(self, text: str) -> str:
        i = self.rng.randint(0, len(text))
        return text[:i] + self.rng.choice(_UNICODE) + text[i:]

    def _stray(self, text: str) -> str:
        i = self.rng.randint(0, len(text))
        return text[:i] + self.rng.choice(_STRAY) + text[i:]

    def _cut(self, text: str) -> str:
        return text[: self.rng.randint(0, len(text))]

    def _empty(self, text: str) -> str:
        return self.rng.choice(["", " ", "()", ":", "()", "():()", "o", "Sw<>"])

    def _wide(self, text: str) -> str:
        n = self.rng.choice([100, 1025, 3000])
        return "(" + ",".join(["2"] * n) + "):(" + ",".join(["1"] * n) + ")"

    def _long_basis(self, text: str) -> str:
        return self.rng.choice(["(8,8):(1@0,1@1)", "4:1@" + "1@" * 40 + "0", "4:1@99999", "(4,4):(1@0,3)"])

    def _replace_number(self, text: str, number: str) -> str:
        spots = [i for i, c in enumerate(text) if c.isdigit() and (i == 0 or not text[i - 1].isdigit())]
        if not spots:
            return number
        i = self.rng.choice(spots)
        j = i
        while j < len(text) and text[j].isdigit():
            j += 1
        return text[:i] + number + text[j:]

    _MUTATIONS = (_deep, _huge, _negative_or_zero, _bad_swizzle, _unbalance, _unicode, _stray, _cut, _empty,
                  _wide, _long_basis)

    # ---- arguments -------------------------------------------------------------------

    def layout_argument(self) -> str:
        """A layout as a command argument: valid, large, or mutated."""
        roll = self.rng.random()
        if roll < 0.35:
            return self.layout()
        if roll < 0.45:
            return self.large_layout()
        return self.mutated(self.layout())

    def number(self) -> str:
        """A count as a command argument: mostly small, sometimes huge, negative or not a number."""
        return self.rng.choice(["1", "2", "4", "16", "32", "128", "0", "-4", "9" * 30, "9" * 5000, "x", "",
                                "1e3", "٣", " 8", "3.5", "0x10", str(self.rng.randint(1, 300))])

    def expression(self, functions: Sequence[str], depth: int = 0) -> str:
        """An expression for ``argus-layout eval``: calls of `functions` on layouts, ints and tuples."""
        rng = self.rng
        roll = rng.random()
        if depth > 3 or roll < 0.3:
            return rng.choice([self.layout(), self.plain(), str(rng.randint(-2, 40)), self.mutated(self.layout()),
                               self.large_layout() if rng.random() < 0.3 else self.layout()])
        if roll < 0.4:
            return "(" + ", ".join(self.expression(functions, depth + 1) for _ in range(rng.randint(1, 3))) + ")"
        name = rng.choice(list(functions) + ["composition", "composition", "logical_divide", "nope"])
        args = ", ".join(self.expression(functions, depth + 1) for _ in range(rng.randint(0, 3)))
        call = f"{name}({args})"
        return self.mutated(call) if rng.random() < 0.2 else call

    # ---- command lines ---------------------------------------------------------------

    def layout_command(self, functions: Sequence[str]) -> list[str]:
        """Arguments for ``argus-layout``: ``eval`` of an expression, or ``show`` of a layout,
        and now and then a usage mistake."""
        if self.rng.random() < 0.08:
            return self.usage_mistake(self._layout_command(functions))
        return self._layout_command(functions)

    def _layout_command(self, functions: Sequence[str]) -> list[str]:
        roll = self.rng.random()
        if roll < 0.6:
            return ["eval", self.expression(functions)]
        if roll < 0.85:
            return ["show", self.layout_argument()]
        tile = self.rng.choice(["16,8", "4,4", "0,4", "99999999999,2", "x", "8x8", "", "3,-1", "1000,1000"])
        return ["show", self.layout_argument(), "--tv", tile]

    def usage_mistake(self, argv: list[str]) -> list[str]:
        """A command line argparse refuses: cut short, an unknown option or word, or empty."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.3:
            return argv[: rng.randint(0, min(2, len(argv)))]
        if roll < 0.6:
            i = rng.randint(0, len(argv))
            return [*argv[:i], rng.choice(["--bogus", "-x", "--json=1", "--", "-h2"]), *argv[i:]]
        if roll < 0.8:
            return [rng.choice(["teleport", "Layout", "", "-"]), *argv[1:]]
        return argv[:1] + [rng.choice(["teleport", "INJECTIVE", ""]), *argv[2:]]

    def verify_command(self) -> list[str]:
        """Arguments for ``argus-verify layout``: every check, with layouts and numbers, and
        now and then a usage mistake."""
        rng = self.rng
        if rng.random() < 0.08:
            return self.usage_mistake(self._verify_command())
        return self._verify_command()

    def _verify_command(self) -> list[str]:
        rng = self.rng
        check = rng.choice(["injective", "bijective", "equal", "composition", "composition", "partition", "banks"])
        if check in ("injective", "bijective"):
            args = [self.layout_argument()]
        elif check == "equal":
            args = [self.layout_argument(), self.layout_argument()]
        elif check == "composition":
            args = [self.layout_argument() for _ in range(rng.choice([2, 2, 3]))]
        elif check == "partition":
            threads, values = self.int_tuple(0, 8), self.int_tuple(0, 8)
            tv = f"({threads[0]},{values[0]}):({threads[1]},{values[1]})"
            args = [rng.choice([tv, "((4,8),(2,2)):((32,1),(16,8))", self.layout_argument()]), self.number()]
        else:
            args = [self.layout_argument(), self.number(), self.number()]
        if rng.random() < 0.1:
            args.append("--json")
        return ["layout", check, *args]


_VERDICT_STATUS = {"proved": 0, "violated": 1, "unknown": 2}


def verify_command_problem(code: int, out: str, err: str) -> str | None:
    """What is wrong with an ``argus-verify`` run, or None: a verdict on stdout with its status
    (0 proved, 1 violated, 2 unknown), or status 2 with one ``error:`` line on stderr."""
    if "Traceback" in out + err or "internal error" in err:
        return "crashed"
    if out:
        if out.startswith("{"):
            verdict = out.split('"verdict": "', 1)[-1].split('"', 1)[0]
        else:
            verdict = out.split(":", 1)[0]
        if verdict not in _VERDICT_STATUS or code != _VERDICT_STATUS[verdict] or err:
            return f"status {code} with {verdict!r} on stdout"
        return None
    if code != 2 or not err.startswith("error: ") or len(err.splitlines()) != 1:
        return f"status {code} without a verdict, and with {err[:200]!r}"
    return None


def layout_command_problem(code: int, out: str, err: str) -> str | None:
    """What is wrong with an ``argus-layout`` run, or None: status 0 with output, or status 2
    with one ``error:`` line on stderr."""
    if "Traceback" in out + err or "internal error" in err:
        return "crashed"
    if code == 0:
        return None if out and not err else "status 0 without output"
    lines = err.splitlines()
    if code != 2 or len(lines) != 1 or not lines[0].startswith("error: "):
        return f"status {code} with {err[:200]!r}"
    return None
