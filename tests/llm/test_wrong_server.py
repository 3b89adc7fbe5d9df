"""A model URL that points at the wrong server says so, instead of blaming the model name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]


def test_a_model_url_on_a_spadegym_serve_port_says_it_is_not_a_model_server() -> None:
    pytest.importorskip("spadegym.adapters.openenv_import")
    sys.path.insert(0, str(ROOT / "tests" / "adapters"))
    from test_openenv import spadegym_serve

    with spadegym_serve("examples/pool/", cwd=ROOT) as url:
        done = subprocess.run([sys.executable, "-m", "spadegym", "play", "examples/pool/key_door.py",
                               "--agent", f"openai:m@{url}/v1"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    said = done.stdout + done.stderr
    assert "answers 404 to /chat/completions: it is not an OpenAI-compatible model server" in said, said[-2000:]
    assert "check the model name" not in said and "Traceback" not in said


def test_spadegym_serve_and_the_llm_example_config_use_different_ports() -> None:
    import inspect

    from spadegym.cli.serve_cmd import serve

    serve_port = inspect.signature(serve).parameters["port"].default.default
    config = tomllib.loads((ROOT / "examples" / "configs" / "llm.toml").read_text())
    assert f"127.0.0.1:{serve_port}/" not in config["agent"] + config["designer"]
