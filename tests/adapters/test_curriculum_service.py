"""The curriculum service and its client, over real HTTP on 127.0.0.1, with a real run store and sandbox."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from spadegym.adapters.curriculum_client import CurriculumClient, CurriculumPlay, CurriculumUnreachable
from spadegym.adapters.curriculum_service import CurriculumService
from spadegym.errors import UserError
from spadegym.loop.driven import driven_curriculum

ROOT = Path(__file__).parents[2]
CONFIG = ROOT / "examples" / "configs" / "curriculum.toml"


def test_a_draw_is_played_here_reported_once_and_checked(tmp_path: Path, sandbox) -> None:
    run = tmp_path / "run"
    with (
        driven_curriculum(CONFIG, run, generations=2, trainer="test") as driven,
        CurriculumService(driven) as service,
    ):
        service.write_address(run)
        assert (run / "curriculum.json").stat().st_mode & 0o777 == 0o600  # the token is the owner's
        client = CurriculumClient.at(run)
        plays = [CurriculumPlay(client, actions="boxed", sandbox=sandbox, origin="t") for _ in range(4)]
        firsts = [play.start(ticket) for play, ticket in zip(plays, ["a", "a", "b", "b"])]
        a1, a2, b1, _ = (play.draw for play in plays)
        # The two rollouts of one ticket play one level and seed (a GRPO group), each a play of its own.
        assert (a1.level_id, a1.seed, a1.hinted) == (a2.level_id, a2.seed, a2.hinted)
        assert a1.play_id != a2.play_id
        assert b1.level_id == a1.level_id and b1.hinted and not a1.hinted  # then the same level's hint arm
        assert "hint:" in firsts[2].observation and "hint:" not in firsts[0].observation
        plays[0].finish()
        plays[0].finish()  # a second finish reports nothing
        assert client.report(a1.play_id, plays[0].session.episode.to_dict()) == "duplicate"
        assert client.status()["reported"] == 1 and client.status()["duplicates"] == 1
        with pytest.raises(UserError, match="never drawn"):
            client.report("0:nope:1", plays[0].session.episode.to_dict())
        with pytest.raises(UserError, match="token"):
            CurriculumClient(service.url, "wrong").status()
        for play in plays[1:]:
            play.finish()
        for play in plays:
            play.close()
        assert client.status()["open_rounds"] == [0]  # half of round 0's groups are played
    assert not (run / "curriculum.json").exists()  # the service removes its address when it stops


def test_bad_input_is_one_sentence(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(CurriculumUnreachable, match="no curriculum service answers at"):
        CurriculumClient(f"http://127.0.0.1:{port}", "t").status()
    with pytest.raises(CurriculumUnreachable, match="names no curriculum service"):
        CurriculumClient.at(tmp_path)
    (tmp_path / "curriculum.json").write_text(json.dumps({"url": "http://10.0.0.1:80", "token": "t"}))
    with pytest.raises(CurriculumUnreachable, match="not this machine's loopback"):
        CurriculumClient.at(tmp_path)
    config = tmp_path / "c.toml"
    config.write_text('agent = "learner"\n')
    with (
        pytest.raises(UserError, match="remove `agent`"),
        driven_curriculum(config, tmp_path / "r", generations=2, trainer="test"),
    ):
        pass
    with (
        pytest.raises(UserError, match="set group_size = 4"),
        driven_curriculum(CONFIG, tmp_path / "r", generations=4, trainer="test"),
    ):
        pass
    assert not (tmp_path / "r").exists()
