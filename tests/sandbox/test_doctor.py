"""`spadegym doctor`: the sandbox tier per layer, Python and extras, as text or one JSON object."""

from __future__ import annotations

import json
import platform
import subprocess

from spadegym.sandbox import doctor, probe


def test_doctor_reports_every_layer_and_the_probed_tier() -> None:
    facts = doctor()
    report = probe()
    assert facts["sandbox"]["tier"] == report.tier
    layers = facts["sandbox"]["layers"]
    assert set(layers) == {"process", "seccomp", "landlock", "netns", "ipcns", "uid", "tmpfs"}
    for name, layer in layers.items():
        assert layer["available"] == report.layers[name]
        assert (layer["why_missing"] is None) == layer["available"]
    assert facts["python"]["version"] == platform.python_version()
    assert {"torch", "trl", "ray", "datasets", "tensorboard", "chromium"} <= set(facts["extras"])
    assert facts["extras"]["datasets"]  # a dev dependency, installed with the test tools
    assert facts["environments"]["math_verify"].startswith("package")  # a dependency of spadegym


def test_doctor_cli_json_is_one_object() -> None:
    done = subprocess.run(["spadegym", "doctor", "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["sandbox"]["tier"] == probe().tier


def test_doctor_cli_text_names_the_tier_and_missing_reasons() -> None:
    done = subprocess.run(["spadegym", "doctor"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"sandbox tier: {probe().tier}" in done.stdout
    for name, why in probe().missing.items():
        assert name in done.stdout and why in done.stdout
    assert "python:" in done.stdout and "extras:" in done.stdout
