"""Suites and pools are folders anyone may hand over: every name in them is read inside the folder, as a
regular file of bounded size, or refused in one sentence before a byte is read (the hostile suite folders
are built here, each with one trap)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spadegym.envfile.folder import ENV_FILE_BYTES
from spadegym.families import get_family
from spadegym.redteam import Case, SuiteError, load_suite
from spadegym.redteam.suite import MANIFEST, SUMS, FoundCase, export_suite, write_suite

SOURCE = get_family("take_away").render(get_family("take_away").level_knobs(0))


def suite(tmp_path: Path) -> Path:
    case = Case(id="c1", file="", skill="Mathematical Reasoning", seeds=[1], family="take_away")
    return write_suite(tmp_path / "suite", [FoundCase(case, SOURCE, SOURCE)], {"target": "random", "seed": 0, "search": {}})


def retarget(path: Path, file: str, sums: bool = False) -> None:
    """Point the suite's case at ``file`` (as a tampered manifest would), dropping the checksums unless kept."""
    manifest = json.loads((path / MANIFEST).read_text())
    manifest["cases"][0]["file"] = file
    (path / MANIFEST).write_text(json.dumps(manifest))
    if not sums:
        (path / SUMS).unlink()


def test_a_checksum_line_naming_a_file_outside_the_suite_is_refused_before_reading(tmp_path: Path) -> None:
    for name in ("/dev/zero", "../../../dev/zero", "cases/../../outside.py"):
        path = suite(tmp_path)
        with (path / SUMS).open("a") as sums:
            sums.write(f"{'0' * 64}  {name}\n")
        with pytest.raises(SuiteError, match="absolute path|leads outside"):
            load_suite(path)
        shutil.rmtree(path)


def test_a_checksum_line_naming_a_fifo_inside_the_suite_is_refused_without_blocking(tmp_path: Path) -> None:
    path = suite(tmp_path)
    os.mkfifo(path / "cases" / "trap")
    with (path / SUMS).open("a") as sums:
        sums.write(f"{'0' * 64}  cases/trap\n")
    with pytest.raises(SuiteError, match="not a regular file"):
        load_suite(path)


@pytest.mark.parametrize(("target", "says"), [
    ("/proc/self/environ", "absolute path"),
    ("../outside.py", "leads outside"),
    ("cases/link.py", "leads outside"),
    ("cases/fifo.py", "not a regular file"),
    ("cases/huge.py", f"more than an environment file may have \\({ENV_FILE_BYTES:,}\\)"),
])
def test_a_case_file_outside_the_suite_or_not_a_bounded_regular_file_is_refused(tmp_path: Path, target: str,
                                                                               says: str) -> None:
    path = suite(tmp_path)
    (tmp_path / "outside.py").write_text(SOURCE)
    (path / "cases" / "link.py").symlink_to(tmp_path / "outside.py")
    os.mkfifo(path / "cases" / "fifo.py")
    (path / "cases" / "huge.py").write_text("#" * (ENV_FILE_BYTES + 1))
    retarget(path, target)
    with pytest.raises(SuiteError, match=f"case c1: .*{says}"):
        load_suite(path)
    with pytest.raises(SuiteError, match=says):  # export reads through the same door
        export_suite(path, "jsonl", tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


def test_a_manifest_with_fields_of_the_wrong_type_is_one_sentence(tmp_path: Path) -> None:
    path = suite(tmp_path)
    manifest = json.loads((path / MANIFEST).read_text())
    manifest["cases"][0]["seeds"] = "every one"
    (path / MANIFEST).write_text(json.dumps(manifest))
    (path / SUMS).unlink()
    with pytest.raises(SuiteError, match=r"not a suite manifest \(seeds: Input should be a valid list\)"):
        load_suite(path)


def test_a_pool_folder_with_a_link_out_of_it_is_refused(tmp_path: Path) -> None:
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "a.py").write_text(SOURCE)
    (tmp_path / "secret.py").write_text(SOURCE)
    (pool / "b.py").symlink_to(tmp_path / "secret.py")
    with pytest.raises(SuiteError, match="b.py leads outside"):
        load_suite(pool)
    (pool / "b.py").unlink()
    (pool / "c.py").symlink_to(pool / "a.py")  # a link that stays inside is a file of the pool
    assert sorted(c.id for c in load_suite(pool).cases) == ["a", "c"]


def test_eval_of_a_suite_whose_case_is_a_fifo_ends_in_one_sentence(tmp_path: Path) -> None:
    path = suite(tmp_path)
    os.mkfifo(path / "cases" / "fifo.py")
    retarget(path, "cases/fifo.py")
    proc = subprocess.run([sys.executable, "-m", "spadegym", "eval", str(path), "--agent", "random"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "not a regular file" in proc.stderr and "Traceback" not in proc.stderr


def test_a_pool_file_that_is_no_environment_is_one_sentence_naming_it(tmp_path: Path) -> None:
    from spadegym.cli.learn_cmd import collect_envs
    from spadegym.errors import UserError

    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "a.py").write_text(SOURCE)
    (pool / "empty.py").write_text("")
    with pytest.raises(SuiteError, match=r"empty\.py: No environment class found"):
        load_suite(pool)
    with pytest.raises(UserError, match=r"empty\.py: No environment class found"):
        collect_envs([pool])


def test_a_pool_file_with_a_byte_order_mark_is_read_as_python_reads_it(tmp_path: Path) -> None:
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "a.py").write_bytes(b"\xef\xbb\xbf" + SOURCE.encode())
    assert load_suite(pool).sources["a"] == SOURCE


@pytest.mark.parametrize(("change", "says"), [
    ({"pass_at": "x"}, "pass_at"), ({"pass_at": float("nan")}, "pass_at"), ({"pass_at": 0}, "pass_at"),
    ({"seeds": list(range(5000))}, "seeds, more than"), ({"twice": True}, "listed twice"),
])
def test_a_manifest_that_asks_for_what_eval_cannot_do_is_one_sentence(tmp_path: Path, change: dict,
                                                                     says: str) -> None:
    path = suite(tmp_path)
    manifest = json.loads((path / MANIFEST).read_text())
    if "pass_at" in change:
        manifest["pass_at"] = change["pass_at"]
    if "seeds" in change:
        manifest["cases"][0]["seeds"] = change["seeds"]
    if "twice" in change:
        manifest["cases"] *= 2
    (path / MANIFEST).write_text(json.dumps(manifest))
    (path / SUMS).unlink()
    with pytest.raises(SuiteError, match=says) as caught:
        load_suite(path)
    assert "\n" not in str(caught.value)
