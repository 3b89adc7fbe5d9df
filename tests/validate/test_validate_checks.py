"""Each check, pinned: one broken snippet of the tiny environment -> one failed check and its message."""

from __future__ import annotations

import random

import pytest
from snippet_env import WORDS, make_env

from spadegym.sandbox import Sandbox, SandboxConfig
from spadegym.validate import ValidationConfig, Verdict, validate_source

GOOD_STEP = make_env().split("    def step", 1)[1].split("\n\n", 1)[0]

# (id, snippet replacements, expected failed check, key phrase of its message)
BROKEN = [
    ("syntax", {"step": "    def step(self, action):\n        return (1,"}, "parses", "Syntax error at line"),
    ("no_class", {"class_line": "class Vault:"}, "one_env_class", "No environment class found"),
    ("two_classes", {"extra": "class OtherEnv:\n    pass"}, "one_env_class", "Several environment classes"),
    ("no_step", {"step": ""}, "defines_step", "defines no step() method"),
    ("reset_without_seed", {"reset": "    def reset(self):\n        return 'x', {}"},
     "reset_takes_seed", "has no `seed` parameter"),
    ("step_without_action", {"step": "    def step(self):\n        return 'x', 0.0, True, False, {}"},
     "step_takes_action", "takes no action argument"),
    ("import_os", {"header": "import random\nimport os"}, "imports_allowed", "Line 2 imports 'os'"),
    ("import_in_method", {"extra": "    def peek(self):\n        from subprocess import run\n        return run"},
     "imports_allowed", "imports 'subprocess'"),
    ("exec", {"extra": "    def peek(self):\n        exec('x = 1 + 1')"}, "no_forbidden_names", "uses `exec`"),
    ("subclasses", {"extra": "    def peek(self):\n        return object.__subclasses__()"},
     "no_forbidden_names", "interpreter internal `.__subclasses__`"),
    ("module_raises", {"constants": f"WORDS = {WORDS!r}\nBROKEN = 1 / 0"}, "loads", "ZeroDivisionError"),
    ("init_needs_args", {"init": "    def __init__(self, size):\n        self.size = size"}, "loads",
     "missing 1 required positional argument"),
    ("reset_returns_int", {"reset": "    def reset(self, seed=None):\n        return 42"}, "reset_runs",
     "reset() must return"),
    ("reset_fails_for_some_seeds", {"reset": make_env().split("    def step")[0].split("    def reset")[1]
                                    .replace("(self, seed=None):\n", "(self, seed=None):\n        if seed and seed > 50:\n"
                                             "            raise ValueError('seed too large')\n", 1)
                                    .join(["    def reset", ""])},
     "reset_runs", "seed too large"),
    ("empty_observation", {"reset": "    def reset(self, seed=None):\n        self.secret = 'amber'\n"
                                    "        self.turn = 0\n        return '   ', {}"},
     "reset_observation", "empty observation"),
    ("empty_valid_actions", {"valid_actions": "    def valid_actions(self):\n        return []"},
     "valid_actions_nonempty", "returned an empty list"),
    ("step_three_tuple", {"step": "    def step(self, action):\n        return 'x', 0.0, True"},
     "step_runs", "step() must return (observation, reward, terminated, truncated, info)"),
    ("nan_reward", {"step": "    def step" + GOOD_STEP.replace('"The vault opens!", 1.0', '"Open!", float("nan")')},
     "step_runs", "reward must be finite"),
    ("valid_actions_not_a_list", {"valid_actions": "    def valid_actions(self):\n        return 'amber'"},
     "reset_runs", "valid_actions() must return a list"),
    ("step_raises_on_listen", {"step": "    def step" + GOOD_STEP.replace(
        'if word == "listen":', 'if word == "listen":\n            raise KeyError("no clue left")')},
     "step_runs", "KeyError"),
    ("unseeded_generator", {"reset": make_env().split("    def step")[0].split("\n\n", 1)[1]
                            .replace("random.Random(seed)", "random.Random()")
                            .replace("code word. Answer", "code word (vault {self.rng.randint(1, 10**9)}). Answer")
                            .replace('return "A vault', 'return f"A vault').replace("\\\\boxed{}", "\\\\boxed{{}}")},
     "deterministic", "Two fresh workers given reset(seed=1)"),
    ("state_carried_over", {"reset": "    def reset(self, seed=None):\n        self.rng = random.Random(seed)\n"
                                     "        self.secret = self.rng.choice(WORDS)\n        self.turn = 0\n"
                                     "        self.round = getattr(self, 'round', 0) + 1\n"
                                     "        return f'Round {self.round}: answer a code word.', {}"},
     "replay_after_reset", "rebuild every piece of state in reset()"),
    ("crash_on_empty_action", {"step": "    def step" + GOOD_STEP.replace(
        "word = action.strip().lower()", "word = action.strip().lower()\n        first = action[0]")},
     "robust_to_bad_actions", "IndexError"),
    ("solution_wrong", {"solution": "    def solution(self):\n        return [w for w in WORDS if w != self.secret][:1]"},
     "solution_wins", "ended with return -1"),
    ("solution_raises", {"solution": "    def solution(self):\n        raise RuntimeError('not written yet')"},
     "solution_returns_actions", "not written yet"),
    ("solution_empty", {"solution": "    def solution(self):\n        return []"},
     "solution_returns_actions", "returned an empty list"),
    ("solution_not_finishing", {"solution": "    def solution(self):\n        return ['listen']"},
     "solution_wins", "left the episode running"),
    ("solution_too_long", {"attributes": "    max_turns = 3",
                           "solution": "    def solution(self):\n        return ['listen'] * 4 + [self.secret]"},
     "solution_fits_max_turns", "needs 5 actions but the episode is cut at max_turns=3"),
    ("empty_action_wins", {"step": "    def step" + GOOD_STEP.replace(
        'if word == "listen":', 'if word == "":\n            return "ok", 1.0, True, False, {}\n'
        '        if word == "listen":')},
     "not_won_without_trying", "The meaningless action ''"),
    ("any_word_wins", {"step": "    def step" + GOOD_STEP.replace("if word == self.secret:", "if word in WORDS:")},
     "random_policy_loses", "A random policy (uniform over valid_actions()) won 16 of 16"),
    ("constant_reward", {"solution": "", "step": "    def step" + GOOD_STEP.replace("-1.0, True", "0.0, True")
                         .replace("1.0, True", "0.0, True")},
     "reward_varies", "returned the same reward 0:"),
    ("answer_in_observation", {"reset": make_env().split("    def step")[0].split("\n\n", 1)[1]
                               .replace("code word. Answer", "code word (it is {self.secret}). Answer")
                               .replace('return "A vault', 'return f"A vault').replace("\\\\boxed{}", "\\\\boxed{{}}")},
     "answer_not_in_observation", "contains the answer"),
    ("password", {"reset": "    def reset(self, seed=None):\n        self.secret = 'amber'\n        self.turn = 0\n"
                           "        return 'The password is amber. Answer in \\\\boxed{}.', {}"},
     "answer_not_in_observation", "contains the answer 'amber'"),
    ("hint_gives_answer", {"hint": "    def hint(self):\n        return f'The code word is {self.secret}.'"},
     "hint_does_not_reveal_answer", "states the answer"),
]


@pytest.mark.parametrize(("replace", "check", "phrase"), [row[1:] for row in BROKEN], ids=[row[0] for row in BROKEN])
def test_broken_snippet_fails_its_check(sandbox, replace, check, phrase):
    verdict = validate_source(make_env(**replace), "vault.py", sandbox=sandbox)
    failed = {c.name: c for c in verdict.checks if not c.passed}
    assert not verdict.valid
    assert check in failed, f"expected {check} to fail; failed: {[(c.name, c.message) for c in failed.values()]}"
    message = failed[check].message
    assert phrase in message
    # Messages go to a designer model: one sentence, ending in a full stop, saying what to change.
    assert "\n" not in message and message.endswith(".")
    assert verdict.category == verdict.failed[0].category


def test_table_covers_every_error_check():
    covered = {row[2] for row in BROKEN}
    expected = {"parses", "one_env_class", "defines_step", "reset_takes_seed", "step_takes_action",
                "imports_allowed", "no_forbidden_names", "loads", "reset_runs", "reset_observation",
                "valid_actions_nonempty", "step_runs", "deterministic", "replay_after_reset",
                "robust_to_bad_actions", "solution_returns_actions", "solution_wins", "solution_fits_max_turns",
                "not_won_without_trying", "random_policy_loses", "reward_varies", "answer_not_in_observation",
                "hint_does_not_reveal_answer"}
    assert expected <= covered


def test_base_env_is_valid(sandbox):
    verdict = validate_source(make_env(), "vault.py", sandbox=sandbox)
    assert verdict.valid, verdict.feedback()
    assert Verdict.from_dict(verdict.to_dict()).to_dict() == verdict.to_dict()
    assert verdict.category is None
    assert {c.name for c in verdict.checks} >= {"deterministic", "solution_wins", "answer_not_in_observation"}


def test_verdict_category_is_the_first_failed_check(sandbox):
    verdict = validate_source(make_env(header="import random\nimport socket"), "vault.py", sandbox=sandbox)
    assert verdict.category == "static"
    assert verdict.failed[0].name == "imports_allowed"
    # Static failures stop before anything runs in the sandbox.
    assert "loads" not in {c.name for c in verdict.checks}


def test_size_limit_is_configurable(sandbox):
    config = ValidationConfig(max_source_bytes=200)
    verdict = validate_source(make_env(), "vault.py", sandbox=sandbox, config=config)
    assert verdict.failed[0].name == "source_size"
    assert "above the 200-byte limit" in verdict.failed[0].message


def test_allowed_imports_are_configurable(sandbox):
    config = ValidationConfig(allowed_imports=["math"])
    verdict = validate_source(make_env(), "vault.py", sandbox=sandbox, config=config)
    assert verdict.failed[0].name == "imports_allowed" and "imports 'random'" in verdict.failed[0].message


def test_reward_out_of_range_is_a_warning_unless_configured(sandbox):
    source = make_env(step="    def step" + GOOD_STEP.replace("1.0, True", "10.0, True"))
    verdict = validate_source(source, "vault.py", sandbox=sandbox)
    warning = next(c for c in verdict.checks if c.name == "reward_in_range")
    assert verdict.valid and not warning.passed and warning.severity == "warning"
    assert "outside [-1, 1], which the host clamps to 1" in warning.message
    strict = validate_source(source, "vault.py", sandbox=sandbox,
                             config=ValidationConfig(reward_range_is_error=True))
    assert not strict.valid and strict.category == "contract"


def test_random_threshold_is_configurable(sandbox):
    verdict = validate_source(make_env(), "vault.py", sandbox=sandbox,
                              config=ValidationConfig(random_win_threshold=0.0))
    assert [c.name for c in verdict.failed] == ["random_policy_loses"]
    assert verdict.category == "degenerate"


def test_hint_argument_is_checked_for_the_answer(sandbox):
    secret = random.Random(ValidationConfig().seed + 1).choice(WORDS)  # the instance of the first seed
    leaky = validate_source(make_env(), "vault.py", sandbox=sandbox, hint=f"Try {secret}.")
    assert [c.name for c in leaky.failed] == ["hint_does_not_reveal_answer"]
    listing = validate_source(make_env(), "vault.py", sandbox=sandbox, hint="One of: " + ", ".join(WORDS))
    assert listing.valid, listing.feedback()


def test_menu_listed_in_the_observation_is_not_a_leak(sandbox):
    reset = make_env().split("    def step")[0].split("\n\n", 1)[1].replace(
        "Answer a word,", "Answer one of " + " ".join(WORDS) + ",")
    verdict = validate_source(make_env(reset=reset), "vault.py", sandbox=sandbox)
    assert verdict.valid, verdict.feedback()


def test_hanging_step_is_an_infrastructure_failure():
    hang = "    def step" + GOOD_STEP.replace("word = action.strip().lower()",
                                             "word = action.strip().lower()\n        while len(word) > 1000:\n"
                                             "            pass")
    with Sandbox(SandboxConfig(step_timeout_s=0.5)) as box:
        verdict = validate_source(make_env(step=hang), "vault.py", sandbox=box)
    assert not verdict.valid and verdict.category == "timeout"
    assert verdict.failed[0].name == "robust_to_bad_actions"
    assert "did not answer within" in verdict.failed[0].message
