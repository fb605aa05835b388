from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from teamgym.envs.coder_tester.parsing import parse_code, parse_tests


def test_coder_uses_the_last_python_block():
    text = "```python\ndef f(): return 1\n```\nbetter:\n```python\ndef f(): return 2\n```\n```text\nx\n```"
    assert parse_code(text).code == "def f(): return 2\n"
    assert parse_code("no code here").problem == "no_code_block"
    assert parse_code("```python\ndef f(:\n```").problem == "syntax_error"
    assert parse_code("```python\nprint(1)\n").code == "print(1)\n"  # unclosed fence, cut off at max tokens


def test_tester_asserts_each_top_level_assert_is_a_test_with_the_setup_before_it():
    text = (
        "```python\nimport math\nassert f(1) == 2\nX = 3\nassert f(X) == 6\nfor i in range(3):\n"
        "    assert f(i) == 2 * i\n```"
    )
    parsed = parse_tests(text, style="call", max_tests=20)
    assert [t.shown for t in parsed.tests] == ["assert f(1) == 2", "assert f(X) == 6"]
    assert parsed.tests[0].input == "import math\nassert f(1) == 2\n"
    assert parsed.tests[1].input == "import math\nX = 3\nassert f(X) == 6\n"


def test_tester_cap_duplicates_and_salvage():
    many = "```python\n" + "".join(f"assert f({i}) == {i}\n" for i in range(30)) + "assert f(0) == 0\n```"
    assert len(parse_tests(many, style="call", max_tests=20).tests) == 20
    broken = "```python\nassert f(1) == 1\nassert f(2 == \nassert f(3) == 3\n```"
    parsed = parse_tests(broken, style="call", max_tests=20)
    assert [t.shown for t in parsed.tests] == ["assert f(1) == 1", "assert f(3) == 3"] and parsed.skipped == 1
    assert parse_tests("```python\nassert\n```", style="call", max_tests=5).problem == "no_tests"
    assert parse_tests("no block", style="call", max_tests=5).problem == "no_test_block"


def test_tester_stdio_json_and_input_output_blocks():
    text = '```json\n[{"input": "1\\n", "output": "2\\n"}, {"input": 3}, "x"]\n```'
    parsed = parse_tests(text, style="stdio", max_tests=20)
    assert [(t.input, t.output) for t in parsed.tests] == [("1\n", "2\n")] and parsed.skipped == 2
    pairs = "```input\n1 2\n```\n```output\n3\n```\n```input\n5 5\n```\n```output\n10\n```"
    assert [(t.input, t.output) for t in parse_tests(pairs, style="stdio", max_tests=20).tests] == [
        ("1 2\n", "3\n"),
        ("5 5\n", "10\n"),
    ]
    assert parse_tests("```json\n{not json\n```", style="stdio", max_tests=20).problem == "no_tests"
    assert parse_tests("nothing", style="stdio", max_tests=20).problem == "no_test_block"


@given(st.text(max_size=400), st.sampled_from(["call", "stdio"]))
def test_parsers_never_raise(text, style):
    parse_code(text)
    parse_code("```python\n" + text)
    parse_tests(text, style=style, max_tests=5)
    parse_tests("```json\n" + text + "\n```", style=style, max_tests=5)
    parse_tests("```python\n" + text + "\n```", style=style, max_tests=5)
