"""spadegym's own tool games also read the reference's text protocol: ``<tool_call>`` blocks and ``<answer>``
tags in a reply without a box (agents prompted the SPADE way), in play and in the gate's solution replay."""

from __future__ import annotations

import asyncio

from spadegym.agents.scripted import ScriptedAgent
from spadegym.level import Level
from spadegym.rollout.runner import Play, RolloutConfig, run_episodes
from spadegym.sandbox import Sandbox
from spadegym.validate import ValidationConfig, validate_source

LEDGER = """import random


class LedgerEnv:
    max_turns = 6

    def reset(self, seed=None):
        self.balance = random.Random(seed).randint(10, 90)
        self.deposited = 0
        return "Deposit 5, then answer with the new balance.", {}

    def get_tools(self):
        return [{"name": "balance", "parameters": {"type": "object", "properties": {}}},
                {"name": "deposit", "parameters": {"type": "object",
                                                   "properties": {"amount": {"type": "integer"}}}}]

    def execute_tool(self, name, arguments):
        if name == "balance":
            return str(self.balance)
        if name == "deposit" and isinstance(arguments.get("amount"), int) and arguments["amount"] > 0:
            self.balance += arguments["amount"]
            self.deposited += arguments["amount"]
            return "ok"
        return "error: unknown tool or bad amount"

    def step(self, action):
        won = self.deposited == 5 and action.strip() == str(self.balance)
        return ("Correct." if won else "Wrong."), float(won), True, False, {}

    def solution(self):
        return ['<tool_call>{"name": "deposit", "arguments": {"amount": 5}}</tool_call>',
                f"<answer>{self.balance + 5}</answer>"]
"""


def play(sandbox: Sandbox, replies: list[str], seed: int = 3):
    async def go():
        return await run_episodes(
            sandbox,
            {"l": Level(LEDGER)},
            [Play("l", seed)],
            ScriptedAgent(replies, replies=True),
            RolloutConfig(max_turns=6, concurrency=1),
        )

    return asyncio.run(go())[0]


def test_tool_call_blocks_and_answer_tags_are_actions_in_a_spadegym_tool_game(sandbox: Sandbox):
    first = play(sandbox, ['<tool_call>{"name": "balance", "arguments": {}}</tool_call>'] + ["\\boxed{0}"])
    balance = int(first.turns[1].observation)
    episode = play(
        sandbox,
        [
            'I add five. <tool_call>{"name": "deposit", "arguments": {"amount": 5}}</tool_call>',
            f"<think>{balance} + 5</think>The balance is <answer>{balance + 5}</answer>",
        ],
    )
    assert episode.success and episode.format_failures == 0, episode.final_observation
    assert episode.turns[0].tool_call == {"name": "deposit", "arguments": {"amount": 5}}
    assert episode.turns[1].action == str(balance + 5)
    prose = play(sandbox, ["I do not know."])
    assert prose.format_failures == 1  # neither a box, a call nor an answer tag: spadegym's format failure


def test_the_gate_replays_an_answer_tag_solution_of_a_spadegym_tool_game(sandbox: Sandbox):
    verdict = validate_source(
        LEDGER, "ledger.py", sandbox=sandbox, config=ValidationConfig(random_episodes=4)
    )
    assert verdict.valid, verdict.feedback()
    wins = next(c for c in verdict.checks if c.name == "solution_wins")
    assert wins.passed and wins.message.startswith("feasible")
