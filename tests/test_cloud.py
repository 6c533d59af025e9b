"""Cloud and buying chapter: data schema, memory formulas against hand-computed cases, advisor CLI."""

import copy
import json
import subprocess
import sys

import pytest

from gpukit import pages
from gpukit.cloud import advisor, data, views as render
from gpukit.cloud.advisor import AdviceError, Workload, estimate
from tests.helpers import ROOT, assert_one_line_error

FAMILIES = {"P6-B200", "P5", "P5e", "P5en", "P4d", "P4de", "G6e", "G6", "G5", "G5g", "G4dn", "G4ad",
            "Inf2", "Trn1", "Trn2"}


def advise(*args):
    """`gpukit advise ARGS` in a subprocess (the cloud chapter's own entry point)."""
    return subprocess.run([sys.executable, "-m", "gpukit.cloud.cli", "advise", *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


# ------------------------------------------------------------------ data schema

def test_every_family_is_present_with_source_and_date():
    rows = data.instances()
    assert FAMILIES <= {r["family"] for r in rows}
    for r in rows:
        assert r["source"].startswith("https://") and len(str(r["retrieved"])) == 10


def test_at_least_twelve_gpu_models():
    assert len(data.gpus()) >= 12
    assert len({g["key"] for g in data.gpus()}) == len(data.gpus())


def test_shipped_data_passes_the_schema():
    assert data.validate_instances(data.instances_doc()) == []
    assert data.validate_gpus(data.gpus_doc()) == []


def test_every_null_is_explained_and_every_price_has_a_source():
    for r in data.instances():
        if r["price_per_hour"] is not None:
            assert r["price_source"].startswith("https://"), r["name"]
        else:
            assert "price" in r["note"], r["name"]
    for g in data.gpus():
        assert set(g["checked"]) <= set(data.GPU_NUMBERS) | {"price_usd"}, g["key"]


@pytest.mark.parametrize("field, value, message", [
    ("source", None, "source"), ("retrieved", "last week", "retrieved"),
    ("vcpus", -4, "positive"), ("price_per_hour", 0, "positive"), ("category", "mining", "category")])
def test_schema_rejects_bad_instance_rows(field, value, message):
    doc = copy.deepcopy(data.instances_doc())
    doc["instances"][0][field] = value
    problems = data.validate_instances(doc)
    assert any(message in p for p in problems), problems


def test_schema_rejects_missing_number_and_unexplained_null():
    doc = copy.deepcopy(data.gpus_doc())
    del doc["gpus"][0]["memory_gb"]
    doc["gpus"][1]["bandwidth_gbs"] = None
    doc["gpus"][1]["note"] = ""
    problems = data.validate_gpus(doc)
    assert any("missing memory_gb" in p for p in problems)
    assert any("null without a note" in p for p in problems)


def test_sparse_numbers_are_not_stored_as_dense():
    h100 = data.gpu("h100-sxm")
    assert h100["bf16_tflops"] < 1000 and "sparsity" in h100["note"]
    assert all(g["bf16_tflops"] is None or g["bf16_tflops"] <= 20 * g["fp32_tflops"] for g in data.gpus()
               if g["fp32_tflops"])


# ------------------------------------------------------------------ formulas, hand-computed

def term(e, name):
    return next(t.bytes for t in e.terms if t.name == name)


def test_7b_weights_in_bf16_is_14_gb():
    e = estimate(Workload(params=7e9, precision="bf16", task="inference", layers=32, hidden=4096))
    assert term(e, "weights") == 14e9


def test_7b_full_training_mixed_precision_adam():
    e = estimate(Workload(params=7e9, precision="bf16", task="full"))
    assert term(e, "weights + grads + Adam") == 7e9 * (2 + 2 + 4 + 4 + 4)
    assert 112e9 <= e.total_bytes <= 126e9
    with_act = estimate(Workload.from_preset("llama-2-7b", params=7e9, task="full", seq=2048, batch=1))
    assert term(with_act, "activations") == 2 * 2048 * 1 * 4096 * 32
    assert 112e9 <= with_act.total_bytes <= 126e9


def test_llama2_7b_kv_cache_4096_tokens_is_2_gib():
    e = estimate(Workload.from_preset("llama-2-7b", precision="fp16", seq=4096, batch=1))
    assert term(e, "KV cache") == 2 * 32 * 32 * 128 * 4096 * 2 == 2 * 2**30


def test_grouped_query_attention_shrinks_the_kv_cache():
    e = estimate(Workload.from_preset("llama-3-8b", precision="bf16", seq=8192, batch=4))
    assert term(e, "KV cache") == 2 * 32 * 8 * 128 * 8192 * 4 * 2


def test_lora_counts_frozen_base_and_small_adapter():
    e = estimate(Workload.from_preset("llama-2-7b", task="lora", precision="bf16", lora_rank=16))
    assert term(e, "frozen base weights") == 6.74e9 * 2
    assert term(e, "LoRA adapters + grads + Adam") == 2 * 32 * 16 * (4096 + 4096) * 16
    assert e.total_bytes < estimate(Workload.from_preset("llama-2-7b", task="full")).total_bytes / 4


def test_activations_without_checkpointing_follow_korthikanti():
    got = advisor.activation_bytes(seq=2048, batch=1, hidden=4096, layers=32, heads=32, checkpointing=False)
    assert got == 2048 * 4096 * 32 * (34 + 5 * 32 * 2048 / 4096)


def test_rules_of_thumb_within_ten_percent():
    cases = render.rule_cases()
    assert len(cases) >= 3
    for label, got, rule, _text, url in cases:
        assert abs(got - rule) / rule <= 0.10, label
        assert url.startswith("https://")


@pytest.mark.parametrize("kw", [dict(params=-1), dict(params=1e15), dict(params=7e9, precision="fp12"),
                                dict(params=7e9, task="pretrain"), dict(params=7e9, seq=0, layers=2, hidden=64),
                                dict(params=7e9, task="inference")])
def test_bad_workloads_raise(kw):
    with pytest.raises(AdviceError):
        estimate(Workload(**kw))


# ------------------------------------------------------------------ fit and cost

def test_options_fit_sort_and_cost():
    e = estimate(Workload.from_preset("llama-2-7b", seq=4096))
    opts = advisor.options(e, flops=1e18, efficiency=0.5)
    aws = [o for o in opts if o.kind == "aws"]
    assert aws and all(o.memory_gb >= e.total_gb * advisor.HEADROOM for o in opts)
    prices = [o.price_per_hour for o in aws if o.price_per_hour]
    assert prices == sorted(prices)
    h100 = next(o for o in aws if o.name == "p5.4xlarge")
    assert h100.hours == pytest.approx(1e18 / (989.5e12 * 0.5) / 3600)
    assert h100.cost == pytest.approx(h100.hours * 6.88)
    big = estimate(Workload.from_preset("llama-3-70b", task="full"))
    gpus = [o for o in advisor.options(big) if o.kind == "gpu"]
    assert all(o.count <= advisor.MAX_GPUS for o in gpus) and all(o.memory_gb >= 80 for o in gpus)


def test_efficiency_defaults_then_reads_our_matmul_results(tmp_path):
    ratio, src = advisor.measured_efficiency("bf16", root=tmp_path)
    assert ratio == advisor.DEFAULT_EFFICIENCY and src.startswith("ASSUMPTION")
    folder = tmp_path / "nvidia-h200"
    folder.mkdir()
    (folder / "matmul.json").write_text(json.dumps({
        "machine": {"gpu": {"name": "NVIDIA H200"}},
        "gpu": {"n": 8192, "rows": [{"name": "torch bf16", "dtype": "bfloat16", "tflops": 791.6}]}}))
    ratio, src = advisor.measured_efficiency("bf16", root=tmp_path)
    assert ratio == pytest.approx(791.6 / 989.5) and src.startswith("measured")


# ------------------------------------------------------------------ CLI

def test_cli_happy_path():
    proc = advise("--model", "llama-2-7b", "--seq", "4096", "--flops", "1e18")
    assert proc.returncode == 0, proc.stderr
    assert "KV cache" in proc.stdout and "g6.xlarge" in proc.stdout and "of dense peak" in proc.stdout


def test_cli_json():
    proc = advise("--params", "7B", "--task", "full", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["total_gb"] == pytest.approx(112.0) and doc["efficiency_source"]


@pytest.mark.parametrize("args", [["--params", "-7e9", "--task", "full"], ["--params", "1e15", "--task", "full"],
                                  ["--params", "7B", "--precision", "fp12"], ["--params", "7B", "--task", "pretrain"],
                                  ["--model", "llama-2-7b", "--seq", "0"], ["--model", "llama-2-7b", "--batch", "-1"],
                                  ["--model", "gpt-9"], ["--params", "seven"], ["--model", "llama-2-7b", "--flops", "-1"],
                                  []])
def test_cli_bad_input_one_line_exit_2(args):
    assert_one_line_error(advise(*args))


# ------------------------------------------------------------------ renderers

@pytest.mark.parametrize("view", ["aws-training", "aws-inference", "aws-graphics", "gpus", "tiers", "as-of",
                                  "rules", "advise-example"])
def test_data_renderers_render(view):
    md = pages.render_data("cloud", view)
    assert "|" in md


def test_tables_carry_data_not_typed_numbers():
    md = pages.render_data("cloud", "aws-training")
    p5 = next(r for r in data.instances() if r["name"] == "p5.48xlarge")
    assert f"{p5['price_per_hour']:,.2f}" in md and "p6-b200.48xlarge" in md
    assert "Data as of " + data.data_as_of() in pages.render_data("cloud", "as-of")
    assert "llama-2-7b" in pages.render_data("cloud", "advise-example")
