"""One episode engine: the loop (batched) and the adapters' session (one reply at a time) give the same
return, success and transcript for the same file, seed and replies, in every action format."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from pathlib import Path

import pytest

from spadegym.adapters import PlaySession, ServedLevel
from spadegym.envfile import extract_action
from spadegym.level import Level
from spadegym.rollout import Episode, Play, RolloutConfig, run_episodes
from spadegym.rollout.agent import Reply, View
from spadegym.sandbox import Sandbox

REFERENCE = Path(__file__).parents[1] / "fixtures" / "reference"

# Two turns, then partial credit: the return is 0.7 and the episode is no win, whichever driver plays it.
TWO_TURNS = '''
class TwoTurnsEnv:
    max_turns = 5

    def reset(self, seed=None):
        self.turns = 0
        return "Say anything twice.", {}

    def step(self, action):
        self.turns += 1
        if self.turns < 2:
            return "Once more.", 0.0, False, False, {}
        return "Half done.", 0.7, True, False, {}
'''

# spadegym's own tool-use file: a boxed JSON call goes to execute_tool, a boxed answer to step.
LOOKUP = '''
class LookupEnv:
    max_turns = 4

    def reset(self, seed=None):
        self.secret = str(100 + (seed or 0) % 900)
        return "Look the number up with the lookup tool, then answer it.", {}

    def get_tools(self):
        return [{"name": "lookup", "description": "The number.", "parameters": {"type": "object"}}]

    def execute_tool(self, name, arguments):
        return {"number": self.secret} if name == "lookup" else "no such tool"

    def step(self, action):
        won = action.strip() == self.secret
        return ("Right." if won else "Wrong."), (1.0 if won else 0.0), True, False, {}
'''

SEED = 7


class Replies:
    """Sends the same replies in every episode, read as an LLM's replies are (the last box is the action)."""

    name = "replies"
    keeps_history = True
    needs_valid_actions = False
    lockstep = True

    def __init__(self, replies: list[str]):
        self.replies = replies
        self.turns: dict[str, int] = {}

    async def act(self, views: list[View]) -> list[Reply]:
        out = []
        for view in views:
            i = self.turns[view.episode_key] = self.turns.get(view.episode_key, -1) + 1
            out.append(Reply(text=self.replies[i], action=extract_action(self.replies[i])))
        return out

    def end_episodes(self, keys: list[str]) -> None:
        for key in keys:
            self.turns.pop(key, None)

    async def aclose(self) -> None:
        return None


def through_the_loop(sandbox: Sandbox, name: str, source: str, replies: list[str], hinted: bool) -> Episode:
    spec = Level(source, hint="think twice" if hinted else None)
    return asyncio.run(run_episodes(sandbox, {name: spec}, [Play(name, SEED, hinted=hinted)], Replies(replies),
                                    RolloutConfig(max_turns=10, concurrency=1)))[0]


def through_a_session(sandbox: Sandbox, name: str, source: str, replies: list[str],
                      hinted: bool) -> tuple[Episode, dict]:
    level = ServedLevel(name, Level(source, hint="think twice" if hinted else None), f"{name}.py")  # the designer's hint
    with PlaySession(OneLevel(level), sandbox=sandbox, hinted=hinted, max_turns=10) as session:
        session.reset(seed=SEED)
        for reply in replies:
            moved = session.step(reply)
            if moved.done:
                break
        assert session.episode is not None
        return session.episode, moved.info


class OneLevel:
    """A level source of one level."""

    def __init__(self, level: ServedLevel):
        self.level = level

    def levels(self) -> list[ServedLevel]:
        return [self.level]


def transcript(episode: Episode) -> dict:
    record = asdict(episode)
    record.pop("seconds")
    for turn in record["turns"]:
        turn.pop("seconds")
    return record


CASES = {
    # file, replies, expected return, expected success
    "plain_partial": (TWO_TURNS, ["no box here", "I say \\boxed{a}", "\\boxed{b}"], 0.7, False),
    "boxed_partial": ((REFERENCE / "partial_credit.py").read_text(), ["\\boxed{set 0}"] * 7, 0.7, False),
    "plain_tools": (LOOKUP, ['\\boxed{{"name": "lookup", "arguments": {}}}', f"\\boxed{{{100 + SEED}}}"], 1.0, True),
    "tool_call": ((REFERENCE / "tool_use.py").read_text(), None, 1.0, True),
}


@pytest.mark.parametrize("hinted", [False, True])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_loop_and_a_session_play_the_same_episode(sandbox: Sandbox, case: str, hinted: bool):
    source, replies, ret, success = CASES[case]
    if replies is None:  # the reference tool-use game: its own solution, as one reply of calls and an answer
        handle = sandbox.open(source, "tool_use.py")
        assert handle.reset(seed=SEED).ok
        calls, answer = handle.call("solution").value[0].rsplit("\n", 1)
        handle.close()
        replies = [f"Looking up.\n{calls}", "<answer>0</answer>", f"<think>add up</think>{answer}"]
    looped = through_the_loop(sandbox, case, source, replies, hinted)
    stepped, info = through_a_session(sandbox, case, source, replies, hinted)
    assert looped.failure is None, looped.failure_message
    assert (looped.ret, looped.success) == (ret, success)
    assert (info["return"], info["success"]) == (ret, success)
    assert transcript(stepped) == transcript(looped)
    if hinted:
        assert looped.turns[0].observation.endswith("hint: think twice")
