from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from teamgym.core.text import clip_text, extract_boxed, extract_code_blocks, sanitize_text, select_code_block


def test_extract_blocks_languages_and_unclosed():
    text = "a\n```python\nx = 1\n```\nb\n```js\ny\n```\n```\nlast"
    blocks = extract_code_blocks(text)
    assert [(b.language, b.code, b.closed) for b in blocks] == [
        ("python", "x = 1\n", True),
        ("js", "y\n", True),
        ("", "last", False),
    ]


def test_select_prefers_last_closed_python_block():
    text = "```python\nfirst\n```\n```py\nsecond\n```\n```python\ncut off"
    assert select_code_block(text).code == "second\n"
    assert select_code_block(text, which="first").code == "first\n"
    assert select_code_block("```python\nonly open").code == "only open"
    assert select_code_block("no code at all") is None
    assert select_code_block("```js\nx\n```") is None


def test_longer_fences_nest_shorter_ones():
    text = "````python\nprint('```')\n```\n````"
    assert extract_code_blocks(text)[0].code == "print('```')\n```\n"


def test_boxed_matches_braces_and_takes_last():
    assert extract_boxed(r"\boxed{1} then \boxed{\frac{a}{b}}") == r"\frac{a}{b}"
    assert extract_boxed(r"\boxed{ 42 }") == "42"
    assert extract_boxed("no box") is None
    assert extract_boxed(r"\boxed{never closes") is None


def test_sanitize_replaces_only_surrogates():
    assert sanitize_text("ok\x00\u202e") == "ok\x00\u202e"
    cleaned = sanitize_text("a\ud800b\udfff")
    assert cleaned == "a\ufffdb\ufffd"
    cleaned.encode("utf-8")


@given(st.text(), st.integers(min_value=0, max_value=500))
def test_clip_never_exceeds_limit_and_keeps_short_text(text, limit):
    clipped = clip_text(text, limit)
    assert len(clipped) <= max(limit, 0)
    if len(text) <= limit:
        assert clipped == text


def test_clip_keeps_head_and_tail():
    text = "HEAD" + "x" * 1000 + "TAIL"
    clipped = clip_text(text, 200)
    assert clipped.startswith("HEAD") and clipped.endswith("TAIL") and "cut" in clipped


@given(st.text())
def test_parsers_never_raise(text):
    extract_code_blocks(text)
    select_code_block(text)
    extract_boxed(text)
