"""Cloud and buying chapter: data schema, memory formulas against hand-computed cases, advisor CLI."""

import copy
import datetime as dt
import json
import logging
import re
import subprocess
import sys

import pytest

from gpukit import pages
from gpukit import catalogue as data
from gpukit.cloud import advisor, machines, models, views as render
from gpukit.cloud.advisor import AdviceError, Workload, estimate
from tests.helpers import ROOT, assert_one_line_error

FAMILIES = {"P6-B200", "P6-B300", "P6e-GB200", "P5", "P5e", "P5en", "P4d", "P4de", "G7e", "G7", "G6e", "G6",
            "G6f", "Gr6f", "Gr6", "G5", "G5g", "G4dn", "G4ad", "Inf1", "Inf2", "Trn1", "Trn1n", "Trn2", "Trn2 UltraServer",
            "Trn3", "P3dn", "DL2q"}
#: every on-demand price the AWS price-list snapshot (generated 2026-07-20, us-east-1) has for our rows
PRICE_LIST = {"g4ad.xlarge": 0.37853, "g4ad.16xlarge": 3.468, "g4dn.xlarge": 0.526, "g4dn.12xlarge": 3.912,
              "g5.xlarge": 1.006, "g5.12xlarge": 5.672, "g5.48xlarge": 16.288, "g5g.xlarge": 0.42,
              "g5g.16xlarge": 2.744, "g6e.48xlarge": 30.13118, "inf2.xlarge": 0.7582, "inf2.48xlarge": 12.98127,
              "p4d.24xlarge": 21.957642, "p5en.48xlarge": 63.296, "trn1.2xlarge": 1.34375, "trn1.32xlarge": 21.5,
              "g6f.large": 0.202, "g7e.48xlarge": 33.14432, "p6-b300.48xlarge": 142.416, "trn1n.32xlarge": 24.78,
              "gr6.4xlarge": 1.5392, "gr6.8xlarge": 2.4464, "inf1.xlarge": 0.228, "inf1.2xlarge": 0.362,
              "inf1.6xlarge": 1.18, "inf1.24xlarge": 4.721, "p3dn.24xlarge": 31.212}


#: a model described by its architecture, not a preset
CUSTOM = ["--params", "7e9", "--layers", "32", "--hidden", "4096", "--heads", "32"]


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


def test_every_price_the_price_list_has_is_filled_with_its_generation_date():
    rows = {r["name"]: r for r in data.instances()}
    for name, price in PRICE_LIST.items():
        assert rows[name]["price_per_hour"] == pytest.approx(price), name
        assert "karpenter-provider-aws" in rows[name]["price_source"] and rows[name]["price_date"] == "2026-07-20"
    assert data.prices_generated() == "2026-07-20"
    for r in rows.values():
        if r["price_per_hour"] is None:  # only rows the price list has no on-demand price for
            assert "no on-demand price" in r["note"] or "no Trn3 price" in r["note"], r["name"]


def test_every_gpu_an_instance_names_has_an_entry():
    for r in data.instances():
        assert r["gpu"] and data.gpu(r["gpu"]) is not None, r["name"]
        assert r["stack"] == data.gpu(r["gpu"])["stack"] or r["stack"] == "none", r["name"]


def test_newest_cards_and_filled_gaps():
    for key in ("a10g", "rtx-5060-ti-16", "rtx-5070-ti", "rtx-5080", "rtx-5090", "h100-pcie", "b300", "mi300x",
                "dgx-spark", "rtx-4090-used", "radeon-rx-7900-xtx", "radeon-pro-w7800", "inferentia", "v100-32"):
        assert data.gpu(key), key
    b200 = data.gpu("b200")
    assert b200["bandwidth_gbs"] and b200["bf16_tflops"] and b200["tf32_tflops"] and b200["power_w"]
    assert {c["field"] for c in b200["conflicts"]} >= {"memory_gib"}  # 180 vs 192 GB, both kept with sources
    assert data.gpu("rtx-4090")["bf16_tflops"] == 165.2 and data.gpu("rtx-4090")["tf32_tflops"] == 82.6
    trn2 = next(r for r in data.instances() if r["name"] == "trn2.48xlarge")
    assert trn2["accelerator_memory_gib"] == 16 * 96 and trn2["network"]
    assert data.gpu("mi300x")["stack"] == "rocm" and "CUDA" in data.gpu("mi300x")["note"]


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
    ("vcpus", -4, "positive"), ("price_per_hour", 0, "positive"), ("category", "mining", "category"),
    ("stack", "opencl", "stack"), ("price_date", None, "price_date"), ("price_date", "July", "price_date")])
def test_schema_rejects_bad_instance_rows(field, value, message):
    doc = copy.deepcopy(data.instances_doc())
    doc["instances"][0][field] = value
    problems = data.validate_instances(doc)
    assert any(message in p for p in problems), problems


def test_schema_rejects_missing_number_and_unexplained_null():
    doc = copy.deepcopy(data.gpus_doc())
    del doc["gpus"][0]["memory_gib"]
    doc["gpus"][1]["bandwidth_gbs"] = None
    doc["gpus"][1]["note"] = ""
    problems = data.validate_gpus(doc)
    assert any("missing memory_gib" in p for p in problems)
    assert any("null without a note" in p for p in problems)


def test_sparse_numbers_are_not_stored_as_dense():
    h100 = data.gpu("h100-sxm")
    assert h100["bf16_tflops"] < 1000 and "sparsity" in h100["note"]
    # a sparse figure stored as dense would double the tensor/FP32 ratio; data-centre Blackwell parts have a
    # higher dense ratio (about 28-30) than anything before them, so they get their own bound
    blackwell = {"b200", "b300", "gb200"}
    assert all(g["bf16_tflops"] is None or g["bf16_tflops"] <= 20 * g["fp32_tflops"] for g in data.gpus()
               if g["fp32_tflops"] and g["key"] not in blackwell)
    assert all(data.gpu(k)["bf16_tflops"] <= 32 * data.gpu(k)["fp32_tflops"] for k in blackwell)


# ------------------------------------------------------------------ formulas, hand-computed

def term(e, name):
    return next(t.bytes for t in e.terms if t.name == name)


def test_7b_weights_in_bf16_is_14_gb():
    e = estimate(Workload(params=7e9, precision="bf16", task="inference", layers=32, hidden=4096))
    assert term(e, "weights") == 14e9


def test_7b_full_training_mixed_precision_adam():
    e = estimate(Workload(params=7e9, precision="bf16", task="full"))
    assert term(e, "weights + grads + Adam") == 7e9 * (2 + 4 + 4 + 4 + 4)  # fp32 gradients
    assert estimate(Workload(params=7e9, precision="fp32", task="full")).total_bytes == 7e9 * 16
    with_act = estimate(Workload.from_preset("llama-2-7b", params=7e9, task="full", seq=2048, batch=1))
    assert term(with_act, "activations") == 2 * 2048 * 1 * 4096 * 32
    assert term(with_act, "one layer recomputed") == 34 * 2048 * 4096
    assert term(with_act, "logits") == 2048 * 32000 * 4


def test_llama_3_8b_training_at_8k_tokens_batch_8_is_in_the_realistic_range():
    """Weights and Adam with fp32 gradients, checkpoints, one layer recomputed and fp32 logits:
    188-204 GB, where 16 bytes a parameter and the checkpoints alone gave 145.7 GB."""
    e = estimate(Workload.from_preset("llama-3-8b", task="full", seq=8192, batch=8))
    assert {t.name for t in e.terms} == {"weights + grads + Adam", "activations", "one layer recomputed",
                                         "logits"}
    assert 188e9 <= e.total_bytes <= 205e9
    assert term(e, "logits") == 8192 * 8 * 128256 * 4
    no_ckpt = estimate(Workload.from_preset("llama-3-8b", task="full", seq=8192, batch=8, checkpointing=False))
    assert term(no_ckpt, "activations") == 34 * 8192 * 8 * 4096 * 32
    assert "one layer recomputed" not in {t.name for t in no_ckpt.terms}


def test_llama2_7b_kv_cache_4096_tokens_is_2_gib():
    e = estimate(Workload.from_preset("llama-2-7b", precision="fp16", seq=4096, batch=1))
    assert term(e, "KV cache") == 2 * 32 * 32 * 128 * 4096 * 2 == 2 * 2**30


def test_grouped_query_attention_shrinks_the_kv_cache():
    e = estimate(Workload.from_preset("llama-3-8b", precision="bf16", seq=8192, batch=4))
    assert term(e, "KV cache") == 2 * 32 * 8 * 128 * 8192 * 4 * 2


def test_quantised_weights_keep_a_16_bit_kv_cache():
    """Llama-3.1-70B with int4 weights at a 128K context: the cache is 40 GiB, not a quarter of it."""
    e = estimate(Workload.from_preset("llama-3.1-70b", precision="int4", seq=131072))
    assert term(e, "KV cache") == 2 * 80 * 8 * 128 * 131072 * 2 == 40 * 2**30
    for precision in ("int8", "fp8", "int4", "bf16"):
        assert Workload.from_preset("llama-3-8b", precision=precision).kv_bytes == 2
    assert Workload.from_preset("llama-3-8b", precision="fp32").kv_bytes == 4
    fp8_cache = estimate(Workload.from_preset("llama-3.1-70b", precision="int4", seq=131072, kv_precision="fp8"))
    assert term(fp8_cache, "KV cache") == term(e, "KV cache") / 2


def test_the_p5_4xlarge_does_not_hold_llama_3_1_70b_int4_at_128k():
    e = estimate(Workload.from_preset("llama-3.1-70b", precision="int4", seq=131072))
    opts, _ = machines.options(e, meas={})
    names = {o.name for o in opts}
    assert "p5.4xlarge" not in names and e.total_gib * advisor.HEADROOM > 80
    assert "p5.48xlarge" in names


def test_parameter_counts_from_configs_match_the_published_ones():
    for name, pub in models.PUBLISHED.items():
        total, active = models.count_params(models.PRESETS[name])
        assert total == pytest.approx(pub["total"], rel=0.005), name
        if "active" in pub:
            assert active == pytest.approx(pub["active"], rel=0.005), name
    w = Workload.from_preset("mixtral-8x7b")
    assert w.params > 3 * w.active_params and "active" in advisor.describe(w)


def test_lora_counts_frozen_base_and_small_adapter():
    e = estimate(Workload.from_preset("llama-2-7b", task="lora", precision="bf16", lora_rank=16))
    assert term(e, "frozen base weights") == models.count_params(models.PRESETS["llama-2-7b"])[0] * 2
    assert term(e, "LoRA adapters + grads + Adam") == 2 * 32 * 16 * (4096 + 4096) * 16
    assert e.total_bytes < estimate(Workload.from_preset("llama-2-7b", task="full")).total_bytes / 4


def test_activations_without_checkpointing_follow_korthikanti_with_fused_attention():
    got = advisor.activation_bytes(seq=2048, batch=1, hidden=4096, layers=32, heads=32, checkpointing=False)
    assert got == 2048 * 4096 * 32 * 34
    assert advisor.activation_bytes(2048, 1, 4096, 32, 32, False, act_bytes=4.0) == 2 * got


def test_rules_of_thumb_within_ten_percent():
    cases = render.rule_cases()
    assert len(cases) >= 3
    for label, got, rule, _text, url in cases:
        assert abs(got - rule) / rule <= 0.10, label
        assert url.startswith("https://")


@pytest.mark.parametrize("kw", [dict(params=-1), dict(params=1e15), dict(params=7e9, precision="fp12"),
                                dict(params=7e9, task="pretrain"), dict(params=7e9, seq=0, layers=2, hidden=64),
                                dict(params=7e9, task="inference"), dict(params=1e-3, task="full"),
                                dict(params=7e9, layers=32, hidden=4096, heads=32, kv_heads=3),
                                dict(params=7e9, layers=32, hidden=4096, heads=32, kv_heads=1000),
                                dict(params=7e9, layers=32, hidden=4096, kv_precision="int3")])
def test_bad_workloads_raise(kw):
    with pytest.raises(AdviceError):
        estimate(Workload(**kw))


def test_a_preset_refuses_another_models_parameter_count():
    with pytest.raises(AdviceError, match="does not match llama-3-8b"):
        Workload.from_preset("llama-3-8b", params=70e9)
    assert Workload.from_preset("llama-3-8b", params=8e9).params == 8e9  # rounding the count is fine


# ------------------------------------------------------------------ fit and cost

def test_options_fit_sort_and_training_cost():
    e = estimate(Workload.from_preset("llama-2-7b", task="lora", seq=4096))
    opts, _ = machines.options(e, flops=1e18, meas={})
    aws, unpriced = machines.ranked(opts, "aws")
    assert aws and all(o.memory_gib >= e.total_gib * advisor.HEADROOM for o in opts)
    assert [o.price_per_hour for o in aws] == sorted(o.price_per_hour for o in aws)
    h100 = next(o for o in aws if o.name == "p5.4xlarge")
    assert h100.hours == pytest.approx(1e18 / (989.5e12 * machines.DEFAULT_EFFICIENCY) / 3600)
    assert h100.cost == pytest.approx(h100.hours * 6.88)
    big = estimate(Workload.from_preset("llama-3-70b", task="full"))
    gpus = [o for o in machines.options(big, meas={})[0] if o.kind == "gpu"]
    assert all(o.count <= machines.MAX_GPUS for o in gpus) and all(o.memory_gib >= 80 for o in gpus)


def test_ranking_by_real_price_with_unpriced_rows_apart():
    e = estimate(Workload.from_preset("llama-3-70b", seq=4096))  # ~170 GB in bf16
    aws, unpriced = machines.ranked(machines.options(e, meas={})[0], "aws")
    names = [o.name for o in aws]
    # once the price list fills g5.48xlarge, p4d and g6e.48xlarge, they rank below p6-b200 ($113.93/h)
    for cheaper in ("g5.48xlarge", "g6e.48xlarge", "p4d.24xlarge"):
        if cheaper in names:
            assert names.index(cheaper) < names.index("p6-b200.48xlarge"), cheaper
    assert all(o.price_per_hour for o in aws) and unpriced and not any(o.price_per_hour for o in unpriced)
    assert "p5e.48xlarge" in {o.name for o in unpriced}


def test_ranking_without_any_prices_keeps_every_row_apart(monkeypatch):
    rows = [dict(r, price_per_hour=None) for r in data.instances()]
    monkeypatch.setattr(data, "instances", lambda: rows)
    e = estimate(Workload.from_preset("llama-2-7b"))
    aws, unpriced = machines.ranked(machines.options(e, meas={})[0], "aws")
    assert aws == [] and len(unpriced) > 5


def test_category_filter_offers_neuron_only_on_request_and_inferentia_only_for_inference():
    inf = estimate(Workload.from_preset("llama-2-7b"))
    full = estimate(Workload.from_preset("llama-2-7b", task="full"))
    names = lambda e, **kw: {o.name for o in machines.options(e, meas={}, **kw)[0]}  # noqa: E731
    assert not any(n.startswith(("inf2", "trn", "g4ad")) for n in names(inf) | names(full))
    assert "inf2.48xlarge" in names(inf, neuron=True) and "trn1.32xlarge" in names(inf, neuron=True)
    assert "inf2.48xlarge" not in names(full, neuron=True) and "trn1.32xlarge" in names(full, neuron=True)
    assert "AMD Instinct MI300X" not in names(inf) and "AMD Instinct MI300X" in names(inf, rocm=True)
    _, notes = machines.options(full, meas={})
    assert any("--neuron" in n for n in notes)


def test_decode_is_bandwidth_bound_and_prefill_compute_bound():
    w = Workload.from_preset("llama-3.1-8b", seq=8192)
    e = estimate(w)
    l4 = next(o for o in machines.options(e, meas={})[0] if o.name == "g6.xlarge")
    read = (w.params - 128256 * 4096) * 2 + 4096 * 2 + term(e, "KV cache")  # one embedding row
    assert l4.decode_tps == pytest.approx(300e9 / read)  # the memory roof: far below the compute roof
    assert l4.prefill_s == pytest.approx(2 * w.params * 8192 / (121e12 * machines.DEFAULT_EFFICIENCY))
    assert l4.usd_per_mtok == pytest.approx(0.8048 / 3600 / l4.decode_tps * 1e6)
    frac = next(o for o in machines.options(estimate(Workload(params=1e9, layers=8, hidden=512)), meas={})[0]
                if o.name == "g6f.large")
    assert frac.decode_tps is None and "fractional" in frac.note


def test_measured_efficiency_applies_only_to_the_gpu_it_was_measured_on(tmp_path):
    assert machines.measurements(tmp_path) == {}
    folder = tmp_path / "nvidia-h200"
    folder.mkdir()
    (folder / "matmul.json").write_text(json.dumps({
        "machine": {"gpu": {"name": "NVIDIA H200"}},
        "gpu": {"n": 8192, "copy_ceiling_gbs": 4200.0,
                "tensor_cores": [{"name": "torch bf16", "dtype": "bfloat16", "tflops": 791.6}]}}))
    meas = machines.measurements(tmp_path)
    assert set(meas) == {"h200-sxm"}
    compute, bandwidth, measured = machines.efficiencies(data.gpu("h200-sxm"), "bf16", meas)
    assert compute == pytest.approx(791.6 / 989.5) and bandwidth == pytest.approx(4200 / 4800) and measured
    assert machines.efficiencies(data.gpu("h100-sxm"), "bf16", meas) == (machines.DEFAULT_EFFICIENCY, 1.0, False)
    assert "81% of dense peak" in machines.describe_measurements("bf16", meas)[0] or \
        "80% of dense peak" in machines.describe_measurements("bf16", meas)[0]


# ------------------------------------------------------------------ freshness

def test_staleness_warning_after_six_months():
    gen = dt.date.fromisoformat(data.prices_generated())
    assert data.staleness_warning(today=gen + dt.timedelta(days=90)) is None
    assert data.staleness_warning(today=dt.date(2027, 1, 20), generated="2026-07-20") is None
    message = data.staleness_warning(today=dt.date(2027, 1, 21), generated="2026-07-20")
    assert message and "2026-07-20" in message and "6 months" in message
    assert data.price_age_days(today=gen + dt.timedelta(days=133)) == 133


def test_warn_if_stale_logs_outside_mkdocs_so_a_strict_build_goes_on(caplog):
    with caplog.at_level(logging.WARNING):
        data.warn_if_stale(config={}, today=dt.date(2030, 1, 1))  # the MkDocs on_pre_build signature
    [record] = [r for r in caplog.records if "price list" in r.getMessage()]
    assert record.levelno == logging.WARNING and not record.name.startswith("mkdocs")
    caplog.clear()
    data.warn_if_stale(today=dt.date.fromisoformat(data.prices_generated()))
    assert not caplog.records


# ------------------------------------------------------------------ CLI

def test_cli_happy_path():
    proc = advise("--model", "llama-2-7b", "--seq", "4096")
    assert proc.returncode == 0, proc.stderr
    assert "KV cache" in proc.stdout and "g6.xlarge" in proc.stdout and "decode tok/s" in proc.stdout
    assert "price list generated 2026-07-20" in proc.stdout


def test_cli_training_time_and_cost():
    proc = advise("--model", "llama-3.1-8b", "--task", "lora", "--flops", "1e18")
    assert proc.returncode == 0, proc.stderr
    assert "hours" in proc.stdout and "of dense peak" in proc.stdout


def test_cli_json():
    proc = advise("--params", "7B", "--task", "full", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["total_gib"] == pytest.approx(7e9 * 18 / 2**30) and doc["default_efficiency"] and doc["prices_generated"]
    assert all("priced" in o for o in doc["options"])


@pytest.mark.parametrize("args", [["--params", "-7e9", "--task", "full"], ["--params", "1e15", "--task", "full"],
                                  ["--params", "7B", "--precision", "fp12"], ["--params", "7B", "--task", "pretrain"],
                                  ["--model", "llama-2-7b", "--seq", "0"], ["--model", "llama-2-7b", "--batch", "-1"],
                                  ["--model", "gpt-9"], ["--params", "seven"], ["--model", "llama-2-7b", "--flops", "-1"],
                                  [], ["--params", "1e-3", "--task", "full"],
                                  ["--model", "llama-2-7b", "--task", "full", "--flops", "1e60"],
                                  CUSTOM + ["--kv-heads", "3"], CUSTOM + ["--kv-heads", "1000"],
                                  ["--model", "llama-3-8b", "--params", "70B"], ["--model", "llama-2-7b", "--flops", "1e18"],
                                  ["--model", "llama-2-7b", "--kv-precision", "int3"]])
def test_cli_bad_input_one_line_exit_2(args):
    assert_one_line_error(advise(*args))


@pytest.mark.parametrize("args, says", [
    (["--params", "-7e9", "--task", "full"], "positive"), (["--params", "1e-3", "--task", "full"], "not billions"),
    (["--model", "llama-2-7b", "--task", "full", "--flops", "1e60"], "beyond any training run"),
    (CUSTOM + ["--kv-heads", "3"], "kv-heads must divide heads"),
    (CUSTOM + ["--kv-heads", "1000"], "more than the 32 attention heads"),
    (["--model", "llama-3-8b", "--params", "70B"], "does not match llama-3-8b")])
def test_cli_bad_input_says_what_is_wrong(args, says):
    assert says in assert_one_line_error(advise(*args))


def test_advise_help_stays_fast():
    code = ("import sys, time; t = time.perf_counter(); from gpukit import cli\n"
            "try: cli.main(['advise', '--help'])\nexcept SystemExit: pass\n"
            "print(time.perf_counter() - t, sorted(m for m in sys.modules if m.split('.')[0] in "
            "('numba', 'cupy', 'torch', 'yaml', 'matplotlib')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    seconds, heavy = proc.stdout.strip().splitlines()[-1].split(" ", 1)
    assert heavy == "[]" and float(seconds) < 2.0, proc.stdout


# ------------------------------------------------------------------ renderers

@pytest.mark.parametrize("view", ["aws-training", "aws-inference", "aws-graphics", "gpus", "tiers", "as-of",
                                  "rules", "advise-example", "advise-kv-example", "fp64", "models", "assumptions"])
def test_data_renderers_render(view):
    md = pages.render_data("cloud", view)
    assert "|" in md


def test_tables_carry_data_not_typed_numbers():
    md = pages.render_data("cloud", "aws-training")
    p5 = next(r for r in data.instances() if r["name"] == "p5.48xlarge")
    assert f"{p5['price_per_hour']:,.2f}" in md and "p6-b200.48xlarge" in md
    as_of = pages.render_data("cloud", "as-of")
    assert data.prices_generated() in as_of and data.price_age_text() in as_of
    assert "llama-3.1-8b" in pages.render_data("cloud", "advise-example")
    kv = "KV cache = 2 x 80 layers x 8 kv_heads x 128 head_dim x 131072 seq x 1 batch x 2 B = 40.00 GiB"
    assert kv in " ".join(pages.render_data("cloud", "advise-kv-example").split())   # wrapped to the page


def test_tiers_agree_with_the_advisor():
    """The page's buying tiers say what fits by asking the advisor, so they cannot contradict it."""
    name, need = render.largest_model(16, "bf16")
    assert need <= 16 and models.count_params(models.PRESETS[name])[0] < 8e9
    assert render.largest_model(8, "bf16") is None
    name, need = render.largest_model(24, "bf16")
    assert need <= 24 and models.count_params(models.PRESETS[name])[0] < 13e9


def test_page_prose_types_no_numbers():
    """Numbers in docs/cloud.md come from views, code, formulas, sources or links, not typed prose."""
    text = (ROOT / "docs" / "cloud.md").read_text()
    text = re.sub(r"```.*?```", "", text, flags=re.S)              # commands and code
    text = re.sub(r"`[^`]*`", "", text)                            # inline code
    text = re.sub(r"<[^>]*>", "", text)                            # HTML tags (a box's markup)
    text = re.sub(r"\[[^\]]*\]\([^)]*\)", "", text)                # links (cited facts)
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("|"))  # the formula table
    text = re.sub(r"\b(?:GeForce RTX|RTX(?: PRO)?|Llama) \d[\w.]*(?: \d\w*)?", "", text)    # product names
    text = re.sub(r"\b(FP|BF|TF|fp|bf|int|H|A|B|L|T|G|Gr|P|V|Trn|Inf|Inferentia|MI|GB|EC)\d+\w*", "", text)  # names, not numbers
    text = re.sub(r"\b\d+[- ]bits?\b", "", text)                    # precisions (16 bits, 8-bit)
    text = re.sub(r"(?m)^\d+\. ", "", text)                           # numbered steps
    assert not re.findall(r"\d", text), re.findall(r".{30}\d.{30}", text)


# ------------------------------------------------------------------ bad input, every claim true

@pytest.mark.parametrize("args, says", [
    (["--model", "llama-3-8b", "--seq", "131072"], "reads at most 8,192 tokens"),
    (["--model", "llama-3-8b", "--seq", "99999999999"], "context window"),
    (CUSTOM + ["--seq", "99999999999"], "is more than 10,000,000"),
    (["--model", "llama-3-8b", "--batch", "100000000000000000000"], "batch 100,000,000,000,000,000,000 is more"),
    (["--model", "llama-3-8b", "--task", "lora", "--lora-rank", "100000000"], "lora-rank"),
    (["--model", "llama-3-8b", "--task", "lora", "--lora-rank", "8192"], "more than the hidden size"),
    (["--model", "llama-3-8b", "--task", "full", "--kv-precision", "int8"], "inference only"),
    (["--model", "llama-3-8b", "--task", "inference", "--no-checkpointing"], "training setting"),
    (["--model", "llama-3-8b", "--layers", "40", "--hidden", "5120"], "drop --model"),
    (["--params", "1e400"], "beyond any model"),
    (["--params", "-inf"], "cannot read a parameter count from '-inf'"),
    (["--params", "7e9", "--layers", "100", "--hidden", "100000"], "give --heads"),
    (["--params", "7e9", "--layers", "100000", "--hidden", "100000"], "layers 100,000 is more than"),
    (["--params", "7e6", "--layers", "80", "--hidden", "8192"], "cannot fill 80 layers"),
    (["--model", "llama-2-7b", "--task", "full", "--flops", "1e400"], "beyond any training run")])
def test_cli_refuses_what_it_cannot_estimate(args, says):
    message = assert_one_line_error(advise(*args))
    assert says in message and "781" not in message


def test_cli_quotes_a_long_name_short_and_reads_names_in_any_case():
    message = assert_one_line_error(advise("--model", "x" * 100_000))
    assert len(message) < 500 and "100,000 characters" in message
    proc = advise("--model", "LLAMA-3.1-8B", "--precision", "BF16", "--task", "Inference", "--top", "1")
    assert proc.returncode == 0 and "Workload: llama-3.1-8b, bf16, inference" in proc.stdout


def test_cli_output_cut_short_by_head_ends_quietly():
    cmd = f"'{sys.executable}' -m gpukit.cloud.cli advise --model llama-3.1-8b --json | head -c 10"
    proc = subprocess.run(["bash", "-c", f"set -o pipefail; {cmd}"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert proc.stderr == "" and proc.returncode == 0 and len(proc.stdout) == 10


# ------------------------------------------------------------------ the advisor meets the measurement

P8 = models.count_params(models.PRESETS["llama-3.1-8b"])[0]
KV_TOKEN = 2 * 32 * 8 * 128 * 2           # bytes of K and V for one token of Llama 3.1 8B in 16 bits
EMB8 = 128256 * 4096                       # its embedding table, of which a decode step reads one row a sequence


def read8(batch):
    """Weight bytes one bf16 decode step of Llama 3.1 8B reads."""
    return (P8 - EMB8) * 2 + batch * 4096 * 2


def test_the_8b_preset_has_the_llama_3_1_shape_and_context():
    p = models.PRESETS["llama-3.1-8b"]
    assert (p.layers, p.hidden, p.heads, p.kv_heads, p.intermediate, p.vocab, p.context) == \
        (32, 4096, 32, 8, 14336, 128256, 131072)
    assert P8 == pytest.approx(8.03e9, rel=0.001)
    with pytest.raises(AdviceError, match="131,072"):
        advisor.inference_memory("llama-3.1-8b", 1, 131073)


def test_inference_memory_decode_step_by_hand():
    got = advisor.inference_memory("llama-3.1-8b", 8, 4096, "bf16", prefill=1)
    n = 8
    work = 2 * n * 4096 * 2 + max(3 * n * 14336 * 2, 8 * 128256 * (2 + 4))
    assert got == round(P8 * 2 + KV_TOKEN * 4096 * 8 + work)


def test_inference_memory_prefills_the_whole_context_by_default():
    got = advisor.inference_memory("llama-3.1-8b", 2, 1024)
    n = 2 * 1024
    work = 2 * n * 4096 * 2 + max(3 * n * 14336 * 2, 2 * 128256 * 6)
    assert got == round(P8 * 2 + KV_TOKEN * 1024 * 2 + work)
    every = advisor.inference_memory("llama-3.1-8b", 2, 1024, all_logits=True)
    assert every - got == n * 128256 * 6 - 3 * n * 14336 * 2


def test_weight_only_quantisation_keeps_the_embedding_in_16_bits():
    emb = 128256 * 4096
    lin = P8 - emb
    kv_and_work = advisor.inference_memory("llama-3.1-8b", 1, 2048, "bf16", prefill=1) - round(P8 * 2)
    int8 = advisor.inference_memory("llama-3.1-8b", 1, 2048, "int8", prefill=1)
    int4 = advisor.inference_memory("llama-3.1-8b", 1, 2048, "int4", prefill=1)
    assert int8 == round(lin + 2 * (emb + lin / 4096) + kv_and_work)
    assert int4 == round(lin / 2 + 2 * (emb + lin / 128) + kv_and_work)
    with pytest.raises(AdviceError, match="precision"):
        advisor.inference_memory("llama-3.1-8b", 1, 2048, "int3")


def _record(root, efficiency=0.9, rows=None, copy=4200.0):
    folder = root / "nvidia-h200"
    folder.mkdir(exist_ok=True)
    (folder / "matmul.json").write_text(json.dumps({
        "machine": {"gpu": {"name": "NVIDIA H200"}},
        "gpu": {"copy_ceiling_gbs": copy,
                "tensor_cores": [{"name": "torch bf16", "dtype": "bfloat16", "tflops": 791.6}]}}))
    rows = rows if rows is not None else [
        {"model": "llama-3.1-8b", "batch": 1, "context": 2048, "precision": "bf16",
         "measured_tokens_per_s": 230.5, "measured_peak_bytes": 16_500_000_000,
         "advise_tokens_per_s": None, "advise_memory_bytes": None},
        {"model": "llama-3.1-8b", "batch": 8, "context": 4096, "precision": "bf16",
         "measured_tokens_per_s": 1666.0, "measured_peak_bytes": 21_000_000_000,
         "advise_tokens_per_s": 1700.0, "advise_memory_bytes": 20_000_000_000},
        {"model": "llama-3.1-8b", "batch": "eight", "context": 4096, "precision": "bf16"}]
    (folder / "llm_inference.json").write_text(json.dumps({
        "benchmark": "llm_inference", "machine": {"gpu": {"name": "NVIDIA H200"}},
        "gpu": {"decode_efficiency": efficiency, "advisor_check": rows}}))
    return root


def test_decode_speed_without_a_record_is_the_peak_bandwidth_roof(tmp_path):
    bw = data.gpu("h100-sxm")["bandwidth_gbs"]
    got = advisor.decode_tokens_per_s("llama-3.1-8b", "h100-sxm", 4, 2048, root=tmp_path)
    assert got == pytest.approx(4 * bw * 1e9 / (read8(4) + KV_TOKEN * 2048 * 4))
    half = advisor.decode_tokens_per_s("llama-3.1-8b", "h100-sxm", 4, 2048, efficiency=0.5, root=tmp_path)
    assert half == pytest.approx(got / 2)
    mine = advisor.decode_tokens_per_s("llama-3.1-8b", "h100-sxm", 4, 2048, efficiency=0.5,
                                       bandwidth_gbs=3000.0, root=tmp_path)
    assert mine == pytest.approx(4 * 3000e9 * 0.5 / (read8(4) + KV_TOKEN * 2048 * 4))


def test_decode_speed_meets_the_compute_roof_at_a_large_batch(tmp_path):
    g = data.gpu("h100-sxm")
    batch, context = 16384, 16
    got = advisor.decode_tokens_per_s("llama-3.1-8b", "h100-sxm", batch, context, root=tmp_path)
    flops = 2 * P8 * batch + 4 * 32 * 32 * 128 * context * batch
    assert got == pytest.approx(batch / (flops / (g["bf16_tflops"] * 1e12 * machines.DEFAULT_EFFICIENCY)))
    assert got < batch * g["bandwidth_gbs"] * 1e9 / (read8(batch) + KV_TOKEN * context * batch)


def test_decode_speed_uses_the_recorded_efficiency_on_that_gpu_only(tmp_path):
    root = _record(tmp_path)
    read = read8(8) + KV_TOKEN * 4096 * 8
    for name in ("h200-sxm", "NVIDIA H200", "nvidia h200"):
        got = advisor.decode_tokens_per_s("llama-3.1-8b", name, 8, 4096, root=root)
        assert got == pytest.approx(8 * 4200e9 * 0.9 / read)
    other = advisor.decode_tokens_per_s("llama-3.1-8b", "h100-sxm", 8, 4096, root=root)
    assert other == pytest.approx(8 * data.gpu("h100-sxm")["bandwidth_gbs"] * 1e9 / read)
    meas = machines.measurements(root)
    assert meas["h200-sxm"].decode_efficiency == 0.9 and len(meas["h200-sxm"].advisor_check) == 2
    _, bandwidth, measured = machines.efficiencies(data.gpu("h200-sxm"), "bf16", meas)
    assert bandwidth == pytest.approx(4200 / 4800 * 0.9) and measured
    with pytest.raises(AdviceError, match="unknown GPU"):
        advisor.decode_tokens_per_s("llama-3.1-8b", "Voodoo 2", 1, 128, root=root)
    with pytest.raises(AdviceError, match="efficiency"):
        advisor.decode_tokens_per_s("llama-3.1-8b", "h200-sxm", 1, 128, efficiency=-1, root=root)


def test_decode_speed_uses_the_share_measured_for_that_precision_and_batch(tmp_path):
    root = _record(tmp_path)
    rows = [{"variant": "compile", "precision": p, "batch": b, "share_of_copy": s, "context": 1024,
             "tokens_per_s": 1.0} for p, b, s in (("bf16", 1, 0.8), ("bf16", 16, 0.6),
                                                   ("int4", 1, 0.25))]
    rows.append({"variant": "graph", "precision": "bf16", "batch": 4, "share_of_copy": 0.1})
    (root / "nvidia-h200" / "llm_inference.json").write_text(json.dumps({
        "machine": {"gpu": {"name": "NVIDIA H200"}},
        "gpu": {"best_variant": "compile", "decode": rows[:2] + rows[3:], "quant": rows[2:3],
                "ceilings": {"copy_gbs": 4000.0}, "decode_efficiency": 0.8}}))
    m = machines.measurements(root)["h200-sxm"]
    assert m.decode_shares == {"bf16": {1: 0.8, 16: 0.6}, "int4": {1: 0.25}}   # graph row: not the best
    assert m.decode_copy_gbs == 4000.0
    read = read8(4) + KV_TOKEN * 2048 * 4
    got = advisor.decode_tokens_per_s("llama-3.1-8b", "h200-sxm", 4, 2048, root=root)
    assert got == pytest.approx(4 * 4000e9 * 0.7 / read)       # halfway from batch 1 to 16
    int4 = advisor.decode_tokens_per_s("llama-3.1-8b", "h200-sxm", 1, 2048, "int4", root=root)
    w = Workload.from_preset("llama-3.1-8b", precision="int4", task="inference", seq=2048, batch=1)
    assert int4 == pytest.approx(4000e9 * 0.25 / advisor.decode_step(w)[0])
    _, bw16, _ = machines.efficiencies(data.gpu("h200-sxm"), "bf16", {"h200-sxm": m}, 16)
    _, bw4, _ = machines.efficiencies(data.gpu("h200-sxm"), "int4", {"h200-sxm": m}, 1)
    peak = data.gpu("h200-sxm")["bandwidth_gbs"]
    assert bw16 == pytest.approx(4000 / peak * 0.6) and bw4 == pytest.approx(4000 / peak * 0.25)


def test_a_malformed_record_is_ignored(tmp_path):
    root = _record(tmp_path, efficiency="fast", rows=[{"model": "llama-3.1-8b"}])
    m = machines.measurements(root)["h200-sxm"]
    assert m.decode_efficiency is None and m.advisor_check == [] and m.copy_gbs == 4200.0
    (root / "nvidia-h200" / "llm_inference.json").write_text("{not json")
    assert machines.measurements(root)["h200-sxm"].decode_efficiency is None


def test_advise_shows_the_measurement_next_to_its_estimate(tmp_path):
    from gpukit.cloud import cli as advise_cli
    root = _record(tmp_path)
    w = Workload.from_preset("llama-3.1-8b", seq=4096, batch=8)
    text, doc = advise_cli.report(w, root=root)
    [row] = [c for c in doc["measured_checks"] if c["batch"] == 8]
    assert row["measured_tokens_per_s"] == 1666.0 and row["measured_peak_bytes"] == 21_000_000_000
    assert row["estimate_tokens_per_s"] == pytest.approx(
        advisor.decode_tokens_per_s("llama-3.1-8b", "h200-sxm", 8, 4096, root=root))
    assert row["estimate_memory_bytes"] == advisor.inference_memory("llama-3.1-8b", 8, 4096, prefill=1)
    assert len(doc["measured_checks"]) == 2 and "Measured by this project" in text
    assert "1,666" in text and "nvidia-h200/llm_inference.json" in text
    assert "decode reads at 90% of the copy bandwidth" in text
    # the instance rows on that GPU use the measured efficiencies too
    p5en = next(o for o in doc["options"] if o["name"] == "p5en.48xlarge")
    assert p5en["measured"] and p5en["decode_tps"] == pytest.approx(
        8 * 8 * 4200e9 * 0.9 / (read8(8) + KV_TOKEN * 4096 * 8), rel=1e-6)
    int8 = Workload.from_preset("llama-3.1-8b", seq=4096, batch=8, precision="int8")
    assert advise_cli.report(int8, root=root)[1]["measured_checks"] == []


def test_advise_without_a_record_is_unchanged(tmp_path):
    from gpukit.cloud import cli as advise_cli
    w = Workload.from_preset("llama-3.1-8b", seq=4096, batch=8)
    text, doc = advise_cli.report(w, root=tmp_path)
    assert doc["measured_checks"] == [] and "Measured by this project" not in text
    p5en = next(o for o in doc["options"] if o["name"] == "p5en.48xlarge")
    assert not p5en["measured"] and p5en["decode_tps"] == pytest.approx(
        8 * 8 * 4800e9 / (read8(8) + KV_TOKEN * 4096 * 8), rel=1e-6)


# ------------------------------------------------------------------ sources and rows the data must keep true

WEAK = ("grokipedia", "aiwiki", "gpu.name", "techpowerup.com/forums", "ferreiradozezere")


def test_no_row_rests_on_a_weak_source():
    for g in data.gpus():
        urls = [g["source"], g.get("price_source") or "", *g.get("checked_against", [])]
        assert not any(w in u for u in urls for w in WEAK), g["key"]


def test_trn2_ultraserver_network_counts_its_four_instances():
    rows = {r["name"]: r for r in data.instances()}
    assert rows["u-trn2x64"]["network"].startswith("4 x 3200") and "12,800" in rows["u-trn2x64"]["network"]
    assert rows["trn2u.48xlarge"]["accelerator_count"] * 4 == rows["u-trn2x64"]["accelerator_count"]
    assert rows["trn2u.48xlarge"]["accelerator_memory_gib"] * 4 == rows["u-trn2x64"]["accelerator_memory_gib"]
    for name in ("gr6.4xlarge", "gr6.8xlarge", "inf1.xlarge", "inf1.24xlarge", "p3dn.24xlarge", "dl2q.24xlarge"):
        assert name in rows, name


def test_one_memory_unit_for_cards_and_instances():
    """An H100 is 80 GiB as a card and 80 GiB per GPU in an instance: the same number, one unit."""
    rows = {r["name"]: r for r in data.instances()}
    p5 = rows["p5.48xlarge"]
    assert p5["accelerator_memory_gib"] / p5["accelerator_count"] == data.gpu("h100-sxm")["memory_gib"] == 80
    opts, _ = machines.options(estimate(Workload.from_preset("llama-3.1-8b")), meas={})
    h100 = next(o for o in opts if o.name == "NVIDIA H100 SXM")
    assert h100.memory_gib == 80
    md = pages.render_data("cloud", "gpus")
    assert "memory GiB" in md and "memory GB " not in md


def test_qualcomm_and_inferentia_rows_are_not_offered_for_training():
    full = estimate(Workload.from_preset("llama-2-7b", task="full"))
    names = {o.name for o in machines.options(full, meas={}, neuron=True)[0]}
    assert not any(n.startswith(("inf1", "dl2q")) for n in names)
    assert machines.refusal("qualcomm", "qualcomm-ai100", "inference", True, True) == "qualcomm"


def test_empty_buying_tiers_are_said_to_be_empty():
    md = pages.render_data("cloud", "tiers")
    priced = {label for label, lo, hi in render.TIERS
              if any(g.get("price_usd") and lo <= g["price_usd"] < hi for g in data.gpus())}
    for label, *_ in render.TIERS:
        if label not in priced:
            assert f"{label}" in md.split("No card in the data")[1], label


def test_the_page_compares_a_recorded_run_with_the_advisor(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUKIT_RESULTS_DIR", str(tmp_path))
    assert "No language-model run has been recorded yet" in pages.render_data("cloud", "advisor-check")
    _record(tmp_path)
    md = pages.render_data("cloud", "advisor-check")
    rows = [ln for ln in md.splitlines() if ln.startswith("| NVIDIA H200")]
    assert len(rows) == 2 and "1,666" in md and "`llama-3.1-8b`" in md
    est = advisor.decode_tokens_per_s("llama-3.1-8b", "h200-sxm", 8, 4096, root=tmp_path)
    assert f"{(est - 1666.0) / 1666.0:+.1%}" in md


def test_a_record_may_say_how_it_prefilled(tmp_path):
    rows = [{"model": "LLAMA-3.1-8B", "batch": 4, "context": 4096, "precision": "bf16", "prefill": 512,
             "all_logits": True, "measured_tokens_per_s": 900.0, "measured_peak_bytes": 19_000_000_000,
             "advise_tokens_per_s": None, "advise_memory_bytes": None}]
    [row] = machines.compare_records(machines.measurements(_record(tmp_path, rows=rows)))
    assert row["estimate_memory_bytes"] == advisor.inference_memory("llama-3.1-8b", 4, 4096, prefill=512,
                                                                    all_logits=True)
    assert row["estimate_memory_bytes"] != advisor.inference_memory("llama-3.1-8b", 4, 4096, prefill=1)


def test_quantised_decode_reads_the_packed_weights_and_scales(tmp_path):
    lin = P8 - EMB8
    bw = data.gpu("h100-sxm")["bandwidth_gbs"] * 1e9
    int4 = advisor.decode_tokens_per_s("llama-3.1-8b", "h100-sxm", 1, 1024, "int4", root=tmp_path)
    assert int4 == pytest.approx(bw / (lin / 2 + 2 * lin / 128 + 4096 * 2 + KV_TOKEN * 1024))
    bf16 = advisor.decode_tokens_per_s("llama-3.1-8b", "h100-sxm", 1, 1024, root=tmp_path)
    assert 3.0 < int4 / bf16 < 4.0
