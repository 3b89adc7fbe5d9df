"""A level is one typed value: a file or an OpenEnv server, told apart by its kind and never by its text."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from spadegym.level import FILE, REMOTE, Level, Params, Remote

FILE_SOURCE = '''"""A tiny game."""
SKILL = "Logical Deduction"

class TinyEnv:
    def reset(self, seed=None):
        return "pick", {}

    def step(self, action):
        return "done", 1.0, True, False, {}

    def solution(self):
        return ["a"]
'''


def test_a_level_is_a_file_or_a_server_and_never_both_or_neither() -> None:
    assert Level(FILE_SOURCE).kind == FILE
    assert Level(remote=Remote(url="http://127.0.0.1:8000/")).kind == REMOTE
    with pytest.raises(ValueError, match="exactly one"):
        Level()
    with pytest.raises(ValueError, match="exactly one"):
        Level(FILE_SOURCE, remote=Remote(url="http://127.0.0.1:8000"))


def test_a_file_that_names_a_server_in_its_text_is_still_a_file() -> None:
    descriptor = FILE_SOURCE + '\nOPENENV = {"url": "http://127.0.0.1:1"}\n\nclass RemoteLevelEnv:\n    pass\n'
    level = Level(descriptor)
    assert level.kind == FILE and level.remote is None


def test_levels_are_told_apart_by_code_for_files_and_by_settings_for_servers() -> None:
    cosmetic = FILE_SOURCE.replace('A tiny game.', 'Another story.').replace('    def step', '    # a comment\n    def step')
    assert Level(FILE_SOURCE).code_hash == Level(cosmetic).code_hash
    one, other = Remote(url="http://127.0.0.1:8000/"), Remote(url="http://127.0.0.1:8000", reset_args={"level_id": "b"})
    assert one.url == "http://127.0.0.1:8000"
    assert Level(remote=one).code_hash != Level(remote=other).code_hash
    assert Level(remote=one).code_hash == Level(remote=Remote(url="http://127.0.0.1:8000")).code_hash


def test_what_a_level_declares_is_read_from_its_file_or_its_settings() -> None:
    file_level = Level(FILE_SOURCE, params=Params("tiny", {"size": 3}))
    assert file_level.info.has_solution and file_level.info.skill == "Logical Deduction"
    assert (file_level.family, file_level.knobs) == ("tiny", {"size": 3})
    server = Level(remote=Remote(url="http://127.0.0.1:8000", max_turns=7), skill="Optimization")
    assert not server.info.has_solution and server.info.skill == "Optimization"
    assert server.info.declared_max_turns == 7


def test_remote_settings_of_the_wrong_type_are_refused_by_name() -> None:
    with pytest.raises(ValidationError, match="max_turns"):
        Remote(url="http://127.0.0.1:8000", max_turns="many")
    with pytest.raises(ValidationError, match="reset_args"):
        Remote(url="http://127.0.0.1:8000", reset_args=["level"])


def test_a_level_is_stored_and_read_back_as_the_same_value() -> None:
    from spadegym.level import Lineage

    for level in (Level(FILE_SOURCE, skill="Logical Deduction", hint="look", params=Params("maze", {"size": 3}),
                        lineage=Lineage(parents=["e1"], operator="grow", designer="d", depth=2)),
                  Level(remote=Remote(url="http://127.0.0.1:8000", max_turns=4), skill="Logical Deduction")):
        stored = level.to_dict()
        assert "kind" in stored if level.kind == REMOTE else "kind" not in stored  # a file's kind is implied
        back = Level.from_dict(stored)
        assert back == level and back.kind == level.kind and back.code_hash == level.code_hash


def test_there_is_one_level_class_in_the_package() -> None:
    """Every part of spadegym (the loop, the store, the adapters) passes the one ``spadegym.level.Level``: a
    second class named Level (adapters once had one) would let the two drift apart."""
    import ast
    from pathlib import Path

    import spadegym

    package = Path(spadegym.__file__).parent
    found = [str(path.relative_to(package.parent)) for path in sorted(package.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.ClassDef) and node.name == "Level"]
    assert found == ["spadegym/level.py"], f"classes named Level: {found}"
