r"""Procedural math problems with exact answers, generated from an integer seed.

Four families, each with three difficulty levels; every answer is computed exactly with sympy, so every problem is
solvable and its answer checkable with :func:`~teamgym.envs.math_tool.answers.is_equivalent`.

===================  ============================  =================================  =================================
family               difficulty 1                  difficulty 2                       difficulty 3
===================  ============================  =================================  =================================
``arithmetic``       ``a + b * c``, ``a - b * c``  sum or difference of two fractions  a squared fraction minus a
                                                                                      product
``algebra``          ``a x + b = c`` (integer x)   ``a x + b = c x + d`` (fraction)   positive root of a quadratic
                                                                                      (a radical)
``number_theory``    gcd or lcm of two numbers     ``a^b mod m``                      number or sum of divisors, or a
                                                                                      modular inverse
``counting``         binomial coefficient          arrangements of a word's letters   dice probability, or inclusion-
                                                                                      exclusion count
===================  ============================  =================================  =================================

The same ``(seed, difficulty, families)`` always gives the same problem (a private ``random.Random(seed)``; no global
RNG). With ``difficulty=None`` the level is drawn from the seed as well.

>>> problem = generate_problem(7, difficulty=1, families=("algebra",))
>>> problem.family, problem.difficulty
('algebra', 1)
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import factorial, gcd, lcm

import sympy

from teamgym.errors import InvalidArgumentError

__all__ = ["MathProblem", "FAMILIES", "DIFFICULTIES", "generate_problem", "check_generator_options"]

DIFFICULTIES = (1, 2, 3)


@dataclass(frozen=True)
class MathProblem:
    """One problem with its exact answer.

    Attributes:
        task_id: the seed (procedural problems) or the dataset's id.
        question: the problem statement shown to the agents.
        answer: the reference answer (LaTeX or plain; anything :func:`is_equivalent` parses).
        family: the generator family, or the dataset format (``gsm8k``, ``math``, ``aime``, ``teamgym``).
        difficulty: 1-3 for procedural problems, 0 when unknown (datasets).
        answer_plain: the answer in plain sympy syntax (what a Python program would print).
    """

    task_id: int | str
    question: str
    answer: str
    family: str
    difficulty: int
    answer_plain: str


def _frac(value: sympy.Rational) -> str:
    return sympy.latex(value)


def _arithmetic(rng: random.Random, level: int) -> tuple[str, sympy.Expr]:
    if level == 1:
        a, b, c = rng.randint(2, 99), rng.randint(2, 20), rng.randint(2, 20)
        op = rng.choice("+-")
        value = a + b * c if op == "+" else a - b * c
        return f"Compute ${a} {op} {b} \\times {c}$.", sympy.Integer(value)
    if level == 2:
        x = sympy.Rational(rng.randint(1, 12), rng.randint(2, 12))
        y = sympy.Rational(rng.randint(1, 12), rng.randint(2, 12))
        op = rng.choice("+-")
        value = x + y if op == "+" else x - y
        return (f"Compute ${_frac(x)} {op} {_frac(y)}$. Give the answer as a fraction in lowest terms.",
                sympy.nsimplify(value))
    x = sympy.Rational(rng.randint(1, 9), rng.randint(2, 9))
    y = sympy.Rational(rng.randint(1, 9), rng.randint(2, 9))
    k = rng.randint(2, 15)
    return (f"Compute $\\left({_frac(x)}\\right)^2 - {_frac(y)} \\cdot {k}$. Give the answer exactly.",
            x**2 - y * k)


def _algebra(rng: random.Random, level: int) -> tuple[str, sympy.Expr]:
    if level == 1:
        a, x, b = rng.randint(2, 12), rng.randint(-20, 20), rng.randint(-30, 30)
        return f"Solve for $x$: ${a}x{_signed(b)} = {a * x + b}$.", sympy.Integer(x)
    if level == 2:
        a, c = rng.sample(range(2, 15), 2)
        b, d = rng.randint(-30, 30), rng.randint(-30, 30)
        value = sympy.Rational(d - b, a - c)
        return f"Solve for $x$: ${a}x{_signed(b)} = {c}x{_signed(d)}$.", value
    while True:
        b, c = rng.randint(-12, 12), rng.randint(-40, -1)  # c < 0: one positive and one negative root
        discriminant = b * b - 4 * c
        if sympy.sqrt(discriminant).is_rational is False:
            break
    root = (-b + sympy.sqrt(discriminant)) / 2
    return (f"Find the positive solution of $x^2{_signed(b, 'x')}{_signed(c)} = 0$. Give the exact value.",
            sympy.radsimp(root))


def _number_theory(rng: random.Random, level: int) -> tuple[str, sympy.Expr]:
    if level == 1:
        g = rng.randint(2, 15)
        a, b = g * rng.randint(2, 20), g * rng.randint(2, 20)
        if rng.random() < 0.5:
            return f"What is the greatest common divisor of ${a}$ and ${b}$?", sympy.Integer(gcd(a, b))
        return f"What is the least common multiple of ${a}$ and ${b}$?", sympy.Integer(lcm(a, b))
    if level == 2:
        a, b, m = rng.randint(2, 30), rng.randint(5, 60), rng.randint(3, 50)
        return f"What is the remainder when ${a}^{{{b}}}$ is divided by ${m}$?", sympy.Integer(pow(a, b, m))
    kind = rng.randrange(3)
    if kind == 2:
        while True:
            m, a = rng.randint(7, 60), rng.randint(2, 50)
            if gcd(a, m) == 1 and a % m:
                break
        return (f"Find the smallest positive integer $x$ such that ${a}x \\equiv 1 \\pmod{{{m}}}$.",
                sympy.Integer(pow(a, -1, m)))
    n = rng.randint(24, 720)
    if kind == 0:
        return f"How many positive divisors does ${n}$ have?", sympy.Integer(sympy.divisor_count(n))
    return f"What is the sum of all positive divisors of ${n}$?", sympy.Integer(sympy.divisor_sigma(n))


_WORDS = ("BANANA", "LETTER", "COOKIE", "PEPPER", "BALLOON", "SUCCESS", "MISSISSIPPI", "COFFEE", "TOFFEE", "ADDRESS",
          "BOOKKEEPER", "COMMITTEE", "ASSESS", "PAPAYA", "LEVEL", "RADAR")


def _counting(rng: random.Random, level: int) -> tuple[str, sympy.Expr]:
    if level == 1:
        n = rng.randint(5, 20)
        k = rng.randint(2, min(6, n - 1))
        return (f"In how many ways can a committee of ${k}$ people be chosen from ${n}$ people?",
                sympy.Integer(sympy.binomial(n, k)))
    if level == 2:
        word = rng.choice(_WORDS)
        count = factorial(len(word))
        for repeats in Counter(word).values():
            count //= factorial(repeats)
        return f"How many distinct arrangements of the letters of the word {word} are there?", sympy.Integer(count)
    if rng.random() < 0.5:
        total = rng.randint(2, 12)
        ways = sum(1 for i in range(1, 7) for j in range(1, 7) if i + j == total)
        return (f"Two fair six-sided dice are rolled. What is the probability that the sum is ${total}$? "
                "Give the answer as a fraction in lowest terms.", sympy.Rational(ways, 36))
    a, b = rng.sample(range(2, 13), 2)
    n = rng.randint(50, 1000)
    value = n // a + n // b - n // lcm(a, b)
    return f"How many integers from $1$ to ${n}$ are divisible by ${a}$ or by ${b}$?", sympy.Integer(value)


def _signed(value: int, suffix: str = "") -> str:
    """`` + 3x`` / `` - 3x`` for writing a term after another one; nothing for a zero term."""
    if value == 0:
        return ""
    return f" + {value}{suffix}" if value > 0 else f" - {-value}{suffix}"


FAMILIES: dict[str, Callable[[random.Random, int], tuple[str, sympy.Expr]]] = {
    "arithmetic": _arithmetic,
    "algebra": _algebra,
    "number_theory": _number_theory,
    "counting": _counting,
}


def check_generator_options(difficulty: int | None, families: Sequence[str] | None) -> tuple[str, ...]:
    """Validate the generator options; returns the families to draw from (all of them for ``None``)."""
    if difficulty is not None and (isinstance(difficulty, bool) or difficulty not in DIFFICULTIES):
        raise InvalidArgumentError(f"difficulty={difficulty!r}: expected one of {DIFFICULTIES} or None (mixed)")
    if families is None:
        return tuple(FAMILIES)
    if isinstance(families, str):
        families = (families,)
    chosen = tuple(families)
    unknown = [f for f in chosen if f not in FAMILIES]
    if not chosen or unknown:
        raise InvalidArgumentError(
            f"families={families!r}: expected a non-empty subset of {list(FAMILIES)} (or None for all of them)"
        )
    return chosen


def generate_problem(seed: int, *, difficulty: int | None = None, families: Sequence[str] | None = None) -> MathProblem:
    """The problem of ``seed``: same seed and options, same problem.

    Args:
        seed: any int.
        difficulty: 1, 2 or 3; ``None`` draws it from the seed.
        families: the families to draw from (default: all of :data:`FAMILIES`).
    """
    chosen = check_generator_options(difficulty, families)
    rng = random.Random(seed)
    family = chosen[rng.randrange(len(chosen))]
    level = difficulty if difficulty is not None else rng.choice(DIFFICULTIES)
    question, value = FAMILIES[family](rng, level)
    return MathProblem(task_id=seed, question=question, answer=sympy.latex(value), family=family, difficulty=level,
                       answer_plain=sympy.sstr(value))
