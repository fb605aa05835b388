from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from teamgym.envs.planning.parsing import find_plan_text, parse_moves, parse_placements

moves_lists = st.lists(st.sampled_from("UDLR"), max_size=30)


def test_moves_marker_variants():
    assert parse_moves("Actions: U,R,R,D") == ["U", "R", "R", "D"]
    assert parse_moves('**Actions List**: ["U", "R"]') == ["U", "R"]
    assert parse_moves("actions = ['up', 'LEFT', 'down']") == ["U", "L", "D"]
    assert parse_moves("Final actions: UURD.") == ["U", "U", "R", "D"]
    assert parse_moves("> Action: R R") == ["R", "R"]
    assert parse_moves(r"so the plan is \boxed{R, D}") == ["R", "D"]


def test_last_marker_wins_and_only_its_line_counts():
    text = "Actions: U\nOn second thought:\nActions: D, D\nThis is because the wall blocks U."
    assert parse_moves(text) == ["D", "D"]


def test_empty_plan_is_an_empty_list():
    assert parse_moves("Actions: []") == []
    assert parse_moves("Actions:") == []


def test_no_marker_no_plan_never_guessing():
    assert parse_moves("I would go U, R, R then D") is None
    assert parse_moves("") is None
    assert parse_moves("Actions: U, R, jump") is None
    assert parse_moves("Actions: north") is None


def test_move_cap_makes_a_plan_unreadable():
    assert parse_moves("Actions: " + "U" * 11, max_moves=10) is None
    assert parse_moves("Actions: " + "U" * 10, max_moves=10) == ["U"] * 10


@given(moves_lists, st.sampled_from([",", ", ", " ", "", '", "']), st.booleans())
def test_moves_round_trip(moves, separator, brackets):
    body = separator.join(moves)
    if brackets:
        body = f"[{body}]"
    assert parse_moves(f"Reasoning first.\nActions: {body}") == moves


@given(st.text(max_size=300))
def test_moves_never_raise_on_garbage(text):
    result = parse_moves(text)
    assert result is None or all(m in "UDLR" for m in result)


def test_placements_tokens():
    assert parse_placements("Actions: r1c2=3, R4C4=1", size=4) == [(0, 1, 3), (3, 3, 1)]
    assert parse_placements("Actions: r1c2=3 and r2c2=1", size=4) is None


def test_placements_grid_forms():
    rows = [[1, 2, 3, 4], [3, 4, 1, 2], [2, 1, 4, 3], [4, 3, 2, 1]]
    expected = [(r, c, rows[r][c]) for r in range(4) for c in range(4)]
    assert parse_placements(f"Actions: {rows}", size=4) == expected
    lined = (
        "Actions:\n1 2 | 3 4\n3 4 | 1 2\n----+----\n2 1 | 4 3\n4 3 | 2 1\n\nDone, every row is a permutation."
    )
    assert parse_placements(lined, size=4) == expected
    assert parse_placements("Actions:\n1234\n3412\n2143\n432.", size=4)[-1] == (3, 3, 0)


def test_placements_wrong_cell_count_is_unreadable():
    assert parse_placements("Actions: 1 2 3", size=4) is None
    assert parse_placements("Actions: " + "1" * 17, size=4) is None
    assert parse_placements("no marker 1234341221434321", size=4) is None


@given(st.lists(st.integers(0, 9), min_size=81, max_size=81))
def test_placements_grid_round_trip(cells):
    rows = "\n".join("".join(map(str, cells[r * 9 : r * 9 + 9])) for r in range(9))
    assert parse_placements(f"Actions:\n{rows}", size=9) == [(i // 9, i % 9, d) for i, d in enumerate(cells)]


@given(st.text(max_size=300))
def test_placements_never_raise_on_garbage(text):
    parse_placements(text, size=9)
    parse_placements("Actions: " + text, size=4)


def test_find_plan_text_prefers_markers_over_boxed():
    assert find_plan_text("\\boxed{U}\nActions: D") == "D"
    assert find_plan_text("The answer. Actions: D") is None
    assert find_plan_text("nothing here") is None


def test_empty_placement_plan_is_an_empty_list():
    assert parse_placements("Actions: []", size=4) == []
    assert parse_placements("Actions: nothing", size=4) is None
