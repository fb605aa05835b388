"""Text helpers every text env shares: sanitising completions, clipping prompts, and parsing answers out of them.

Parsers never raise on model output: garbage in, ``None`` or an empty list out, so that the env can score it with its
documented format penalty.

>>> blocks = extract_code_blocks("Plan.\\n```python\\nprint(1)\\n```\\nDone.")
>>> blocks[0].code, blocks[0].language, blocks[0].closed
('print(1)\\n', 'python', True)
>>> extract_boxed(r"so the answer is \\boxed{\\frac{1}{2}}.")
'\\\\frac{1}{2}'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CodeBlock", "sanitize_text", "clip_text", "extract_code_blocks", "select_code_block", "extract_boxed"]


_SURROGATE = re.compile("[\ud800-\udfff]")


def sanitize_text(text: str) -> str:
    """``text`` made safe to encode as UTF-8 and to pass to a subprocess: lone surrogates become U+FFFD.

    Everything else (NUL bytes, control characters, RTL overrides) is kept: it is the model's output, and whatever it
    means is for the env's parser and the sandbox to judge.
    """
    return _SURROGATE.sub("\ufffd", text)


def clip_text(text: str, limit: int, *, marker: str = "\n...[{n} characters cut]...\n") -> str:
    """``text`` if at most ``limit`` characters long, else its head and tail joined by a marker saying how much was cut.

    The result never exceeds ``limit`` characters (for ``limit`` below the marker's size, a plain head cut).
    """
    if len(text) <= limit:
        return text
    # The marker's size depends on the count it prints; the count is at most len(text), so size it with that.
    room = limit - len(marker.format(n=len(text)))
    if room < 16:
        return text[:limit]
    head = room - room // 3
    tail = room - head
    return text[:head] + marker.format(n=len(text) - head - tail) + text[len(text) - tail :]


@dataclass(frozen=True)
class CodeBlock:
    """One fenced block found in a completion.

    Attributes:
        code: the text between the fences (the opening line with its language tag excluded).
        language: the tag after the opening fence, lower-cased ("" when absent).
        closed: False when the completion ended before the closing fence (e.g. cut off at max tokens).
    """

    code: str
    language: str
    closed: bool


_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+#.-]*)[^\n]*$", re.MULTILINE)


def extract_code_blocks(text: str) -> list[CodeBlock]:
    """Every fenced code block in ``text``, in order. A final fence left open yields a block with ``closed=False``."""
    blocks: list[CodeBlock] = []
    pos = 0
    while True:
        opening = _FENCE.search(text, pos)
        if opening is None:
            return blocks
        fence = opening.group(1)
        language = opening.group(2).lower()
        body_start = opening.end() + 1
        closing = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$", re.MULTILINE)
        end = closing.search(text, min(body_start, len(text)))
        if end is None:
            blocks.append(CodeBlock(text[body_start:], language, closed=False))
            return blocks
        blocks.append(CodeBlock(text[body_start : end.start()], language, closed=True))
        pos = end.end()


_PYTHON_TAGS = frozenset({"python", "py", "python3", ""})


def select_code_block(text: str, *, languages: frozenset[str] = _PYTHON_TAGS, which: str = "last") -> CodeBlock | None:
    """The block an env should run: the ``which`` ("first" or "last") closed block whose language is in ``languages``.

    Falls back to an unclosed block only when there is no closed one. ``None`` when there is no block at all.
    """
    candidates = [b for b in extract_code_blocks(text) if b.language in languages]
    closed = [b for b in candidates if b.closed]
    pool = closed or candidates
    if not pool:
        return None
    return pool[-1] if which == "last" else pool[0]


_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")


def extract_boxed(text: str) -> str | None:
    r"""The content of the last ``\boxed{...}`` that closes (braces matched), stripped; ``None`` if there is none."""
    starts = [m.end() for m in _BOXED.finditer(text)]
    for start in reversed(starts):
        depth = 1
        for i in range(start, len(text)):
            ch = text[i]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return text[start:i].strip()
    return None
