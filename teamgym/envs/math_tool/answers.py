r"""Exact answer checking for math envs: LaTeX or plain answers parsed safely into sympy and compared by value.

Two answers are *equivalent* when they denote the same value, whatever their form: ``1/2``, ``0.5``, ``\frac{1}{2}``,
``\dfrac12`` and ``x = 0.5`` all match; ``2\sqrt{2}`` matches ``\sqrt{8}``; ``1,234`` matches ``1234``. Integers and
fractions are compared exactly; closed forms (radicals, pi) by their difference at 60 significant digits; expressions
with variables by their values at five fixed rational points (exact for rational expressions). Lists are compared as
multisets (``2, 3`` matches ``3, 2``) and parenthesised tuples in order. Only when the *reference* answer is not
mathematics at all (a name, a word) are the two compared as normalised text.

``strict=True`` is the checker of ``math_tool-v1`` and ``discussion-v1`` (v0 keeps the default, whose verdicts
its fingerprints record). It fixes wrong verdicts of the default, none of which paid without the answer but several
of which rejected a right one or read one value as another:

* integers with leading zeros are read as the integer (``033`` is 33; the default reads ``0*33``), and two numbers
  side by side (``45 360``) are rejected, not multiplied;
* ``45{,}360`` is 45360 (``{,}`` before anything but three digits, a decimal comma, is rejected), a root sign before
  digits is the root of all of them (the default read it over the first digit: ``sqrt(2)*2`` for the root of 22)
  and ``2\frac14`` is 9/4 (the default: 1/2);
* an answer that hedges is rejected wherever the hedge is (``768 or more``, ``768\text{ or more}``, ``at least
  768``, ``about 768``); other trailing words are units, as by default (``12 apples``, ``3 more``);
* an answer in variables the reference does not have never matches, and the variables take unrelated values at
  each of at least (number of variables + 1) evaluation points (the default gave them consecutive values, so
  ``b - a`` equalled 1);
* a reference interval with a square bracket must be answered with the same brackets (``(2,5]`` is not ``[2,5)``,
  ``[2, 5]`` not ``2, 5``); a bare list, a set ``\{5, 2\}`` or a parenthesised tuple is matched by the same values
  in any brackets (a tool printing a Python list, ``[3, 4]``, answers ``(3, 4)``), lists and sets in any order;
* closed forms are compared with a tolerance scaled by the larger of the two values, so the verdict is symmetric.

Model output is untrusted, so parsing is guarded rather than timed: the text is normalised by a small LaTeX-to-sympy
rewriter, then rejected unless it is at most :data:`MAX_ANSWER_CHARS` characters of digits, operators, brackets and
known names (no ``__``, no attribute access, no quotes), parsed with ``evaluate=False`` against a namespace holding
only a few sympy constructors, and rejected again if evaluating it could produce a number of more than
:data:`MAX_DIGITS` digits (``9^{9^{9}}``). Nothing here raises on model output: unparsable answers are ``None`` and
never equivalent to anything.

>>> is_equivalent(r"\dfrac{6}{4}", "3/2")
True
>>> is_equivalent(r"x = 2\sqrt{2}", r"\sqrt{8}")
True
>>> is_equivalent("0.33", "1/3")
False
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from functools import lru_cache

import sympy
from sympy.parsing.sympy_parser import (
    auto_number,
    auto_symbol,
    implicit_multiplication,
    parse_expr,
    rationalize,
)

from teamgym.core.text import extract_boxed

__all__ = ["ParsedAnswer", "parse_answer", "is_equivalent", "boxed_answer", "normalize_latex", "MAX_ANSWER_CHARS",
           "MAX_DIGITS"]

#: Longer answers (after normalisation) are rejected unparsed.
MAX_ANSWER_CHARS = 200
#: Answers whose evaluation could produce a number with more digits than this are rejected.
MAX_DIGITS = 2000

_REPLACEMENTS = (
    (r"\left", ""), (r"\right", ""), (r"\!", ""), (r"\,", ""), (r"\;", ""), (r"\:", ""), (r"\ ", ""),
    (r"\displaystyle", ""), (r"\dfrac", r"\frac"), (r"\tfrac", r"\frac"), (r"\cdot", "*"), (r"\times", "*"),
    (r"\div", "/"), (r"\pi", " pi "), (r"\infty", "oo"), ("^\\circ", ""), ("^{\\circ}", ""), (r"\%", ""), ("%", ""),
    (r"\$", ""), ("$", ""), ("\u2212", "-"), ("\u00d7", "*"), ("\u00b7", "*"), ("\u03c0", " pi "), ("\u221a", r"\sqrt"),
    (r"\{", "{"), (r"\}", "}"), ("[", "("), ("]", ")"), ("**", "^"),
)
_TEXT_COMMAND = re.compile(r"\\(?:text|textbf|mathrm|mbox|mathbf|operatorname)\s*\{([^{}]*)\}")
_THOUSANDS = re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})+(?![\d,])")
_LEADING_NAME = re.compile(r"^\s*[A-Za-z](?:_\{?\w+\}?)?\s*=(?!=)")
_TRAILING_WORDS = re.compile(r"^(.*?[\d)}])\s+[A-Za-z]{2,}(?:\s+[A-Za-z]+)*\s*$")
_STRICT_TRAILING_WORDS = re.compile(r"^(.*?[\d)}\]\x02])\s+[A-Za-z]{2,}(?:\s+[A-Za-z]+)*\s*$")
_ALLOWED = re.compile(r"^[0-9A-Za-z+\-*/^().,{}\\ ]*$")
_IDENTIFIER = re.compile(r"[A-Za-z]+")
_KNOWN_NAMES = frozenset({"sqrt", "pi", "oo"})
_EXPONENT = re.compile(r"\d\s*[eE]\s*[+-]?\s*0*(\d+)")
#: ``()`` (sympy would build a tuple), a period after a name or bracket (attribute access), ``1.x`` (the same).
_UNSAFE_SHAPE = re.compile(r"\(\s*\)|[A-Za-z)]\s*\.|\d\s*\.\s*[A-Za-z_(]")
_ROOT_SIGN_DIGITS = re.compile("\u221a\\s*(\\d+)")
#: ``2\frac14`` (9/4), not after a name, a bracket, a power, an index or a division (``x^2\frac12`` is x**2/2).
_MIXED_NUMBER = re.compile(
    r"(?:(?<=\\cdot)|(?<=\\times)|(?<![\w.)}\\^_/]))(\d+)\s*\\[dt]?frac\s*(\{\s*\d+\s*\}|\d)\s*(\{\s*\d+\s*\}|\d)"
)
_THOUSANDS_COMMA = re.compile(r"\{,\}(?=\d{3}(?!\d))")
_STRICT_THOUSANDS = re.compile(r"(?<![\d.])[1-9]\d{0,2}(?:,\d{3})+(?![\d,])")
_LEADING_ZEROS = re.compile(r"(?<![\d.A-Za-z])0+(?=\d)")
_SIDE_BY_SIDE = re.compile(r"\d\s+\.?\d")
#: Words that make an answer a hedge, not a value (``768 or more``, ``at least 768``), wherever they are.
_HEDGE = re.compile(
    r"\b(?:or|at\s+least|at\s+most|about|approx(?:imately|\.)?|roughly|nearly|almost|around|between|either|maybe|"
    r"perhaps|probably|possibly|minimum|maximum|ish|upwards?|downwards?|and\s+(?:up|above|below|over|under)|"
    r"give\s+or\s+take|not|no\s+(?:more|less|fewer)|(?:greater|smaller|larger|fewer|less|more)\s+than(?=\s*[-\d$\\])|"
    r"over|under|above|below)\b",
    re.IGNORECASE,
)
#: LaTeX spaces and the like, read as spaces before looking for hedges (``768 or\ more``, ``768 at\,least``).
_LATEX_SPACE = re.compile(r"\\[ ,;:!]|~|\\quad|\\qquad")
#: Runs of up to this many letters (``2abc``) are read as products of variables; longer ones are words, not mathematics.
_MAX_PRODUCT_NAME = 3

_NAMESPACE = {
    "Integer": sympy.Integer, "Float": sympy.Float, "Rational": sympy.Rational, "Symbol": sympy.Symbol,
    "Add": sympy.Add, "Mul": sympy.Mul, "Pow": sympy.Pow, "sqrt": sympy.sqrt, "pi": sympy.pi, "oo": sympy.oo,
    "__builtins__": {},
}
_TRANSFORMATIONS = (auto_symbol, auto_number, rationalize, implicit_multiplication)


@dataclass(frozen=True)
class ParsedAnswer:
    """An answer parsed for comparison.

    Attributes:
        values: the parsed values (one for a single answer, several for a list or tuple).
        ordered: whether ``values`` is a tuple (order matters) rather than a list of answers (a multiset).
        brackets: under ``strict``, the outer brackets of a tuple or interval as written (``"(]"``); else ``""``.
    """

    values: tuple[sympy.Expr, ...]
    ordered: bool
    brackets: str = ""


def normalize_latex(text: str, *, strict: bool = False) -> str:
    r"""Rewrite the LaTeX and prose of a typical final answer into plain sympy syntax (best effort, never raises).

    Handles ``\frac``/``\dfrac``/``\tfrac`` (also ``\frac12``), ``\sqrt{}``/``\sqrt[n]{}``, ``^``, ``\cdot``,
    ``\times``, ``\pi``, ``\text{...}`` units, dollars and percent signs, thousands separators, a leading ``x =`` and
    trailing words or periods. ``strict``: the strict checker's reading (module docstring).
    """
    return _normalize(text, strict)[0]


def _normalize(text: str, strict: bool) -> tuple[str, str]:
    """:func:`normalize_latex`, and under ``strict`` the outer brackets of what is left before ``[`` becomes ``(``
    (``"(]"``; ``"set"`` for ``\\{...\\}``; ``""`` for none): read after units and spacing are gone, so they are
    the answer's own."""
    text = text.strip()
    plain_text = _TEXT_COMMAND.sub(r"\1", text).strip()
    if plain_text and not re.search(r"[\d\\]", plain_text):
        return plain_text, ""  # a text answer (a name, a word): keep it as is
    # \text{...} after a value is a unit; on its own it is the answer.
    text = _TEXT_COMMAND.sub(" ", text) if _TEXT_COMMAND.sub("", text).strip() else plain_text
    if strict:
        text = _THOUSANDS_COMMA.sub(",", text)
        text = _ROOT_SIGN_DIGITS.sub(r"\\sqrt{\1}", text)
        text = _MIXED_NUMBER.sub(r"(\1+\\frac\2\3)", text)
        text = text.replace(r"\{", "\x01").replace(r"\}", "\x02")  # kept apart from braces until the shape is read
    for old, new in _REPLACEMENTS:
        if not (strict and old in ("[", "]")):
            text = text.replace(old, new)
    text = text.strip().rstrip(".").strip()
    match = _LEADING_NAME.match(text)
    if match:
        text = text[match.end():]
    match = (_STRICT_TRAILING_WORDS if strict else _TRAILING_WORDS).match(text)
    if match and not set(_IDENTIFIER.findall(text[match.end(1):])) & _KNOWN_NAMES:
        text = match.group(1).strip()
    shape = ""
    if strict:
        text = _STRICT_THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text)
        text = _LEADING_ZEROS.sub("", text)
        if len(text) > 1 and text[0] == "\x01" and text[-1] == "\x02":
            shape = "set"
        elif len(text) > 1 and text[0] in "([" and text[-1] in ")]":
            shape = text[0] + text[-1]
        text = text.replace("[", "(").replace("]", ")").replace("\x01", "{").replace("\x02", "}")
    else:
        text = _THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text)
    text = _rewrite_commands(text)
    return text.replace("{", "(").replace("}", ")").replace("^", "**").strip(), shape


def parse_answer(text: str, *, strict: bool = False) -> ParsedAnswer | None:
    """Parse an answer (LaTeX or plain) into sympy values, or ``None`` when it is not safely parsable mathematics."""
    if not isinstance(text, str) or len(text) > 4 * MAX_ANSWER_CHARS:
        return None
    return _parse_cached(text, strict)


@lru_cache(maxsize=4096)  # the same references and answers are parsed again every step; results are immutable
def _parse_cached(text: str, strict: bool) -> ParsedAnswer | None:
    if strict and _HEDGE.search(_LATEX_SPACE.sub(" ", _TEXT_COMMAND.sub(r" \1 ", text))):
        return None  # "768 or more", "at least 768": not one value
    try:
        normal, shape = _normalize(text, strict)
    except RecursionError:
        return None
    if not normal or len(normal) > MAX_ANSWER_CHARS or not _ALLOWED.match(normal) or "\\" in normal:
        return None
    if strict and _SIDE_BY_SIDE.search(normal):
        return None  # "45 360": two numbers, not a product
    ordered = False
    parts = _split_top_level(normal)
    if parts is None:
        return None
    if len(parts) == 1 and normal.startswith("(") and normal.endswith(")"):
        inner = _split_top_level(normal[1:-1])
        if inner is not None and len(inner) > 1 and _closes_at_end(normal):
            parts, ordered = inner, True
    brackets = ""
    if strict and ordered:
        ordered = shape != "set"
        brackets = shape if ordered else ""
    values = []
    for part in parts:
        value = _parse_single(part)
        if value is None:
            return None
        values.append(value)
    return ParsedAnswer(tuple(values), ordered, brackets)


def is_equivalent(candidate: str | None, reference: str, *, strict: bool = False) -> bool:
    """Whether ``candidate`` denotes the same answer as ``reference`` (see the module docstring); never raises.

    ``strict`` selects the checker of ``math_tool-v1`` and ``discussion-v1`` (the module docstring lists how it
    differs)."""
    if candidate is None or not isinstance(candidate, str):
        return False
    expected = parse_answer(reference, strict=strict)
    if expected is None:
        # A non-mathematical reference (a name, a word): compare normalised text.
        return bool(_plain_text(reference)) and _plain_text(candidate) == _plain_text(reference)
    got = parse_answer(candidate, strict=strict)
    if got is None or len(got.values) != len(expected.values):
        return False
    if strict and expected.ordered and got.brackets != expected.brackets and (
            "[" in expected.brackets or "]" in expected.brackets or got.brackets in ("(]", "[)")):
        return False  # an interval's ends: (2, 5] is not [2, 5); a Python list [3, 4] still answers (3, 4)
    if expected.ordered or len(expected.values) == 1:
        return all(_same_value(a, b, strict) for a, b in zip(got.values, expected.values, strict=True))
    remaining = list(got.values)
    for value in expected.values:
        match = next((i for i, other in enumerate(remaining) if _same_value(other, value, strict)), None)
        if match is None:
            return False
        remaining.pop(match)
    return True


def boxed_answer(reply: str, *, strict: bool = False) -> str | None:
    """The reply's ``\\boxed{}`` answer (``None`` without one); under ``strict`` an empty box is no answer either (the
    v1 envs give it the format penalty)."""
    answer = extract_boxed(reply)
    return None if strict and answer is not None and not answer.strip() else answer


# ---------------------------------------------------------------------- normalisation helpers
def _read_group(text: str, start: int) -> tuple[str, int]:
    """The argument of a LaTeX command at ``start``: a braced group or a single character; returns (arg, end)."""
    while start < len(text) and text[start] == " ":
        start += 1
    if start >= len(text):
        return "", start
    if text[start] != "{":
        return text[start], start + 1
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i], i + 1
    return text[start + 1 :], len(text)


def _rewrite_commands(text: str) -> str:
    r"""Turn ``\frac{a}{b}`` into ``((a)/(b))`` and ``\sqrt[n]{a}`` into ``((a)**(1/(n)))``, innermost arguments too."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("\\frac", i):
            num, i = _read_group(text, i + 5)
            den, i = _read_group(text, i)
            out.append(f"(({_rewrite_commands(num)})/({_rewrite_commands(den)}))")
        elif text.startswith("\\sqrt", i):
            i += 5
            index = ""
            if i < len(text) and text[i] == "(":  # \sqrt[n] after [ -> ( replacement
                close = text.find(")", i)
                index, i = (text[i + 1 : close], close + 1) if close != -1 else ("", i)
            arg, i = _read_group(text, i)
            arg = _rewrite_commands(arg)
            out.append(f"(({arg})**(1/({_rewrite_commands(index)})))" if index.strip() else f"sqrt({arg})")
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _split_top_level(text: str) -> list[str] | None:
    """``text`` split at commas outside brackets; ``None`` when brackets do not balance or a part is empty."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
            if depth < 0:
                return None
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    parts = [p.strip() for p in parts]
    if depth != 0 or any(not p for p in parts):
        return None
    return parts


def _closes_at_end(text: str) -> bool:
    """Whether the bracket opened at ``text[0]`` is the one closed at ``text[-1]`` (``(1,2)`` yes, ``(1)+(2)`` no)."""
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "({"
        depth -= ch in ")}"
        if depth == 0:
            return i == len(text) - 1
    return False


def _plain_text(text: str) -> str:
    text = _TEXT_COMMAND.sub(r"\1", text.strip()).strip().rstrip(".")
    return re.sub(r"\s+", " ", text).strip().lower()


# ---------------------------------------------------------------------- parsing and comparison
def _parse_single(text: str) -> sympy.Expr | None:
    names = _IDENTIFIER.findall(text)
    if "__" in text or (re.fullmatch(r"[A-Za-z]{2,}(?:\s+[A-Za-z]+)*", text) and text not in _KNOWN_NAMES):
        return None  # a word or a name is text, not a product of variables
    if any(len(name) > _MAX_PRODUCT_NAME and name not in _KNOWN_NAMES for name in names):
        return None
    # Multi-letter names would reach sympy's namespace: split short products of variables (2xy) ourselves.
    text = _IDENTIFIER.sub(lambda m: m.group(0) if m.group(0) in _KNOWN_NAMES else "*".join(m.group(0)), text)
    if any(len(exponent) > 3 for exponent in _EXPONENT.findall(text)):
        return None  # 1e999999 would become a million-digit rational before any bound is checked
    if "," in text or _UNSAFE_SHAPE.search(text):
        return None  # a nested list, an empty bracket (a tuple), attribute access, or a stray period
    # A variable before a bracket is a product (x(x+1)), never a call of an undefined function.
    text = re.sub(r"\b(?!sqrt\b)([A-Za-z]+)\s*\(", r"\1*(", text)
    try:
        expr = parse_expr(text, local_dict={}, global_dict=dict(_NAMESPACE), transformations=_TRANSFORMATIONS,
                          evaluate=False)
    except (Exception, RecursionError):  # sympy's parser raises a dozen unrelated types on malformed input
        return None
    if not isinstance(expr, sympy.Expr) or _digit_bound(expr) > MAX_DIGITS:
        return None
    try:
        value = expr.doit()
    except (Exception, RecursionError):  # evaluation errors of any type mean "not a value"
        return None
    if not isinstance(value, sympy.Expr) or value.has(sympy.zoo, sympy.nan):
        return None
    return value


def _digit_bound(expr: sympy.Basic) -> float:
    """An upper bound on the digits of any number met while evaluating ``expr`` (symbols count as 1 digit)."""
    if isinstance(expr, sympy.Rational):  # integers too; bit lengths, as str() of a huge int raises
        return (abs(int(expr.p)).bit_length() + int(expr.q).bit_length()) * _LOG10_2 + 2
    if isinstance(expr, sympy.Float):
        return 20.0
    if not expr.args:
        return 1.0
    if isinstance(expr, sympy.Pow):
        base, exponent = expr.args
        if exponent.free_symbols:
            return math.inf if _digit_bound(exponent) > 4 else 10 * _digit_bound(base) * _digit_bound(exponent)
        if _digit_bound(exponent) > 12:
            return math.inf
        try:
            size = abs(float(exponent.doit()))
        except (TypeError, ValueError, OverflowError, ZeroDivisionError):
            return math.inf
        return _digit_bound(base) * max(1.0, size) if math.isfinite(size) else math.inf
    if isinstance(expr, sympy.Add):
        return max(_digit_bound(arg) for arg in expr.args) + 1
    return math.fsum(_digit_bound(arg) for arg in expr.args)


_LOG10_2 = math.log10(2)
_POINTS = (sympy.Rational(3, 7), sympy.Rational(-5, 3), sympy.Rational(11, 2), sympy.Rational(-17, 13),
           sympy.Rational(29, 11))


def _same_value(a: sympy.Expr, b: sympy.Expr, strict: bool = False) -> bool:
    """Whether the candidate value ``a`` equals the reference value ``b``."""
    try:
        if a == b:
            return True
        if isinstance(a, sympy.Rational) and isinstance(b, sympy.Rational):
            return False  # exact and different
        if strict and not a.free_symbols <= b.free_symbols:
            return False  # a variable the reference does not have: "b - a" is not 1
        diff = a - b
        if not diff.free_symbols:
            return _numerically_zero(diff, scale=b, other=a if strict else None)
        # Values at fixed rational points, not expand() or simplify(): those can take minutes on (a+b+c+d)^{30}.
        symbols = sorted(diff.free_symbols, key=str)
        points = range(max(len(_POINTS), len(symbols) + 1)) if strict else range(len(_POINTS))
        for shift in points:
            if strict:
                values = {s: _strict_point(shift, k) for k, s in enumerate(symbols)}
            else:
                values = {s: _POINTS[shift] + k for k, s in enumerate(symbols, start=shift)}
            scale = b.subs(values)
            if not _numerically_zero(diff.subs(values), scale=scale, other=a.subs(values) if strict else None):
                return False
        return True
    except (Exception, RecursionError):  # a comparison sympy cannot do is not a match
        return False


def _strict_point(point: int, variable: int) -> sympy.Rational:
    """The value of the ``variable``-th variable at the ``point``-th evaluation point under ``strict``: drawn from a
    generator seeded by both, so no variable's values are a fixed multiple or shift of another's."""
    rng = random.Random(1_000_003 * point + variable)
    return sympy.Rational(rng.choice([-1, 1]) * rng.randint(1, 997), rng.randint(2, 101))


def _numerically_zero(diff: sympy.Expr, scale: sympy.Expr, other: sympy.Expr | None = None) -> bool:
    """Whether ``diff`` is zero relative to ``scale`` (and, under ``strict``, to ``other``: the larger counts)."""
    value = sympy.N(diff, 60)
    size = sympy.N(scale, 60)
    if other is not None:
        other_size = sympy.N(other, 60)
        if other_size.is_number and size.is_number and abs(other_size) > abs(size):
            size = other_size
    if not (value.is_number and size.is_number) or value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        return bool(diff.equals(0))
    if not value.is_real or not size.is_real:
        return abs(complex(value)) <= 1e-40 * (1 + abs(complex(size)))
    return abs(value) <= sympy.Float("1e-40", 60) * (1 + abs(size))
