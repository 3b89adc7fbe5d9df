"""Self-play with one local model in both roles: a round updates the agent and the designer through TRL,
and a run killed mid-way resumes training from its last committed round."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

torch = pytest.importorskip("torch")

from spadegym.loop.config import validate_config  # noqa: E402
from spadegym.loop.run import run  # noqa: E402
from spadegym.store import RunStore, StoreError  # noqa: E402

#: The environment the test designer writes: three doors, one prize (a random policy wins a third).
DOORS_ENV = textwrap.dedent('''\
    import random

    SKILL = "Logical Deduction"
    DESCRIPTION = "Pick the door that hides the prize."
    DIFFICULTY = {"doors": 3}


    class DoorsEnv:
        max_turns = 1

        def reset(self, seed=None):
            self.prize = random.Random(seed).choice("abc")
            return "Three doors: a, b and c. One hides a prize. Reply with \\\\boxed{a}, \\\\boxed{b} or \\\\boxed{c}.", {}

        def step(self, action):
            if action.strip().lower() == self.prize:
                return "You found the prize.", 1.0, True, False, {}
            return "Empty.", 0.0, True, False, {}

        def valid_actions(self):
            return ["a", "b", "c"]

        def solution(self):
            return [self.prize]

        def hint(self):
            return "Trust your first instinct."
''')


@pytest.fixture(scope="module")
def writer_dir(tmp_path_factory):
    """A tiny model that, as a designer, writes the doors environment about half the time, and as an
    agent answers a, b or c.

    The whole fenced file is one token of its vocabulary; a few supervised steps raise that token's
    probability at the start of a designer reply to about one half (then the end of the turn), and
    spread an agent reply over the three doors. So one round has valid and invalid proposals, and
    won and lost plays: rewards that differ in both roles.

    Its tokenizer learns only the texts this round shows the model (the prompts it is taught and
    the doors game), never the built-in families' files: a family's wording changes neither its
    vocabulary nor, through it, the round's draws.
    """
    from tokenizers import AddedToken

    from spadegym.agents.base import View
    from spadegym.agents.prompt import system_message, user_message
    from spadegym.designers import prompts
    from spadegym.designers.memory import MemorySelection
    from spadegym.train.tiny import tiny_model

    empty = MemorySelection([], [], [])
    designer_messages = [prompts.design_messages(s, document=None, memory=empty, picture="")
                         for s in ("Logical Deduction",)]
    observation = "Three doors: a, b and c. One hides a prize. Reply with \\boxed{a}, \\boxed{b} or \\boxed{c}."
    view = View("k", observation, valid_actions=["a", "b", "c"], max_turns=1)  # as the runner shows it
    agent_messages = [system_message(view), user_message(view)]
    corpus = [m["content"] for m in (*sum(designer_messages, []), *agent_messages)] + [DOORS_ENV]
    model, tok = tiny_model(seed=0, corpus=corpus, vocab_size=1000)
    tok.add_tokens([AddedToken(f"```python\n{DOORS_ENV}```", normalized=False, special=False)])
    model.resize_token_embeddings(len(tok))
    env_token, eos = len(tok) - 1, tok.eos_token_id
    letters = [tok.convert_tokens_to_ids(c) for c in "abc"]

    def ids(messages):
        return list(tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False))

    designer_prompts = [ids(messages) for messages in designer_messages]
    agent_prompt = ids(agent_messages)
    # A gentle step: the two roles share every weight, and a larger one swings between them.
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(300):
        loss, p_env = 0.0, []
        for prompt in designer_prompts:  # the file, then the end of the turn
            logp = torch.log_softmax(model(torch.tensor([prompt + [env_token]])).logits[0, -2:], -1)
            p_env.append(float(logp[0, env_token].detach().exp()))
            loss = loss - logp[1, eos] - (logp[0, env_token] if p_env[-1] < 0.5 else 0.0)
        # The agent: one door (any), then the end of the turn; never the file.
        batch = torch.tensor([agent_prompt + [t] for t in letters])
        logp = torch.log_softmax(model(batch).logits[:, -2:], -1)
        p_doors = [float(logp[0, 0, t].detach().exp()) for t in letters]
        loss = (loss - logp[0, 0, letters].mean() - logp[:, 1, eos].mean()
                - torch.log1p(-logp[0, 0, env_token].exp()))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if min(p_env) >= 0.35 and max(p_env) <= 0.9 and min(p_doors) >= 0.2:
            break
    assert min(p_env) >= 0.35 and max(p_env) <= 0.9 and min(p_doors) >= 0.2, (p_env, p_doors)
    path = tmp_path_factory.mktemp("writer") / "model"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def config(model_dir, rounds: int = 1, **extra):
    return validate_config({
        "agent": f"hf:{model_dir}", "designer": f"hf:{model_dir}", "rounds": rounds, "seed": 0,
        "skills": ["Logical Deduction"], "skills_per_round": 1, "envs_per_round": 5,
        # Two groups of 8 plays: won and lost plays in one round.
        "plays": 16, "hint_plays": 2, "group_size": 8,
        "heldout": {"every": 0, "levels": "easiest", "families": ["number_sequence"], "seeds": 2, "hint": False},
        "train": {"max_new_tokens": 6, "designer_max_new_tokens": 6, "lr": 5e-3, "action_rule": "forgiving",
                  "max_seq_len": 16384, "threads": 1},
        # No grounding document: the designer's prompt is the one the fixture taught the file to.
        **({"llm_designer": {"corpus_words": 0}} if extra.get("designer", "hf") != "mutation" else {}),
        "tensorboard": False, **extra})


def test_one_round_updates_both_roles_of_one_shared_model(writer_dir, tmp_path):
    from safetensors.torch import load_file

    result = run(config(writer_dir), out=tmp_path / "run", report=True)
    summary = result.summaries[0].to_dict()
    learner = summary["learner"]
    assert 0 < summary["valid"] < summary["proposals"]  # the designer wrote valid and invalid files
    assert learner["agent_updates"] == 1 and learner["designer_updates"] == 2  # one policy, two steps
    assert learner["agent_tokens_trained"] > 0 and learner["designer_tokens_trained"] > 0
    assert learner["agent_kl_sampling"] > 0 and learner["designer_kl_sampling"] > 0
    assert "designer_watch" in summary and summary["designer_watch"]["flag"] is False
    page = result.report.read_text()  # the report shows both roles' steps
    assert "Model training (GRPO, per role)" in page
    assert "<tr><td>agent</td><td>1</td>" in page and "<tr><td>designer</td><td>1</td>" in page
    assert "without held-out evaluations during the run: set heldout.every" in page  # the watch says what it lacks
    before = load_file(writer_dir / "model.safetensors")
    after = load_file(tmp_path / "run" / "checkpoints" / "round-0000" / "weights" / "model.safetensors")
    assert any(not torch.equal(before[k], after[k]) for k in before)
    # The store keeps the trained policy with its optimizer and random state.
    assert {p.name for p in (tmp_path / "run" / "checkpoints" / "round-0000").iterdir()} >= {
        "weights", "optimizer.pt", "rng.json", "policy.json"}


def test_a_killed_run_resumes_training_from_its_last_round(tiny_dir, tmp_path):
    out = tmp_path / "run"
    cfg = config(tiny_dir, rounds=3, designer="mutation", envs_per_round=2, plays=4, group_size=4, hint_plays=0)
    cfg_file = tmp_path / "run.json"
    cfg_file.write_text(cfg.model_dump_json())
    log = tmp_path / "output.txt"
    with log.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "spadegym", "run", "--config", str(cfg_file), "--out", str(out)],
                                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            try:
                with RunStore.open(out) as store:
                    if store.last_complete_round() is not None:
                        break
            except StoreError:  # not made yet, or its tables not written yet
                pass
            time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    with RunStore.open(out) as store:
        done = store.last_complete_round()
    assert done is not None and done < 2
    # The model was loaded and its round's checkpoint written without transformers' own progress bars.
    printed = log.read_text()
    assert "spadegym run" in printed and "Loading weights" not in printed and "Writing model shards" not in printed
    result = run(resume=out, report=False)
    assert result.rounds == 3
    with RunStore.open(out) as store:
        updates = [s["learner"].get("agent_updates") for s in store.rounds()]
    # The update counter travels with the checkpoint: the resumed rounds continue it.
    numbers = [u for u in updates if u is not None]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
