"""The spade export round trip: a pool mixing reference-style files, spadegym's own plain files, tool-use
files and families is exported, and every game loads, instantiates and wins under an emulation of the
reference's loader and rollout (``reference_emulation.py``), or is left out with its reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spadegym.designers.prompts import EXAMPLE_ENV
from spadegym.envfile import parse_tool_call
from spadegym.envfile.reference import solution_sequences, tool_plan
from spadegym.envfile.spade_export import SHIM_MARK, for_reference, missing_imports
from spadegym.envfile.static import normalized_code_hash, parse
from spadegym.families import get_family
from spadegym.level import Remote
from spadegym.sandbox import Sandbox
from spadegym.store.export import write_rows

FIXTURES = Path(__file__).parents[1] / "fixtures"
EMULATION = Path(__file__).parent / "reference_emulation.py"
SEED = 5

# spadegym's own tool game whose win goes through a tool that returns the step tuple (it ends the
# episode in spadegym; the reference ends episodes only in step, so the next reply collects it).
SUBMIT = '''
import random
from dataclasses import dataclass, field


@dataclass
class Ledger:
    entries: dict = field(default_factory=dict)


class PayrollEnv:
    max_turns = 6

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.ledger = Ledger({name: rng.randint(100, 900) for name in ("ana", "bo", "cy")})
        self.who = rng.choice(sorted(self.ledger.entries))
        return f"Look up {self.who}'s pay with the pay tool, then submit it with the submit tool.", {}

    def get_tools(self):
        return [{"name": "pay", "description": "Pay of a person.",
                 "parameters": {"type": "object", "properties": {"name": {"type": "string"}}}},
                {"name": "submit", "description": "Submit the pay.",
                 "parameters": {"type": "object", "properties": {"amount": {"type": "integer"}}}}]

    def execute_tool(self, name, arguments):
        if name == "pay":
            return {"pay": self.ledger.entries.get(arguments.get("name"), 0)}
        if name == "submit":
            won = arguments.get("amount") == self.ledger.entries[self.who]
            return ("Paid." if won else "Wrong amount."), (1.0 if won else 0.0), True, False, {}
        return "no such tool"

    def step(self, action):
        return "Use the tools.", 0.0, False, False, {}

    def solution(self):
        amount = self.ledger.entries[self.who]
        return [json.dumps({"name": "pay", "arguments": {"name": self.who}}),
                json.dumps({"name": "submit", "arguments": {"amount": amount}})]
'''

# spadegym's own tool game answered through step (Deque and deque: prelude names the reference lacks or has).
LOOKUP = '''
import random


class StockLookupEnv:
    max_turns = 5

    def reset(self, seed=None):
        self.history: Deque[int] = deque(maxlen=3)
        self.stock = {item: random.randint(1, 60) for item in ("nails", "rope", "tar")}
        self.item = random.choice(sorted(self.stock))
        return f"How many units of {self.item} are in stock? Use the count tool, then answer.", {}

    def get_tools(self):
        return [{"type": "function", "function": {"name": "count", "description": "Units in stock.",
                 "parameters": {"type": "object", "properties": {"item": {"type": "string"}}}}}]

    def execute_tool(self, name, arguments):
        return str(self.stock.get(arguments.get("item"), 0)) if name == "count" else "no such tool"

    def step(self, action):
        won = action.strip() == str(self.stock[self.item])
        return ("Right." if won else "Wrong."), (1.0 if won else 0.0), True, False, None

    def solution(self):
        return ['{"name": "count", "arguments": {"item": "%s"}}' % self.item, str(self.stock[self.item])]
'''


def pool() -> dict[str, str]:
    reference = {name: (FIXTURES / "reference" / f"{name}.py").read_text() for name in (
        "boxed_strict", "menu_only", "injected_names", "two_env_classes", "answer_tags", "tool_use",
        "tool_use_multistep", "tool_use_own_protocol")}
    native = {"number_guess": (FIXTURES / "envs" / "number_guess.py").read_text(),
              "key_door": (FIXTURES / "envs" / "key_door.py").read_text(),
              "designer_example": EXAMPLE_ENV, "submit_tool": SUBMIT.replace("import random", "import json\nimport random"),
              "lookup_tool": LOOKUP}
    families = {name: get_family(name).render(get_family(name).level_knobs(1))
                for name in ("grid_maze", "knapsack", "code_breaker", *TOOL_FAMILIES)}
    return {**reference, **native, **families, "remote": None}  # a remote level has no code


#: Built-in tool-use families in the pool (the tool-use setting exports as the games do).
TOOL_FAMILIES = ("order_desk", "file_tree", "calendar", "bank_ledger", "inventory", "ticket_queue")
REMOTE = Remote(url="http://127.0.0.1:9")


def rows(sources: dict[str, str | None]) -> list[dict]:
    return [{"env_id": env_id, "kind": "file" if code is not None else "remote", "code": code,
             "remote": None if code is not None else REMOTE.settings(), "hint": None, "skill": "Logical Deduction",
             "family": None, "knobs": {}, "lineage": {}, "meta": {},
             "code_hash": normalized_code_hash(code or ""), "round": 0, "scores": None} for env_id, code in sources.items()]


def replies(sandbox: Sandbox, source: str, name: str) -> list[str]:
    """Replies that win the exported file's instance of SEED, written as an LLM writes them for the reference."""
    handle = sandbox.open(source, name)
    try:
        reset = handle.reset(seed=SEED, want=["tools"])
        assert reset.ok, reset.message
        solution = handle.call("solution").value
    finally:
        handle.close()
    tools = reset.value.get("tools")
    if not tools:
        actions = solution_sequences(solution[0])[0] if len(solution) == 1 and "," in solution[0] else solution
        return [a if "<" in a else f"I will play \\boxed{{{a}}}" for a in actions]
    plan = tool_plan(solution[0], tools) if len(solution) == 1 else None
    if plan is not None:
        *calls, answer = plan
        return ["".join(f"<tool_call>{c}</tool_call>" for c in calls), answer]
    out = []
    for item in (line for entry in solution for line in entry.splitlines()):
        call = parse_tool_call(item)
        out.append(f"<tool_call>{item}</tool_call>" if call else item if "<" in item else f"<answer>{item}</answer>")
    return [*out, "Done."]  # a tool that ended the episode in spadegym ends it at the next reply there


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, dict[str, dict], list[str]]:
    folder = tmp_path_factory.mktemp("spade") / "pool"
    said: list[str] = []
    write_rows("envs", rows(pool()), "spade", folder, note=said.append)
    manifest = {entry["id"]: entry for entry in map(json.loads, (folder / "manifest.jsonl").read_text().splitlines())}
    return folder, manifest, said


def test_every_game_of_an_exported_pool_loads_and_wins_under_the_reference(exported, sandbox: Sandbox, tmp_path):
    folder, manifest, _said = exported
    kept = {env_id: entry for env_id, entry in manifest.items() if entry["exported"]}
    assert set(kept) == set(pool()) - {"remote"}, {k: v.get("reason") for k, v in manifest.items()}
    plays = [{"path": str(folder / entry["file"]), "seed": SEED,
              "replies": replies(sandbox, (folder / entry["file"]).read_text(), Path(entry["file"]).name)}
             for entry in kept.values()]
    (tmp_path / "plays.json").write_text(json.dumps(plays))
    done = subprocess.run([sys.executable, str(EMULATION), str(tmp_path / "plays.json")], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    outcomes = {Path(o["path"]).name: o for o in map(json.loads, done.stdout.splitlines())}
    by_file = {Path(entry["file"]).name: env_id for env_id, entry in kept.items()}
    lost = {by_file[name]: o for name, o in outcomes.items() if not (o["loaded"] and o["return"] == 1.0)}
    assert not lost, lost
    tool_games = {by_file[name] for name, o in outcomes.items() if o["tools"]}
    assert tool_games == {"tool_use", "tool_use_multistep", "tool_use_own_protocol", "submit_tool", "lookup_tool",
                          *TOOL_FAMILIES}


def test_a_level_left_out_says_why_in_the_manifest_and_on_the_terminal(exported):
    _folder, manifest, said = exported
    assert not manifest["remote"]["exported"] and "remote level" in manifest["remote"]["reason"]
    assert said == [f"left out of the pool: remote: {manifest['remote']['reason']}"]


def test_the_rewrite_imports_what_the_prelude_provided_and_keeps_the_file_s_own_code():
    rewritten = for_reference(LOOKUP)
    assert missing_imports(parse(LOOKUP)) == ["from collections import deque", "from typing import Deque"]
    assert rewritten.startswith("from collections import deque\nfrom typing import Deque\n")
    assert LOOKUP.strip() in rewritten and rewritten.count(SHIM_MARK) == 1
    assert for_reference(rewritten) == rewritten  # an exported file is exported as it is
    assert "ACTION_FORMAT = 'tool_call'" in rewritten and "plain=True, tools=True" in rewritten
