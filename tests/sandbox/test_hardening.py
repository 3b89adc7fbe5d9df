"""Hardening layers: the probe, the seccomp program, and what a confined worker sees."""

from __future__ import annotations

import json
import struct

import pytest

from spadegym.sandbox import TIERS, Sandbox, SandboxConfig, SandboxError, probe, seccomp
from spadegym.sandbox.hardening import LAYER_TIER

FACTS = '''
import json
import os


class FactsEnv:
    def reset(self, seed=None):
        status = {}
        try:
            with open("/proc/self/status") as f:
                for row in f:
                    key, _, value = row.partition(":")
                    status[key] = value.strip()
        except OSError as exc:
            status["error"] = str(exc)
        low_fds = []
        for fd in range(3, 256):
            try:
                os.fstat(fd)
                low_fds.append(fd)
            except OSError:
                pass
        facts = {"uid": os.getuid(), "cwd": os.getcwd(), "env": sorted(os.environ),
                 "seccomp": status.get("Seccomp"), "nnp": status.get("NoNewPrivs"),
                 "low_fds": low_fds}
        return json.dumps(facts), {}

    def step(self, action):
        return "ok", 0.0, True, False, {}
'''


def test_probe_is_cached_and_its_tier_matches_its_layers() -> None:
    first, second = probe(), probe()
    assert first == second
    assert first.layers["process"] is True
    for name, available in first.layers.items():
        assert available == (name not in first.missing)
        if TIERS.index(LAYER_TIER[name]) <= first.rank():
            assert available, f"tier {first.tier} claims layer {name}, which is missing"
    if first.rank() < len(TIERS) - 1:
        next_tier = TIERS[first.rank() + 1]
        assert any(not first.layers[n] for n, t in LAYER_TIER.items() if t == next_tier)


def test_disabled_layers_are_reported_with_the_config_field() -> None:
    report = probe(SandboxConfig(seccomp=False, landlock=False, namespaces=False))
    assert report.tier == "process"
    assert report.missing["seccomp"] == "disabled in the config (sandbox.seccomp = false)"
    assert "sandbox.namespaces" in report.missing["netns"] and "sandbox.namespaces" in report.missing["ipcns"]


def test_strict_mode_refuses_to_start_below_the_required_tier() -> None:
    with pytest.raises(SandboxError, match="below the required 'seccomp'.*seccomp: disabled"):
        Sandbox(SandboxConfig(seccomp=False, min_tier="seccomp"))


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_seccomp_program_checks_the_architecture_first_and_ends_in_returns(machine: str) -> None:
    program = seccomp.build_filter(4242, machine)
    assert len(program) % 8 == 0 and len(program) // 8 < 256
    rows = [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    assert rows[0] == (0x20, 0, 0, 4)  # load seccomp_data.arch
    assert rows[1][0] == 0x15  # compare with this architecture, else kill
    returns = [k for code, _jt, _jf, k in rows if code == 0x06]
    assert 0x80000000 in returns and 0x00050001 in returns and 0x7FFF0000 in returns
    assert any(code == 0x15 and k == 4242 for code, _jt, _jf, k in rows)  # kill: only itself


def test_a_confined_worker_sees_only_what_its_layers_allow() -> None:
    report = probe()
    with Sandbox(SandboxConfig(min_tier=report.tier)) as box:
        env = box.open(FACTS, "facts.py")
        assert env.loaded.ok, env.loaded.message
        first = env.reset(seed=0)
        assert first.ok, first
        assert env.worker is not None
        facts = json.loads(first.value["observation"])
        assert facts["cwd"] == env.worker.scratch
        assert facts["env"] == ["HOME", "LANG", "PATH", "TMPDIR"]
        assert facts["low_fds"] == []  # the protocol pipes sit at unguessable high fds
        if report.layers["seccomp"]:
            assert facts["seccomp"] == "2" and facts["nnp"] == "1"
        if report.layers["uid"]:
            assert facts["uid"] >= 61000
        env.close()
