"""`gpukit train cats-vs-dogs`, `gpukit predict`, and the benchmark's tables."""

import pytest

torch = pytest.importorskip("torch")

from gpukit import pages, results  # noqa: E402
from tests.helpers import assert_one_line_error, run_cli  # noqa: E402
from tests.cats_vs_dogs_helpers import filtered_layout, oxford_copy, photo  # noqa: E402

CPU = {"CUDA_VISIBLE_DEVICES": ""}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny model trained by the command line on a synthetic photo folder."""
    tmp = tmp_path_factory.mktemp("cli")
    data = filtered_layout(tmp / "data", n_train=16, n_val=4)
    ckpt = tmp / "model.pt"
    proc = run_cli("train", "cats-vs-dogs", "--data", data, "--epochs", "12", "--img-size", "32",
                   "--width", "8", "--batch-size", "8", "--out", ckpt, "--quiet", env=CPU)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp, data, ckpt, proc


def test_train_prints_epochs_and_a_final_report(trained):
    _, _, ckpt, proc = trained
    assert "epoch  12/12" in proc.stdout
    assert "validation accuracy" in proc.stdout and "confusion matrix" in proc.stdout
    assert "training images/s" in proc.stdout and ckpt.exists()


def test_predict_prints_class_and_probability(trained):
    tmp, data, ckpt, _ = trained
    cat = photo(tmp / "my_cat.jpg", 0, seed=7, size=(60, 45))
    dog = photo(tmp / "my_dog.png", 1, seed=8, size=(45, 60))
    proc = run_cli("predict", "--checkpoint", ckpt, cat, dog, env=CPU)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{cat}: cat (") and lines[1].startswith(f"{dog}: dog (")
    assert all(line.endswith("%)") for line in lines)


@pytest.mark.parametrize("case", ["no data", "batch 0", "empty class", "bad checkpoint",
                                  "missing checkpoint", "missing image", "not an image"])
def test_bad_input_is_one_line_exit_2(trained, case, tmp_path):
    _, data, ckpt, _ = trained
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"\x80\x04 this is not a checkpoint")
    text = tmp_path / "notes.jpg"
    text.write_text("hello")
    (tmp_path / "d" / "train" / "cats").mkdir(parents=True)
    args, needle = {
        "no data": (["train", "cats-vs-dogs", "--data", tmp_path / "nope"], "not found"),
        "batch 0": (["train", "cats-vs-dogs", "--data", data, "--batch-size", "0"], "> 0"),
        "empty class": (["train", "cats-vs-dogs", "--data", tmp_path / "d"], "is empty"),
        "bad checkpoint": (["predict", "--checkpoint", junk, text], "cannot read checkpoint"),
        "missing checkpoint": (["predict", "--checkpoint", tmp_path / "x.pt", text], "checkpoint not found"),
        "missing image": (["predict", "--checkpoint", ckpt, tmp_path / "nope.jpg"], "image not found"),
        "not an image": (["predict", "--checkpoint", ckpt, text], "not a readable image"),
    }[case]
    line = assert_one_line_error(run_cli(*args, env=CPU))
    assert needle in line


def test_benchmark_quick_run_renders_every_view(tmp_path):
    from gpukit.cats_vs_dogs import measure as tb
    data = filtered_layout(tmp_path / "data", n_train=10, n_val=4)
    result = tb.run(1, 3, data_dir=str(data), quick=True)
    assert set(result) == {"training", "throughput", "decode", "cpu_vs_gpu"}
    assert all("n" in part and "rows" in part for part in result.values())  # what `gpukit bench` prints
    assert result["training"]["quick"] and not result["training"]["errors"], result["training"]["errors"]
    tp = result["throughput"]
    assert tp["rows"][0]["median_s"] > 0 and tp["real_over_synthetic"] > 0
    assert result["cpu_vs_gpu"]["ratio"] > 0
    results.save("cats_vs_dogs", result, root=tmp_path / "results")
    for view in ("summary", "variants", "confusion", "throughput", "decode", "cpu-vs-gpu", "curves", "grid"):
        md = pages.render("cats_vs_dogs", view, root=tmp_path / "results")
        assert "Measured on" in md, view
    svg = pages.render("cats_vs_dogs", "curves", root=tmp_path / "results")
    assert "<svg" in svg and "epoch" in svg
    assert "data:image/jpeg;base64," in pages.render("cats_vs_dogs", "grid", root=tmp_path / "results")


def test_gpu_out_of_memory_is_one_line_with_a_hint(trained, monkeypatch, capsys):
    import argparse

    from gpukit.cats_vs_dogs import cli, loop

    def oom(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
    monkeypatch.setattr(loop, "fit", oom)
    _, data, ckpt, _ = trained
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    args = parser.parse_args(["train", "cats-vs-dogs", "--data", str(data), "--batch-size", "4096",
                              "--out", str(ckpt.with_name("oom.pt"))])
    assert args.func(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "out of memory at batch size 4096" in err[0] and "--batch-size" in err[0]


def test_train_on_oxford_pets_folder(tmp_path):
    root = oxford_copy(tmp_path / "pets")
    proc = run_cli("train", "cats-vs-dogs", "--data", f"oxford-pets:{root}", "--epochs", "1",
                   "--img-size", "32", "--width", "8", "--out", tmp_path / "o.pt", "--quiet", env=CPU)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "data: 4 training and 2 validation photos" in proc.stdout


def test_command_line_defaults_are_the_recipe():
    import argparse

    from gpukit.cats_vs_dogs import cli
    from gpukit.cats_vs_dogs.loop import TrainConfig
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    args = parser.parse_args(["train", "cats-vs-dogs", "--data", "x"])
    recipe = TrainConfig()
    for field in ("epochs", "img_size", "batch_size", "lr", "ema", "width", "seed"):
        assert getattr(args, field) == getattr(recipe, field), field
