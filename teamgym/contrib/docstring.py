r"""An env module's docstring (the env's docs page) read as titled sections and written as Markdown.

The built-in envs write their docs page in one of two reStructuredText styles, and both are read here:

* definition-list sections: a title line at the margin, its text indented below it (``math_tool``, ``discussion``);
* bold run-in titles: a paragraph starting ``**Rewards.**`` (or ``**Rewards**``) opens a section that runs to the
  next one (``coder_tester``, the planning envs).

Inside a section: paragraphs, ``::`` literal blocks, simple tables (``====  ====`` borders; a row whose first cell
is empty continues the row above) and ``>>>`` examples. Inline: double-backquoted literals become code spans and
roles (``:mod:`~teamgym.envs.planning.base```) their target (``base``).

>>> table = "    ====  =====\n    term  range\n    ====  =====\n    team  [0, 1]\n    ====  ====="
>>> page = parse("``x-v0``: a game.\n\nRewards\n" + table)
>>> page.summary, page.sections[0].title
('`x-v0`: a game.', 'Rewards')
>>> print(page.sections[0].markdown)
| term | range |
| --- | --- |
| team | [0, 1] |
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

__all__ = ["DocPage", "Section", "inline", "parse"]

_BORDER = re.compile(r"^\s*=+(?:\s+=+)+\s*$")
_BOLD_TITLE = re.compile(r"^\*\*(?P<title>[^*]+?)(?P<stop>[.:]?)\*\*(?P<after>[.:]?)\s*")
_ROLE = re.compile(r":[a-z]+:`(?P<target>[^`]+)`")
_LITERAL = re.compile(r"(?<!`)``(?!`)(?P<code>(?:(?!\n\s*\n).)+?)(?<!`)``(?!`)", flags=re.S)


@dataclass(frozen=True)
class Section:
    """One titled part of a docs page (``title`` is ``""`` for the text before the first title)."""

    title: str
    markdown: str


@dataclass(frozen=True)
class DocPage:
    """A docstring read as a docs page.

    Attributes:
        summary: the first paragraph, in Markdown.
        sections: the titled sections in order (an untitled first one holds any text before the first title).
        examples: the ``>>>`` examples, as Python source.
    """

    summary: str
    sections: tuple[Section, ...]
    examples: tuple[str, ...]

    def section(self, prefix: str) -> Section | None:
        """The first section whose title starts with ``prefix`` (case-insensitive), or ``None``."""
        return next((s for s in self.sections if s.title.lower().startswith(prefix.lower())), None)


def inline(text: str) -> str:
    """reStructuredText inline markup as Markdown: ````code```` to `code`, roles to their (short) target."""

    def role(match: re.Match[str]) -> str:
        target = match.group("target")
        label = re.match(r"(?P<label>.+?)\s*<[^>]+>$", target)
        if label:
            return label.group("label")
        return f"`{target.lstrip('~').rsplit('.', 1)[-1] if target.startswith('~') else target}`"

    return _LITERAL.sub(lambda m: f"`{' '.join(m.group('code').split())}`", _ROLE.sub(role, text))


def parse(docstring: str) -> DocPage:
    """Read a (cleaned, e.g. ``inspect.getdoc``) module docstring as a :class:`DocPage`."""
    lines = docstring.strip("\n").splitlines()
    blocks = _blocks(lines)
    examples = tuple(text for kind, text in blocks if kind == "example")
    blocks = [(kind, text) for kind, text in blocks if kind != "example"]
    summary = inline(" ".join(blocks[0][1].split())) if blocks else ""
    sections: list[tuple[str, list[str]]] = [("", [])]
    for kind, text in blocks[1:]:
        if kind == "section":
            title, _, body = text.partition("\n")
            sections.append((inline(title.strip()), [_markdown(textwrap.dedent(body).splitlines())]))
            continue
        bold = _BOLD_TITLE.match(text) if kind == "paragraph" else None
        if bold:
            sections.append((inline(bold.group("title").strip()), []))
            # "**Task.** A grid..." loses its title; in "**Bad input** never raises" the title is in the sentence.
            text = text[bold.end():] if bold.group("stop") or bold.group("after") else text
            if not text.strip():
                continue
        sections[-1][1].append(_render(kind, text))
    return DocPage(summary, tuple(Section(t, "\n\n".join(p for p in parts if p)) for t, parts in sections
                                  if t or parts), examples)


def _markdown(lines: list[str]) -> str:
    """Markdown for a run of lines that holds no section titles (a section's body)."""
    return "\n\n".join(_render(kind, text) for kind, text in _blocks(lines, sections=False))


def _render(kind: str, text: str) -> str:
    if kind == "table":
        return _table(text.splitlines())
    if kind == "literal":
        return f"```text\n{text}\n```"
    if kind == "example":
        return f"```python\n{text}\n```"
    return inline(text)


def _blocks(lines: list[str], *, sections: bool = True) -> list[tuple[str, str]]:
    """Split lines into ``(kind, text)`` blocks: paragraph, table, literal, example, and (top level) section."""
    blocks: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if _BORDER.match(line):
            end = _table_end(lines, i)
            blocks.append(("table", textwrap.dedent("\n".join(lines[i:end]))))
            i = end
            continue
        if line.lstrip().startswith(">>>"):
            end = _until_blank(lines, i)
            blocks.append(("example", textwrap.dedent("\n".join(lines[i:end]))))
            i = end
            continue
        if sections and _is_title(lines, i):
            end = i + 1
            while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > 0):
                end += 1
            blocks.append(("section", "\n".join(lines[i:end]).rstrip()))
            i = end
            continue
        end = _until_blank(lines, i)
        paragraph = textwrap.dedent("\n".join(lines[i:end]))
        if paragraph.endswith("::"):
            blocks.append(("paragraph", paragraph[:-2].rstrip() + ("" if paragraph.endswith(" ::") else ":")))
            i, literal = _literal(lines, end, _indent(line))
            blocks.append(("literal", literal))
            continue
        blocks.append(("paragraph", paragraph))
        i = end
    return blocks


def _is_title(lines: list[str], i: int) -> bool:
    """A definition-list title: a one-line paragraph at the margin whose text follows, indented."""
    line = lines[i]
    if _indent(line) > 0 or line.startswith("**") or line.rstrip().endswith("::"):
        return False
    following = next((other for other in lines[i + 1:] if other.strip()), "")
    next_line = lines[i + 1] if i + 1 < len(lines) else ""
    return bool(following) and _indent(following) > 0 and (not next_line.strip() or _indent(next_line) > 0)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _until_blank(lines: list[str], i: int) -> int:
    while i < len(lines) and lines[i].strip():
        i += 1
    return i


def _literal(lines: list[str], i: int, margin: int) -> tuple[int, str]:
    """The literal block after a ``::`` paragraph: the lines indented past ``margin`` (blank lines inside kept)."""
    start = i
    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > margin):
        i += 1
    while i > start and not lines[i - 1].strip():
        i -= 1
    return i, textwrap.dedent("\n".join(lines[start:i])).strip("\n")


def _table_end(lines: list[str], start: int) -> int:
    """The index after a simple table: its third border, or its second when nothing follows it (no header)."""
    borders = 0
    i = start
    while i < len(lines):
        if _BORDER.match(lines[i]):
            borders += 1
            ends = i + 1 >= len(lines) or not lines[i + 1].strip()
            if borders == 3 or (borders == 2 and ends):
                return i + 1
        i += 1
    return len(lines)


def _table(lines: list[str]) -> str:
    """A reStructuredText simple table as a Markdown table (continuation rows joined to the row above)."""
    border = lines[0]
    spans = [(m.start(), m.end()) for m in re.finditer(r"=+", border)]
    borders = [i for i, line in enumerate(lines) if _BORDER.match(line)]
    has_header = len(borders) == 3
    rows: list[list[str]] = []
    header: list[str] = [""] * len(spans)
    for index, line in enumerate(lines):
        if index in borders:
            continue
        cells = [line[start:(spans[k + 1][0] if k + 1 < len(spans) else len(line))].strip()
                 for k, (start, _) in enumerate(spans)]
        if has_header and index < borders[1]:
            header = [" ".join(filter(None, pair)) for pair in zip(header, cells)]
        elif rows and not cells[0]:
            rows[-1] = [" ".join(filter(None, pair)) for pair in zip(rows[-1], cells)]
        else:
            rows.append(cells)
    out = [_row(header), "| " + " | ".join("---" for _ in spans) + " |"]
    out += [_row(row) for row in rows]
    return "\n".join(out)


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(inline(cell).replace("|", "\\|") for cell in cells) + " |"
