"""The environment-file contract: action extraction, the return rule, result normalisation."""

import pytest

from spadegym.envfile import (
    ContractError,
    episode_return,
    extract_action,
    hint_line,
    inspect_source,
    normalize_reset,
    normalize_step,
    normalized_code_hash,
    with_hint,
)
from spadegym.envfile.static import SourceError, find_env_class_name


@pytest.mark.parametrize(
    ("reply", "action"),
    [
        (r"The answer is \boxed{42}", "42"),
        (r"\boxed{1} no wait \boxed{2}", "2"),  # the last box wins
        (r"<think>maybe \boxed{7}</think> final: \boxed{8}", "8"),  # thinking is ignored
        (r"<think>only thinking \boxed{7}</think>", None),
        (r"<think>unclosed \boxed{7}", None),  # an unclosed think hides the rest
        (r"reasoning \boxed{3}</think> then \boxed{4}", "4"),  # opening tag dropped by the server
        (r"\boxed{f(x) = {a, b}}", "f(x) = {a, b}"),  # nested braces kept
        (r"\boxed{ go north }", "go north"),
        (r"\boxed {spaced}", "spaced"),
        (r"\boxed{unterminated", None),
        ("no box at all", None),
        (r"\boxed{}", ""),
    ],
)
def test_extract_action(reply, action):
    assert extract_action(reply) == action


@pytest.mark.parametrize(
    ("reward", "terminated", "ret"),
    [(1.0, True, 1.0), (0.5, True, 0.5), (7.0, True, 1.0), (-3.0, True, -1.0), (1.0, False, 0.0),
     (float("nan"), True, 0.0)],
)
def test_return_rule(reward, terminated, ret):
    assert episode_return(reward, terminated) == ret


def test_hint_has_one_fixed_form():
    assert hint_line("press  the\nred button") == "hint: press the red button"
    assert with_hint("You see a door.\n", "open it") == "You see a door.\nhint: open it"
    assert with_hint("obs", None) == "obs"


def test_normalize_reset_accepts_tuple_and_bare_string():
    assert normalize_reset(("obs", {"a": 1})).info == {"a": 1}
    assert normalize_reset("obs").observation == "obs"
    assert normalize_reset(("obs", None)).info == {}
    with pytest.raises(ContractError, match="observation must be a str"):
        normalize_reset((3, {}))
    with pytest.raises(ContractError, match="must return"):
        normalize_reset(["obs", {}])


def test_normalize_step_reads_five_and_four_tuples():
    s = normalize_step(("o", 1, True, False, {}))
    assert (s.reward, s.terminated, s.truncated) == (1.0, True, False)
    old = normalize_step(("o", 0.5, True, {}))
    assert old.terminated and not old.truncated
    with pytest.raises(ContractError, match="finite"):
        normalize_step(("o", float("inf"), False, False, {}))
    with pytest.raises(ContractError, match="reward must be a number"):
        normalize_step(("o", "1", False, False, {}))
    with pytest.raises(ContractError, match="terminated must be a bool"):
        normalize_step(("o", 0.0, "yes", False, {}))
    with pytest.raises(ContractError, match="length 3"):
        normalize_step(("o", 0.0, False))


def test_env_class_rules():
    assert find_env_class_name("class Helper: pass\nclass MazeEnv:\n  pass\n") == "MazeEnv"
    with pytest.raises(SourceError, match="No environment class"):
        find_env_class_name("class Env: pass\n")
    # The first, as the reference's loader takes it (the gate says which rule is in force for a file).
    assert find_env_class_name("class AEnv: pass\nclass BEnv: pass\n") == "AEnv"
    with pytest.raises(SourceError, match="line 1"):
        find_env_class_name("class X(:\n")


def test_inspect_source_reads_metadata_without_running():
    src = (
        'SKILL = "Logical Deduction"\nDIFFICULTY = {"size": 3}\nraise SystemExit\n'
        "class LockEnv:\n    max_turns = 9\n    hint = 'try 3'\n"
        "    def reset(self, seed=None): pass\n    def solution(self): pass\n"
    )
    info = inspect_source(src)
    assert (info.class_name, info.skill, info.difficulty, info.declared_max_turns) == (
        "LockEnv", "Logical Deduction", {"size": 3}, 9)
    assert info.has_solution and not info.has_valid_actions and info.static_hint == "try 3"


def test_code_hash_ignores_comments_and_docstrings():
    a = 'class AEnv:\n    """doc"""\n    x = 1  # note\n'
    b = "class AEnv:\n    '''other doc'''\n\n    x = 1\n"
    c = "class AEnv:\n    x = 2\n"
    assert normalized_code_hash(a) == normalized_code_hash(b) != normalized_code_hash(c)


def test_without_hint_removes_exactly_the_hint_line():
    from spadegym.envfile.contract import with_hint, without_hint

    observation = "room: 3\nexits: north, east"
    assert without_hint(with_hint(observation, "go north")) == observation
    assert without_hint(observation) == observation
    assert without_hint("hint: only a hint") == "hint: only a hint"  # not a hint line appended to anything
