"""The gpukit command: doctor, bench, and one-line errors for bad input."""

import json
import re

import pytest

from tests.helpers import assert_one_line_error, run_cli

NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}


def test_help_lists_commands():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for cmd in ("doctor", "bench"):
        assert cmd in proc.stdout


def test_doctor_without_gpu_says_so_plainly():
    proc = run_cli("doctor", env=NO_GPU)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "GPU usable: no" in proc.stdout
    assert "CUDA_VISIBLE_DEVICES" in proc.stdout


def test_doctor_json():
    proc = run_cli("doctor", "--json", env=NO_GPU)
    data = json.loads(proc.stdout)
    assert data["ok"] is False
    assert {c["status"] for c in data["checks"]} <= {"pass", "fail", "warn", "skip"}
    assert data["machine"]["cpu"]["model"]


@pytest.mark.parametrize("args, needle", [
    (["bench", "no-such-benchmark"], "invalid choice"),
    (["bench", "vector-add", "--n", "0"], "> 0"),
    (["bench", "vector-add", "--n", "1.5"], "whole number"),
    (["bench", "vector-add", "--n", "ten"], "whole number"),
    (["no-such-command"], "invalid choice"),
    (["doctor", "--bogus"], "unrecognized"),
])
def test_bad_input_is_one_line_exit_2(args, needle):
    line = assert_one_line_error(run_cli(*args))
    assert needle in line


def test_bench_vector_add_small_cpu():
    proc = run_cli("bench", "vector-add", "--n", "100000", "--repeat", "3", env=NO_GPU)
    assert proc.returncode == 0, proc.stderr
    assert "numba parallel" in proc.stdout


@pytest.mark.gpu
def test_doctor_on_gpu_passes():
    proc = run_cli("doctor")
    assert proc.returncode == 0, proc.stdout
    assert "GPU usable: yes" in proc.stdout
    assert "[FAIL]" not in proc.stdout


def _fake_results(root, slug, gbs):
    from gpukit import device, results
    machine = {**device.machine_record(), "slug": slug}
    row = {"name": "kernel A", "median_s": 1.0 / gbs, "gbs": gbs}
    results.save("demo", {"gpu": {"n": 10, "rows": [row]}}, root=root, machine=machine)


def test_bench_compare_two_machines(tmp_path):
    _fake_results(tmp_path, "slow-gpu", 100.0)
    _fake_results(tmp_path, "fast-gpu", 250.0)
    proc = run_cli("bench", "compare", tmp_path / "slow-gpu", tmp_path / "fast-gpu")
    assert proc.returncode == 0, proc.stderr
    assert "| gpu: kernel A | 100 GB/s | 250 GB/s | 2.50x |" in proc.stdout


def test_comparison_page_table_has_a_column_per_machine(tmp_path):
    from gpukit.compare import compare_all
    _fake_results(tmp_path, "slow-gpu", 100.0)
    _fake_results(tmp_path, "fast-gpu", 250.0)
    _fake_results(tmp_path, "lonely-gpu", 50.0)
    (tmp_path / "lonely-gpu" / "demo.json").rename(tmp_path / "lonely-gpu" / "other.json")
    text = compare_all(tmp_path)
    assert text.startswith("### Demo\n\n<small>`results/*/demo.json`</small>")
    assert "other" not in text  # recorded by one machine only: nothing to compare
    header, _, row = text.splitlines()[4:7]
    assert header.index("fast-gpu") < header.index("slow-gpu")
    assert row == "| GPU: kernel A | 250 GB/s | 100 GB/s |"    # a part's label, not its key
    from gpukit.compare import file_title
    assert file_title("why_gpus") == "Why CPUs alone are not enough"
    assert file_title("cats_vs_dogs_ddp") == "Training cats vs dogs (ddp)"


@pytest.mark.parametrize("args, needle", [
    (["compare", "only-one"], "two results folders"),
    (["compare", "no-such-a", "no-such-b"], "no results folder"),
    (["vector-add", "stray"], "unexpected arguments"),
])
def test_bench_compare_bad_input(args, needle):
    line = assert_one_line_error(run_cli("bench", *args))
    assert needle in line


def test_save_never_replaces_a_richer_file(tmp_path, monkeypatch):
    """A one-seed training run does not overwrite a stored three-seed file (unless forced)."""
    from gpukit import device, record, results
    from gpukit.cats_vs_dogs import measure
    target = "gpukit.cats_vs_dogs.measure:run"
    three = {"training": {"n": 3, "rows": [{"seed": s} for s in range(3)], "quick": False}}
    one = {"training": {"n": 1, "rows": [{"seed": 0}], "quick": False}}
    assert measure.coverage(three) > measure.coverage(one)
    saved, _ = record.save_unless_poorer("cats_vs_dogs", target, three, root=tmp_path)
    assert saved
    saved, message = record.save_unless_poorer("cats_vs_dogs", target, one, root=tmp_path)
    assert not saved and "kept the stored cats_vs_dogs.json" in message
    stored = results.load("cats_vs_dogs", root=tmp_path)[device.gpu_slug()]
    assert len(stored["training"]["rows"]) == 3
    saved, _ = record.save_unless_poorer("cats_vs_dogs", target, one, root=tmp_path, force=True)
    assert saved and len(results.load("cats_vs_dogs", root=tmp_path)[device.gpu_slug()]["training"]["rows"]) == 1


def test_check_output_refuses_before_any_work(tmp_path):
    from gpukit.cli import UserError, check_output
    ok = tmp_path / "a.json"
    assert check_output(str(ok), {".png": "picture", ".json": "record"}) == str(ok)
    assert not ok.exists()                                       # checked, nothing written
    for path, needle in ((tmp_path / "a.txt", ".png (picture) or .json (record)"),
                         (tmp_path / "no" / "a.png", "does not exist"),
                         (tmp_path, "must name")):
        with pytest.raises(UserError, match=re.escape(needle)):
            check_output(str(path), {".png": "picture", ".json": "record"})
    (tmp_path / "d.png").mkdir()
    with pytest.raises(UserError, match="it is a folder"):
        check_output(str(tmp_path / "d.png"), {".png": "picture"})
