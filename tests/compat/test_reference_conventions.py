"""SPADE reference conventions: files written in each documented style pass the gate and can be won.

Every fixture in tests/fixtures/reference/ follows one convention of the
reference (spade-rl/spade) that ``contract.REFERENCE_CONVENTIONS`` names. Each
must be valid, and winnable by a scripted reply delivered as the reference
delivers it (the reply's last box, re-wrapped for files that parse the box;
``<tool_call>`` blocks and an ``<answer>`` for tool-use games). The files in
broken/ must be refused for the right reason.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from spadegym.agents.scripted import ScriptedAgent
from spadegym.envfile import ContractError, normalize_step
from spadegym.envfile.contract import REFERENCE_CONVENTIONS
from spadegym.envfile.reference import read_menu, solution_sequences, tool_plan
from spadegym.level import Level
from spadegym.rollout.runner import Play, RolloutConfig, run_episodes
from spadegym.sandbox import Sandbox
from spadegym.validate import ValidationConfig, validate_source
from spadegym.validate.config import DEFAULT_ALLOWED_IMPORTS

FIXTURES = Path(__file__).parents[1] / "fixtures" / "reference"
WITH_NUMPY = ValidationConfig(allowed_imports=[*DEFAULT_ALLOWED_IMPORTS, "numpy"], random_episodes=6)  # few: cheap
SEED = 7

# fixture -> (its action format, the convention it shows, the warnings its verdict carries)
ACCEPTED = {
    "boxed_strict": ("boxed", "boxed_action_delivery", ()),
    "prose_solution": ("boxed", "prose_solution", ()),
    "menu_only": ("boxed", "menu_in_observation", ()),
    "injected_names": ("boxed", "injected_names", ()),
    "numpy_game": ("boxed", "numpy", ()),
    "math_verify_answer": ("boxed", "math_verify", ()),
    "tool_use": ("tool_call", "tool_use_base_class", ()),
    "required_max_turns": ("boxed", "max_turns_constructor", ()),
    "partial_credit": ("boxed", "boxed_action_delivery", ()),
    "tool_use_alias_base": ("tool_call", "tool_use_detection", ()),
    "tool_use_module_base": ("tool_call", "tool_use_detection", ()),
    "tool_use_own_protocol": ("tool_call", "tool_use_detection", ()),
    "tool_use_multistep": ("tool_call", "tool_checks", ()),
    "answer_tags": ("boxed", "raw_replies", ()),
    "free_text": ("boxed", "raw_replies", ()),
    "bool_reward": ("boxed", "bool_rewards", ()),
    "two_env_classes": ("boxed", "first_env_class", ()),
    "main_demo": ("boxed", "live_code_lints", ()),
    "eval_own_strings": ("boxed", "live_code_lints", ()),
    "wordle_no_menu": ("boxed", "unverified_feasibility", ("reward_varies",)),
    "placeholder_menu": ("boxed", "placeholder_menus", ("reward_varies",)),
}


def source(name: str) -> str:
    return (FIXTURES / f"{name}.py").read_text()


def instance(sandbox: Sandbox, name: str) -> tuple[str, list[str] | None, list[dict] | None]:
    """The first observation, solution() and tools of the instance of SEED."""
    handle = sandbox.open(source(name), f"{name}.py")
    try:
        assert handle.loaded.ok, handle.loaded.message
        reset = handle.reset(seed=SEED, want=["tools"])
        assert reset.ok, reset.message
        solution = handle.call("solution").value if "solution" in handle.info["methods"] else None
        return reset.value["observation"], solution, reset.value.get("tools")
    finally:
        handle.close()


def xml_call(call: str) -> str:
    """A JSON tool call in the Qwen3.5 XML form the reference also reads."""
    data = json.loads(call)
    parameters = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in data["arguments"].items())
    return f"<tool_call>\n<function={data['name']}>\n{parameters}</function>\n</tool_call>"


def trades(observation: str) -> list[str]:
    """The spice trader's best plan, read from its observation: buy before a rise, sell before a fall."""
    prices = json.loads(re.search(r"prices for all days: (\[[^]]*\])", observation).group(1))
    coins, sacks, moves = 20, 0, []
    for today, tomorrow in zip(prices, prices[1:] + [0]):
        if tomorrow > today:
            moves.append(f"buy {coins // today}")
            sacks, coins = sacks + coins // today, coins % today
        else:
            moves.append(f"sell {sacks}")
            coins, sacks = coins + sacks * today, 0
    return moves


def winning_script(sandbox: Sandbox, name: str) -> list[str]:
    """Replies that win the instance of SEED, written as an LLM writes them for the reference."""
    observation, solution, tools = instance(sandbox, name)
    if name == "tool_use":  # every lookup in one reply, then the answer
        calls, answer = solution[0].rsplit("\n", 1)
        return [f"Let me look everything up.\n{calls}", f"<think>sum, times price</think>{answer}"]
    if name in ("tool_use_alias_base", "tool_use_multistep"):  # the prose plan, in XML calls
        *calls, answer = tool_plan(solution[0], tools)
        return ["I will call the tools.\n" + "\n".join(xml_call(c) for c in calls), answer]
    if name in ("tool_use_module_base", "tool_use_own_protocol"):
        return solution if len(solution) > 1 else solution[0].split("\n")
    if name == "answer_tags":  # no box: the reply reaches step() as written
        return [f"Adding the digits, my answer is {solution[0]}"]
    if name == "free_text":
        return [f"The gap is constant, so it is {solution[0]}."]
    if name == "wordle_no_menu":  # no solution(): the secret is the file's word list drawn with the seed
        words = json.loads(re.search(r"WORDS = (\[.*?\])", source(name)).group(1).replace("'", '"'))
        return [f"My guess: \\boxed{{{random.Random(SEED).choice(words)}}}"]
    if name == "placeholder_menu":
        return [f"Today I \\boxed{{{move}}}" for move in trades(observation)]
    actions = solution_sequences(solution[0])[0] if name == "prose_solution" else solution
    return [f"I will do this: \\boxed{{{action}}}" for action in actions]


def play(sandbox: Sandbox, name: str, script: list[str], text: str | None = None):
    """Play the replies as an LLM's (``ScriptedAgent(replies=True)``: a reply without a box stays one)."""
    async def go():
        spec = Level(text or source(name))
        return await run_episodes(sandbox, {name: spec}, [Play(name, SEED)], ScriptedAgent(script, replies=True),
                                  RolloutConfig(max_turns=25, concurrency=1))
    return asyncio.run(go())[0]


def test_every_reference_convention_is_named_in_the_contract():
    shown = {convention for _fmt, convention, _warn in ACCEPTED.values()}
    assert shown <= set(REFERENCE_CONVENTIONS)
    assert {"boxed_solution_items", "base_class_names", "pool_layout", "first_box", "xml_tool_calls",
            "tool_base_details", "spade_export"} <= set(REFERENCE_CONVENTIONS)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_reference_style_file_is_valid_and_winnable(sandbox: Sandbox, name: str):
    fmt, _convention, warnings = ACCEPTED[name]
    verdict = validate_source(source(name), f"{name}.py", sandbox=sandbox, config=WITH_NUMPY)
    assert verdict.valid, verdict.feedback()
    assert [c.name for c in verdict.warnings] == list(warnings), verdict.feedback()
    if "reward_varies" in warnings:
        assert verdict.warnings[0].message.startswith("Feasibility unverified")
    elif any(c.name == "solution_wins" for c in verdict.checks):
        feasible = next(c for c in verdict.checks if c.name == "solution_wins")
        assert feasible.passed and feasible.message.startswith("feasible")
    rule = next(c for c in verdict.checks if c.name == "action_format_known").message
    assert rule.startswith("reference rule") == (fmt != "plain")  # the verdict says which rule is in force
    handle = sandbox.open(source(name), f"{name}.py")
    assert handle.info["action_format"] == fmt
    handle.close()
    episode = play(sandbox, name, winning_script(sandbox, name))
    assert episode.failure is None, episode.failure_message
    assert episode.success and episode.ret == 1.0, episode.final_observation


def test_a_boxed_file_sees_the_box_the_reference_sends(sandbox: Sandbox):
    episode = play(sandbox, "boxed_strict", ["\\boxed{-1}"])
    assert episode.turns[0].action == "-1"  # the transcript keeps the action...
    assert "Wrong" in episode.final_observation  # ...and step parsed it from \boxed{-1}, not "Use the format"


def test_tool_calls_of_one_reply_run_in_one_turn_and_show_their_output(sandbox: Sandbox):
    script = winning_script(sandbox, "tool_use")
    episode = play(sandbox, "tool_use", script)
    first = episode.turns[0]
    assert len(first.tool_calls) == 5 and first.tool_call == first.tool_calls[0]
    assert first.tool_call == {"name": "list_warehouses", "arguments": {}}
    assert episode.turns[1].observation.startswith("north, east, south\n\n")  # output text, not a dict
    assert "returncode" not in episode.turns[1].observation


def test_a_boxed_answer_reaches_a_tool_use_game_as_an_answer(sandbox: Sandbox):
    calls, answer = winning_script(sandbox, "tool_use")
    value = answer.split("<answer>")[1].split("</answer>")[0]
    won = play(sandbox, "tool_use", [calls, f"The total is \\boxed{{{value}}}."])
    assert won.success and won.turns[1].action == value
    boxed_call = play(sandbox, "tool_use", ['\\boxed{{"name": "list_warehouses", "arguments": {}}}',
                                            "\\boxed{no answer}", "no answer"])
    assert boxed_call.turns[0].tool_calls == [{"name": "list_warehouses", "arguments": {}}]
    judged, raw = boxed_call.turns[1:3]
    assert raw.observation == "Incorrect. Keep using tools."  # the boxed "no answer" was judged as an answer
    assert boxed_call.final_observation.startswith("Format error")  # the reference's reading of a bare reply


def test_reference_tool_turns_do_not_count_toward_the_games_max_turns(sandbox: Sandbox):
    lookup = '<tool_call>{"name": "list_warehouses", "arguments": {}}</tool_call>'
    episode = play(sandbox, "tool_use", [lookup] * 12 + ["<answer>0</answer>"] * 20)
    # 12 tool turns, then answers until the game's own budget (10 answer turns) truncates it.
    assert [t.tool_call is not None for t in episode.turns].count(True) == 12
    assert len(episode.turns) == 22 and episode.truncated and not episode.success
    capped = play(sandbox, "tool_use", [lookup] * 30)
    assert len(capped.turns) == 25 and capped.truncated  # the runner's budget bounds the replies


def test_partial_credit_is_return_not_success(sandbox: Sandbox):
    episode = play(sandbox, "partial_credit", ["\\boxed{set 0}"] * 6)
    assert episode.terminated and episode.ret == pytest.approx(0.7)
    assert not episode.success


def test_numpy_needs_to_be_allowed(sandbox: Sandbox):
    verdict = validate_source(source("numpy_game"), "numpy_game.py", sandbox=sandbox)
    assert [c.name for c in verdict.failed] == ["imports_allowed"]
    assert "--allow-import numpy" in verdict.failed[0].message


BROKEN = {
    "listed_action_wins": ("random_policy_loses", "uniform over the actions the observation lists"),
    "box_in_solution": ("solution_wins", "hold \\boxed{}, which an agent's action never does"),
    "reset_none": ("reset_runs", "reset() must return"),
    "tool_schema_mismatch": ("tools_callable", "declares the parameter 'account' of the tool 'get_balance', but "
                                               "tool_get_balance() takes acct"),
    "criteria_raise": ("criteria_evaluable", 'Success criterion 2 (self._message_criteria[1]) raises "KeyError'),
    "abstract_first": ("reset_runs", "NotImplementedError"),
    "eval_in_step": ("no_forbidden_names", "evaluates the agent's action with `eval`"),
    "ignores_action": ("reward_varies", "The environment ignores its action"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_reference_file_is_refused_for_the_right_reason(sandbox: Sandbox, name: str):
    check, phrase = BROKEN[name]
    path = FIXTURES / "broken" / f"{name}.py"
    verdict = validate_source(path.read_text(), path.name, sandbox=sandbox)
    assert not verdict.valid
    assert verdict.failed[0].name == check and phrase in verdict.failed[0].message, verdict.feedback()


PLAIN_PROSE = """import random

class DayNumberEnv:
    max_turns = 4

    def reset(self, seed=None):
        self.x = random.Random(seed).randint(10, 99)
        return "Say the number of the day.", {}

    def step(self, action):
        won = action.strip() == str(self.x)
        return ("Yes." if won else "No."), (1.0 if won else 0.0), True, False, {}

    def valid_actions(self):
        return [str(i) for i in range(10, 100)]

    def solution(self):
        return f"The number of the day is {self.x + 1}"
"""


def test_a_plain_file_with_a_losing_text_solution_stays_infeasible(sandbox: Sandbox):
    verdict = validate_source(PLAIN_PROSE, "day.py", sandbox=sandbox)
    assert not verdict.valid and verdict.failed[0].name == "solution_wins"
    assert "return the list of actions that wins" in verdict.failed[0].message
    boxed = validate_source(PLAIN_PROSE.replace("import random", "import random\nACTION_FORMAT = 'boxed'"),
                            "day.py", sandbox=sandbox)
    assert [c.name for c in boxed.warnings] == ["solution_wins"]  # a SPADE-style file: unverified


def test_the_first_box_is_the_action_in_reference_files_and_the_last_in_spadegym_s(sandbox: Sandbox):
    (answer,) = instance(sandbox, "boxed_strict")[1]
    line = f"It is \\boxed{{{answer}}}; I first thought \\boxed{{0}}."
    assert play(sandbox, "boxed_strict", [line]).success  # the reference reads the first box
    plain = PLAIN_PROSE.replace("    def solution(self):\n        return f\"The number of the day is {self.x + 1}\"\n", "")
    episode = play(sandbox, "day", ["\\boxed{10} or maybe \\boxed{11}"], text=plain)
    assert episode.turns[0].action == "11"  # spadegym's own file: the last box


def test_a_reply_without_a_box_reaches_a_reference_file_as_written(sandbox: Sandbox):
    episode = play(sandbox, "answer_tags", ["<answer>0</answer>", "no idea"])
    assert [t.action for t in episode.turns[:2]] == ["<answer>0</answer>", "no idea"]
    assert episode.format_failures == 0 and episode.turns[0].observation.startswith("What is the sum")
    plain = play(sandbox, "day", ["no idea"], text=PLAIN_PROSE)
    assert plain.format_failures == 1 and plain.turns[0].action is None  # spadegym's rule: a format failure


def test_the_tool_base_reports_format_errors_and_the_pending_instruction(sandbox: Sandbox):
    episode = play(sandbox, "tool_use_multistep", ["<answer>done</answer>", "<tool_call>{oops}</tool_call>",
                                                   "I am not sure what to do."])
    first, malformed, prose = episode.turns[:3]
    assert (first.reward, malformed.reward, prose.reward) == (0.0, -0.1, -0.1)
    assert "Step 1 of 3 is not done yet" in malformed.observation  # the wrong answer named the pending step
    assert prose.observation.startswith("Format error: the tool call is not a JSON object")


def test_reference_only_leniencies_stay_errors_in_spadegym_s_own_files():
    with pytest.raises(ContractError, match="got bool True: return 1.0 or 0.0"):
        normalize_step(("won", True, True, False, {}))
    assert normalize_step(("won", True, True, False, {}), bool_reward=True).reward == 1.0
    two = "class AEnv:\n    def reset(self, seed=None):\n        return 'a', {}\n    def step(self, a):\n" \
          "        return 'a', 0.0, True, False, {}\nclass BEnv(AEnv):\n    pass\n"
    refused = validate_source(two, "two.py")
    assert refused.failed[0].name == "one_env_class" and "spadegym's rule" in refused.failed[0].message


def test_number_placeholders_in_menus_are_filled_from_the_observation():
    assert read_menu("Set the rods: \\boxed{set N} with N in 1..9.")[:3] == ["set 1", "set 2", "set 3"]
    menu = read_menu("You hold 3 sacks; the price is 12.\nActions: buy N, sell <amount>, wait, N")
    assert {"buy 3", "buy 12", "sell 3", "sell 12", "wait", "N"} <= set(menu) and "sell <amount>" not in menu


def test_math_verify_is_the_real_package_where_a_stand_in_disagreed(sandbox: Sandbox):
    (answer,) = instance(sandbox, "math_verify_answer")[1]
    num, den = answer.split("/")
    # A product over a product: the package simplifies it; the standard-library stand-in it replaced did not.
    episode = play(sandbox, "math_verify_answer", [f"\\boxed{{2*{num}/(2*{den})}}"])
    assert episode.success, episode.final_observation


def test_play_says_which_rule_reads_the_replies(tmp_path: Path):
    (tmp_path / "pool").mkdir()
    (tmp_path / "pool" / "a_reference.py").write_text(source("answer_tags"))
    (tmp_path / "pool" / "b_own.py").write_text(PLAIN_PROSE)
    (tmp_path / "script.txt").write_text("\\boxed{12}\n")
    done = subprocess.run([sys.executable, "-m", "spadegym", "play", str(tmp_path / "pool"), "--agent",
                           f"scripted:{tmp_path / 'script.txt'}"], capture_output=True, text=True, timeout=120)
    out = " ".join(done.stdout.split())
    first, second = out.split("b_own.py", 1)
    assert "reference rule: step() gets the reply's first \\boxed{}" in first, done.stdout + done.stderr
    assert "spadegym rule: the reply's last \\boxed{} is the action" in second
