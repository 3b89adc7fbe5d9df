"""A level's family and knobs travel with it as typed data; its text is read only for a file that carries none."""

from __future__ import annotations

from spadegym.families import get_family, level_family, list_families, provenance, rendered_level
from spadegym.level import Level, Params


def test_a_family_level_is_known_by_its_typed_params_not_by_its_text(monkeypatch) -> None:
    family = get_family("grid_maze")
    knobs = family.level_knobs(1)
    level = Level(family.render(knobs), params=Params(family.name, dict(knobs)))
    assert level_family(Level.from_dict(level.to_dict())) == (family.name, family.check_knobs(knobs))  # stored too

    def no_regex(source: str) -> None:
        raise AssertionError("a level that carries its family was read by its text")

    monkeypatch.setattr(provenance, "rendered_level", no_regex)
    assert level_family(level) == (family.name, family.check_knobs(knobs))
    # Typed data is the level's identity: a note added below the rendering does not hide its family.
    assert level_family(Level(level.source + "\n# a note\n", params=level.params)) == level_family(level)
    assert level_family(Level(level.source, params=Params("no_such_family", {}))) is None


def test_a_file_that_carries_no_family_falls_back_to_its_text() -> None:
    for family in list_families()[:6]:
        knobs = family.level_knobs(0)
        source = family.render(knobs)
        typed = level_family(Level(source, params=Params(family.name, dict(knobs))))
        assert typed == level_family(Level(source)) == rendered_level(source)  # the same answer either way
    assert level_family(Level("class Env:\n    pass\n")) is None


def test_the_red_team_models_the_targets_plays_from_typed_params(monkeypatch) -> None:
    """A probe keeps the params of the level it was asked about, and the red team reads the family and knobs of
    a level played from them (the text is never read for a level that carries its family)."""
    from spadegym.redteam.probe import Prober
    from spadegym.redteam.round import RedTeam
    from spadegym.signals import EnvStats

    monkeypatch.setattr(provenance, "rendered_level", lambda source: None)
    family = get_family("take_away")
    knobs = family.level_knobs(0)
    probe = Prober.check(None, family.render(knobs), verdict={"valid": True}, params=Params(family.name, dict(knobs)))  # type: ignore[arg-type]
    assert probe.params == Params(family.name, dict(knobs))
    observed: list[tuple] = []
    team = RedTeam.__new__(RedTeam)  # only its model of the target's plays is used
    team.model = type("Model", (), {"observe": lambda self, *seen: observed.append(seen)})()
    team.played(Level(probe.source, params=probe.params), EnvStats(0.5, 0.0, 0.0, 0.0, plays=4))
    assert observed == [(family.name, family.check_knobs(knobs), 2.0, 4)]
