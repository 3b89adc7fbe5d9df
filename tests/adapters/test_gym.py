"""Environment files as Gymnasium environments: text spaces, a registered id, and Gymnasium's own checker."""

from __future__ import annotations

from pathlib import Path

import pytest

gymnasium = pytest.importorskip("gymnasium", reason="the gymnasium extra is not installed")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from spadegym.adapters.gym import CHARSET, ENV_ID, SpadegymEnv, escape_text  # noqa: E402

ENVS = Path(__file__).parents[1] / "fixtures" / "envs"

UNICODE_ENV = '''
class SnowEnv:
    max_turns = 3

    def reset(self, seed=None):
        self.n = 0
        return "Caf\\u00e9 \\u2603 \\x00 bell\\x07: say \\\\boxed{go}", {}

    def step(self, action):
        self.n += 1
        won = action == "go"
        return ("\\u2714 done" if won else "no \\U0001F600"), float(won), won, False, {}
'''


def test_a_registered_file_passes_gymnasiums_env_checker() -> None:
    env = gymnasium.make(ENV_ID, path=str(ENVS / "key_door.py"))
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


def test_a_pool_passes_the_checker_with_the_hint_arm_and_boxed_actions(tmp_path: Path) -> None:
    env = SpadegymEnv(ENVS, hinted=True, actions="boxed", render_mode="ansi")
    try:
        check_env(env)
    finally:
        env.close()


def test_characters_outside_the_charset_are_escaped_so_every_observation_is_in_the_space(tmp_path: Path) -> None:
    (tmp_path / "snow.py").write_text(UNICODE_ENV)
    env = SpadegymEnv(tmp_path / "snow.py")
    try:
        obs, _ = env.reset(seed=0)
        assert obs in env.observation_space
        assert obs.startswith("Caf\\xe9 \\u2603 ")  # control characters the sandbox itself drops
        obs, reward, terminated, _, info = env.step("go")
        assert obs == "\\u2714 done" and reward == 1.0 and terminated and info["return"] == 1.0
        env.reset(seed=1)
        obs, *_ = env.step("stop")
        assert obs == "no \\U0001f600" and obs in env.observation_space
    finally:
        env.close()


def test_long_observations_are_cut_inside_the_space() -> None:
    text = escape_text("x" * 100, limit=40)
    assert len(text) == 40 and text.endswith("[truncated]") and CHARSET.issuperset(text)


def test_the_same_seed_gives_the_same_episode_and_the_return_rule_applies() -> None:
    env = gymnasium.make(ENV_ID, path=str(ENVS / "number_guess.py"))
    try:
        first, info = env.reset(seed=7)
        again, info_again = env.reset(seed=7)
        assert first == again and info["seed"] == info_again["seed"]
        total_turns = 0
        terminated = truncated = False
        while not (terminated or truncated):
            _, reward, terminated, truncated, info = env.step("1")
            total_turns += 1
        assert total_turns <= 4  # the file's max_turns
        assert info["return"] == (reward if terminated else 0.0)
    finally:
        env.close()


def test_a_path_that_does_not_exist_is_one_sentence() -> None:
    from spadegym.adapters import LevelSourceError

    with pytest.raises(LevelSourceError, match="does not exist"):
        SpadegymEnv("no/such/pool")


def test_rewards_are_the_steps_own_or_the_return_on_the_last_step(tmp_path: Path) -> None:
    """key_door pays 0.1 for the key and 1.0 for the door: the sum is 1.1, spadegym's return 1.0."""
    import re
    import shutil

    from gymnasium.wrappers import RecordEpisodeStatistics

    shutil.copy(ENVS / "key_door.py", tmp_path / "key_door.py")
    totals = {}
    for mode in ("step", "return"):
        env = RecordEpisodeStatistics(gymnasium.make("spadegym/Level-v0", path=str(tmp_path), rewards=mode,
                                                     hinted=True))
        observation, _ = env.reset(seed=0)
        room = re.search(r"hint: The key is hidden in the (\w+) room", observation).group(1)
        paid = []
        for action in (f"go {room}", "take key", "go back", "open door"):
            _, reward, terminated, _, info = env.step(action)
            paid.append(reward)
        assert terminated and info["return"] == 1.0 and info["success"] is True
        totals[mode] = (paid, float(info["episode"]["r"]))
        env.close()
    assert totals["step"] == ([0.0, 0.1, 0.0, 1.0], pytest.approx(1.1))
    assert totals["return"] == ([0.0, 0.0, 0.0, 1.0], pytest.approx(1.0))
    with pytest.raises(ValueError, match="rewards must be 'step'"):
        gymnasium.make("spadegym/Level-v0", path=str(tmp_path), rewards="sum")


def test_a_fresh_process_makes_the_id_with_its_module_and_a_time_limit() -> None:
    """Gymnasium 1.x reads no plugin entry points: the "module:id" form is what works without importing spadegym."""
    import subprocess
    import sys

    script = ("import gymnasium\n"
              f"env = gymnasium.make('spadegym.adapters.gym:spadegym/Level-v0', path={str(ENVS / 'key_door.py')!r})\n"
              "observation, info = env.reset(seed=0)\n"
              "print(env.spec.max_episode_steps, type(env.unwrapped).__name__)\n"
              "env.close()\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["25", "SpadegymEnv"]
