"""The documentation keeps step with the code: every code block is a tested file, every command exists.

Rules for README.md and docs/*.md:
- a fenced block preceded by ``<!-- example: PATH -->`` must equal the file PATH (tests/docs/test_examples.py runs
  the files); the quick start's two blocks are marked ``<!-- quickstart: ... -->``; any other block is ``text``;
- every ``spadegym ...`` command shown (in blocks or inline code) names a real command and real options;
- local links resolve, headings included; no machine's paths; the configuration reference is generated.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer

from spadegym import reference

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = ROOT / "examples"
#: The benchmarks' current figures and their log: commands, links and paths checked as the docs' are.
BENCHMARK_PAGES = [ROOT / "benchmarks" / "README.md", ROOT / "benchmarks" / "LOG.md"]
BLOCK = re.compile(r"(?:<!-- (?P<mark>[a-z]+): (?P<arg>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)


def blocks(page: Path) -> list[re.Match]:
    return list(BLOCK.finditer(page.read_text(encoding="utf-8")))


def test_the_configuration_reference_is_generated_from_the_config_models() -> None:
    page = ROOT / "docs" / "configuration.md"
    assert page.read_text(encoding="utf-8") == reference.reference(), (
        "docs/configuration.md is out of step with the config models: run python -m spadegym.reference "
        "docs/configuration.md")


def test_the_reference_names_every_field_of_every_config_model() -> None:
    from pydantic import BaseModel

    from spadegym.loop.config import RunConfig
    from spadegym.redteam.config import RedTeamConfig

    text = reference.reference()
    todo: list[type[BaseModel]] = [RunConfig, RedTeamConfig]
    seen: set[type[BaseModel]] = set()
    while todo:
        model = todo.pop()
        seen.add(model)
        for name, field in model.model_fields.items():
            nested = [m for m in reference._models_in(field.annotation) if m not in seen]
            todo += nested
            if not reference._models_in(field.annotation):
                assert re.search(rf"`([\w.]+\.)?{name}`", text), f"{model.__name__}.{name} is not in the reference"


def test_the_reference_page_check_fails_on_a_stale_page(tmp_path: Path) -> None:
    stale = tmp_path / "configuration.md"
    stale.write_text(reference.reference().replace("Seeds everything", "Seeds nothing"))
    assert reference.main([str(stale), "--check"]) == 1
    assert reference.main([str(stale)]) == 0 and reference.main([str(stale), "--check"]) == 0


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_code_block_is_an_example_file_or_plain_text(page: Path) -> None:
    for block in blocks(page):
        where = f"{page.name}, block starting {block.group('body')[:40]!r}"
        if block.group("mark") == "example":
            file = ROOT / block.group("arg")
            assert file.is_file(), f"{where}: no file {block.group('arg')}"
            assert block.group("body") == file.read_text(encoding="utf-8"), f"{where}: differs from {file.name}"
        elif block.group("mark") == "quickstart":
            assert page.name == "README.md"
        else:
            assert block.group("lang") == "text", f"{where}: mark it <!-- example: FILE --> or make it text"


def test_every_run_in_the_readmes_first_steps_says_what_it_costs() -> None:
    """A new user pastes these after a 3-minute quick start: a run that takes far longer says so on its line."""
    runs = [line for block in blocks(ROOT / "README.md") if block.group("lang") == "text"
            for line in block.group("body").splitlines() if line.startswith("spadegym run")]
    assert runs
    for line in runs:
        assert re.search(r"#.*\b\d+ rounds, ~\d+ (CPU )?(s|min)\b", line), f"say its rounds and time: {line}"


def test_every_local_model_run_in_the_docs_says_what_it_costs() -> None:
    """A model on a CPU turns a run into hours: the text just before each such command says how long."""
    for page in PAGES[1:]:
        text = page.read_text(encoding="utf-8")
        for block in blocks(page):
            if re.search(r"^spadegym run .*hf:", block.group("body"), re.M):
                before = text[max(0, block.start() - 700):block.start()]
                assert re.search(r"\b\d+ (s|minutes|hours?)\b|an hour", before), \
                    f"{page.name}: say how long it takes before {block.group('body')[:80]!r}"


def test_every_example_file_is_shown_or_linked_from_the_docs() -> None:
    text = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    for file in EXAMPLES.rglob("*"):
        if file.is_file() and "__pycache__" not in file.parts:
            name = file.relative_to(ROOT).as_posix()
            assert name in text or file.parent.relative_to(ROOT).as_posix() + "/" in text, f"{name} is in no page"


def test_the_quick_start_is_exactly_the_two_commands_and_ci_runs_the_second() -> None:
    marked = {b.group("arg"): b.group("body").strip() for b in blocks(ROOT / "README.md") if b.group("mark") == "quickstart"}
    assert marked == {"run": "pip install -e . && spadegym run", "test": "bash scripts/setup-tests && python -m pytest"}
    # CI runs the README's test command itself, so a user's set-up is CI's.
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert marked["test"] in ci
    script = (ROOT / "scripts" / "setup-tests").read_text(encoding="utf-8")
    assert script.rstrip().endswith('python -m pip install -q -e ".[dev]"')


def _cli():
    from spadegym.cli import _register, app

    _register()
    return typer.main.get_command(app)


def _commands(text: str) -> list[str]:
    """Every ``spadegym ...`` command line of a page: in code blocks (continuations joined) and inline code."""
    found = []
    for block in BLOCK.finditer(text):
        body = block.group("body").replace("\\\n", " ")
        found += [line.split("#", 1)[0] for line in body.splitlines() if line.strip().startswith("spadegym ")]
    prose = BLOCK.sub("", text)
    found += [span for span in re.findall(r"`([^`\n]+)`", prose) if re.match(r"spadegym (-|[a-z])", span)]
    return found


def _check(cli, command: str) -> str | None:
    """Why ``command`` is not a real invocation (None when it is): an unknown command or option."""
    try:
        words = shlex.split(command.replace("|", " ").replace("[", " ").replace("]", " "))
    except ValueError:
        words = command.replace("[", " ").replace("]", " ").split()
    group = cli
    for word in words[1:]:
        if word in getattr(group, "commands", {}):  # typer vendors its own click: no isinstance
            group = group.commands[word]
            continue
        break
    if group is cli and words[1:] and not words[1].startswith("--"):
        return f"no command {words[1]!r}"
    known = {opt for param in group.params for opt in (*param.opts, *param.secondary_opts)} | {"--help"}
    unknown = [w for w in words if w.startswith("--") and w.split("=")[0] not in known]
    return f"{group.name} has no option {unknown[0]}" if unknown else None


@pytest.mark.parametrize("page", [*PAGES, *BENCHMARK_PAGES], ids=lambda p: p.name)
def test_every_documented_command_exists_with_its_options(page: Path) -> None:
    cli = _cli()
    text = page.read_text(encoding="utf-8") + "".join(
        f"\n```\n{(ROOT / b.group('arg')).read_text()}```" for b in blocks(page) if b.group("mark") == "example")
    wrong = {command: why for command in _commands(text) if (why := _check(cli, command))}
    assert not wrong, wrong


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as dashes."""
    slugs = set()
    for heading in re.findall(r"^#+ (.+)$", BLOCK.sub("", page.read_text(encoding="utf-8")), re.M):
        slugs.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return slugs


@pytest.mark.parametrize("page", [*PAGES, *BENCHMARK_PAGES], ids=lambda p: p.name)
def test_local_links_resolve(page: Path) -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", BLOCK.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{page.name}: link to a missing {target}"
        if anchor:
            assert anchor in _anchors(file), f"{page.name}: no heading #{anchor} in {file.name}"


def test_no_page_names_a_machine_path() -> None:
    files = [*PAGES, *BENCHMARK_PAGES, *(p for p in EXAMPLES.rglob("*") if p.is_file())]
    for file in files:
        text = file.read_text(encoding="utf-8")
        assert not re.search(r"(?<![\w.])/(work|tmp|root|home)/", text), f"{file.name} names a machine's path"


def test_the_architecture_page_names_every_layer() -> None:
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "architecture"))
    from test_import_layers import LAYERS

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for name in set().union(*LAYERS) - {"spadegym", "__main__"}:
        assert f"{name}/" in text or f"{name}.py" in text, f"docs/architecture.md does not name {name}"


def test_the_readme_stays_a_guide() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 280


def _all_commands(group, prefix: str = "spadegym"):
    for name, command in getattr(group, "commands", {}).items():
        yield f"{prefix} {name}", command
        yield from _all_commands(command, f"{prefix} {name}")


def test_every_example_in_the_commands_help_is_a_real_invocation() -> None:
    cli = _cli()
    wrong = {}
    for name, command in _all_commands(cli):
        for line in (command.help or "").splitlines():
            line = line.strip().split("  #", 1)[0]
            if line.startswith("spadegym ") and (why := _check(cli, line)):
                wrong[f"{name}: {line}"] = why
    assert not wrong, wrong


def test_the_help_names_every_agent_designer_and_reward_kind() -> None:
    from spadegym.agents.registry import SPEC_FORMS
    from spadegym.cli.specs import AGENT_SPECS, DESIGNER_REWARDS, DESIGNER_SPECS
    from spadegym.designers.registry import DESIGNER_SPECS as DESIGNER_KINDS
    from spadegym.signals import DESIGNER_REWARDS as REWARDS

    assert all(form.replace("[:DIR]", "") in AGENT_SPECS for form in SPEC_FORMS.values())
    assert all(kind in DESIGNER_SPECS for kind in DESIGNER_KINDS)
    assert all(name in DESIGNER_REWARDS for name in REWARDS)
    cli = _cli()
    for command in ("run", "play", "eval", "redteam"):
        assert AGENT_SPECS in " ".join(p.help or "" for p in cli.commands[command].params)
    for command in ("run", "design"):
        assert DESIGNER_SPECS in " ".join(p.help or "" for p in cli.commands[command].params)


def test_boolean_options_show_as_flags_and_the_version_prints() -> None:
    import subprocess
    import sys

    import spadegym

    shown = subprocess.run([sys.executable, "-m", "spadegym", "run", "--help"], capture_output=True, text=True).stdout
    assert "--print-config  " in shown and "<bool>" not in shown
    done = subprocess.run([sys.executable, "-m", "spadegym", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == f"spadegym {spadegym.__version__}"
    assert f'version = "{spadegym.__version__}"' in (ROOT / "pyproject.toml").read_text()


def test_print_config_describe_shows_each_setting_with_its_value_and_description(tmp_path: Path) -> None:
    import subprocess
    import sys

    from spadegym.curriculum import BufferConfig

    done = subprocess.run([sys.executable, "-m", "spadegym", "run", "--print-config", "--describe",
                           "--set", "buffer.capacity=128"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("buffer.capacity = 128")
    assert lines[at - 1] == f"# {BufferConfig.model_fields['capacity'].description}"
    assert "# validation.sandbox.min_tier = (unset)" in lines  # TOML has no null
    plain = subprocess.run([sys.executable, "-m", "spadegym", "run", "--print-config"], capture_output=True, text=True,
                           timeout=120)
    import json

    assert json.loads(plain.stdout)["buffer"]["capacity"] == BufferConfig().capacity != 128


def test_print_config_describe_is_a_toml_file_that_loads_back_to_the_same_config(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    import tomllib

    given = ["--source", "reasoning-gym:chain_sum", "--set", "buffer.capacity=64"]
    described = subprocess.run([sys.executable, "-m", "spadegym", "run", "--print-config", "--describe", *given],
                               capture_output=True, text=True, timeout=120)
    assert described.returncode == 0, described.stderr
    (tmp_path / "described.toml").write_text(described.stdout)
    assert tomllib.loads(described.stdout)["sources"] == [{"source": "reasoning-gym:chain_sum", "instances": 100000}]
    [loaded, direct] = [subprocess.run([sys.executable, "-m", "spadegym", "run", "--print-config", *args],
                                       capture_output=True, text=True, timeout=120)
                        for args in (["--config", str(tmp_path / "described.toml")], given)]
    assert loaded.returncode == 0, loaded.stderr
    assert json.loads(loaded.stdout) == json.loads(direct.stdout)


def test_the_benchmarks_page_has_a_current_row_for_every_benchmark() -> None:
    """benchmarks/README.md: one table of current figures (command, figure, date, machine) naming every benchmark
    script; the studies' history is in benchmarks/LOG.md, which it points to."""
    text = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| benchmark |")]
    # Measuring aids the benchmarks import or run, not benchmarks of their own.
    helpers = {"cpu_time.py", "paired.py", "gpu/selfplay_vllm.py", "gpu/vllm_env.sh"}
    scripts = [*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "benchmarks" / "gpu").glob("*")]
    for script in scripts:
        if script.relative_to(ROOT / "benchmarks").as_posix() not in helpers and script.suffix in (".py", ".sh"):
            name = script.relative_to(ROOT).as_posix()
            assert any(name in row for row in rows), f"benchmarks/README.md has no row for {name}"
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 5 and (re.fullmatch(r"\d{4}-\d{2}-\d{2}", cells[3]) or "not measured" in cells[2]), row
    assert "(LOG.md)" in text
