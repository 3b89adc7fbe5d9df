"""The random, scripted and human agents."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from spadegym.agents import HumanAgent, PlayerQuit, RandomAgent, ScriptedAgent, ScriptError, View, read_script
from spadegym.agents.random_agent import SHORT_ANSWERS
from spadegym.envfile import extract_action


def act(agent, views):
    return asyncio.run(agent.act(views))


def test_random_picks_among_valid_actions_deterministically() -> None:
    views = [View(f"ep{i}", "obs", valid_actions=["a", "b", "c"]) for i in range(30)]
    first = act(RandomAgent(seed=1), views)
    again = act(RandomAgent(seed=1), list(reversed(views)))  # batching order does not matter
    other = act(RandomAgent(seed=2), views)
    assert {r.action for r in first} == {"a", "b", "c"}
    assert [r.action for r in first] == [r.action for r in reversed(again)]
    assert [r.action for r in first] != [r.action for r in other]
    assert all(extract_action(r.text) == r.action for r in first)


def test_random_without_valid_actions_answers_short_generic_actions() -> None:
    agent = RandomAgent(seed=0)
    replies = act(agent, [View(f"e{i}", "What now?") for i in range(200)])
    known = {a for answers in SHORT_ANSWERS.values() for a in answers}
    assert {r.action for r in replies} <= known
    families = {name for name, answers in SHORT_ANSWERS.items() for r in replies if r.action in answers}
    assert families == set(SHORT_ANSWERS)
    assert all(extract_action(r.text) == r.action for r in replies)


def test_script_files_lines_comments_json_and_errors(tmp_path: Path) -> None:
    lines = tmp_path / "moves.txt"
    lines.write_text("# the way out\nnorth\n\n  east  \nI think \\boxed{south}\n")
    assert read_script(lines) == ["north", "east", "I think \\boxed{south}"]
    listed = tmp_path / "moves.json"
    listed.write_text('["#not a comment", "a b"]')
    assert read_script(listed) == ["#not a comment", "a b"]
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    with pytest.raises(ScriptError, match="holds no actions"):
        read_script(empty)
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ScriptError, match="JSON list of strings"):
        read_script(bad)


def test_scripted_replays_per_episode_and_errors_when_exhausted(tmp_path: Path) -> None:
    agent = ScriptedAgent(["north", "I go \\boxed{east}", "\\boxed{"], source="moves.txt")
    a1, b1 = act(agent, [View("a", "o"), View("b", "o")])
    assert (a1.action, a1.text) == ("north", "\\boxed{north}") and b1.action == "north"
    [a2] = act(agent, [View("a", "o")])
    assert a2.action == "east" and a2.text == "I go \\boxed{east}"
    [a3] = act(agent, [View("a", "o")])
    assert a3.action is None and a3.error is None  # a recorded format failure replays as one
    [a4] = act(agent, [View("a", "o")])
    assert a4.error is not None and "moves.txt" in a4.error and "turn 4" in a4.error
    agent.end_episodes(["a"])
    [again] = act(agent, [View("a", "o")])
    assert again.action == "north"


def test_human_reads_numbers_text_and_stops_at_end_of_input() -> None:
    out = io.StringIO()
    agent = HumanAgent(io.StringIO("\n2\ngo \\boxed{up}\nwave\n"), Console(file=out, width=80))
    first = act(agent, [View("h", "A door.", valid_actions=["open", "knock"], max_turns=3)])[0]
    assert first.action == "knock"  # the blank line was asked again
    assert "1 open" in out.getvalue() and "2 knock" in out.getvalue() and "A door." in out.getvalue()
    assert act(agent, [View("h", "Up?")])[0].action == "up"
    assert act(agent, [View("h", "Free text", valid_actions=["x"])])[0].action == "wave"
    with pytest.raises(PlayerQuit):
        act(agent, [View("h", "More?")])


def test_human_play_of_a_long_menu_keeps_the_question_on_the_screen(tmp_path) -> None:
    """docs/environment-file.md's `spadegym play examples/pool/number_guess.py --agent human`: its 100 actions
    once printed one a line, so the question scrolled off a terminal before the prompt; a long menu is columns."""
    pool = Path(__file__).parents[2] / "examples" / "pool" / "number_guess.py"
    code = "import sys; sys.argv = sys.argv[1:]; from spadegym.cli import main; main()"
    proc = subprocess.run([sys.executable, "-c", code, "spadegym", "play", str(pool), "--agent", "human"],
                          input="50\n", capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "COLUMNS": "80", "LINES": "24"})
    first_turn = proc.stderr.split("action>")[0]
    assert "Guess a number in 1..100" in first_turn and "100 100" in first_turn
    assert len(first_turn.splitlines()) <= 24, first_turn  # a 24-line terminal shows the question and the menu
