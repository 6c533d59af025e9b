"""The language-model chapter: the decoder against Hugging Face's Llama, the KV cache against
recomputation, the int8/int4 kernels (Triton's interpreter, in a child process), the command."""

from dataclasses import fields

import pytest
import torch

from gpukit import pages, proc
from gpukit.llm_inference import meta
from gpukit.llm_inference.model import (PRESETS, Config, ConfigError, KVCache, Layer, Model,
                                        generate, random_model, to_hf_state_dict)
from gpukit.llm_inference.quant import (dequantize_int4, dequantize_int8, quantize_int4,
                                        quantize_int8)
from tests.helpers import assert_one_line_error, run_cli, run_in_triton_interpreter

#: a small model that still has grouped heads (6 query heads share 2 key/value heads)
SMALL = Config(layers=2, hidden=96, heads=6, kv_heads=2, ffn=136, vocab=211)


def _model(cfg=SMALL, seed=3, context=40):
    return random_model(cfg, seed=seed, dtype=torch.float32, max_context=context)


def _tokens(cfg, shape, seed=5):
    return torch.randint(0, cfg.vocab, shape, generator=torch.Generator().manual_seed(seed))


@torch.inference_mode()
def test_logits_match_hugging_face_llama():
    transformers = pytest.importorskip("transformers")
    m = _model()
    hc = transformers.LlamaConfig(
        hidden_size=SMALL.hidden, intermediate_size=SMALL.ffn, num_hidden_layers=SMALL.layers,
        num_attention_heads=SMALL.heads, num_key_value_heads=SMALL.kv_heads,
        vocab_size=SMALL.vocab, rope_theta=SMALL.rope_theta, rms_norm_eps=SMALL.norm_eps,
        max_position_embeddings=40, tie_word_embeddings=False)
    hf = transformers.LlamaForCausalLM(hc).eval()
    missing, unexpected = hf.load_state_dict(to_hf_state_dict(m), strict=True)
    assert not missing and not unexpected
    tokens = _tokens(SMALL, (3, 17))
    ours = m(tokens, torch.arange(17), KVCache.empty(SMALL, 3, 40, "cpu", torch.float32),
             prefill=True)
    ref = hf(tokens).logits[:, -1]
    assert torch.isfinite(ours).all()
    err = (ours - ref).abs().max() / ref.abs().max()
    assert err < 1e-5, err


@torch.inference_mode()
@pytest.mark.parametrize("start, chunk", [(1, 1), (5, 1), (6, 4), (9, 2)])
def test_decoding_with_the_cache_equals_recomputing(start, chunk):
    m = _model()
    tokens = _tokens(SMALL, (2, 13))
    full = m(tokens, torch.arange(13), KVCache.empty(SMALL, 2, 40, "cpu", torch.float32),
             prefill=True)
    cache = KVCache.empty(SMALL, 2, 40, "cpu", torch.float32)
    cache.k.fill_(1e4)                # slots not yet written must carry no weight
    cache.v.fill_(1e4)
    m(tokens[:, :start], torch.arange(start), cache, prefill=True)
    t = start
    while t < 13:
        n = min(chunk, 13 - t)
        out = m(tokens[:, t:t + n], torch.arange(t, t + n), cache)
        t += n
    assert torch.isfinite(out).all()
    assert torch.allclose(out, full, rtol=1e-4, atol=1e-5), (out - full).abs().max()


@torch.inference_mode()
def test_greedy_generation_with_the_cache_equals_recomputing_each_token():
    m = _model()
    prompt = _tokens(SMALL, (2, 5))
    new = generate(m, prompt, 6)
    seq = prompt
    for i in range(6):
        t = seq.shape[1]
        logits = m(seq, torch.arange(t), KVCache.empty(SMALL, 2, 40, "cpu", torch.float32),
                   prefill=True)
        seq = torch.cat([seq, logits.argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(new, seq[:, 5:])


@torch.inference_mode()
def test_bf16_model_on_the_cpu_stays_close_to_float32():
    m32 = _model()
    # the same weights rounded to bf16 (torch versions differ in whether a seed draws the
    # same numbers in bf16 and float32, so the bf16 model is made from the float32 one)
    def bf16(t):
        return t.to(torch.bfloat16)
    m16 = Model(SMALL, bf16(m32.embed),
                [Layer(*(bf16(getattr(L, f.name)) for f in fields(Layer))) for L in m32.layers],
                bf16(m32.norm), bf16(m32.output), 40)
    assert m16.dtype == torch.bfloat16 and m16.layers[1].w13.dtype == torch.bfloat16
    tokens = _tokens(SMALL, (2, 9))
    a = m32(tokens, torch.arange(9), KVCache.empty(SMALL, 2, 40, "cpu", torch.float32), prefill=True)
    b = m16(tokens, torch.arange(9), KVCache.empty(SMALL, 2, 40, "cpu", torch.bfloat16),
            prefill=True).float()
    assert ((a - b).norm() / a.norm()) < 0.05


def test_the_8b_shape_has_the_advisors_parameter_count():
    from gpukit.cloud.models import PRESETS as ADVISOR, count_params
    cfg = PRESETS["llama-3.1-8b"]
    total, _ = count_params(ADVISOR[meta.ADVISOR_MODEL])
    assert cfg.params() == total
    assert 8.0e9 < cfg.params() < 8.1e9
    # a decode step reads everything but the embedding table (only its batch's rows)
    assert cfg.params() - cfg.read_params(1) == (cfg.vocab - 1) * cfg.hidden
    assert cfg.kv_bytes_per_token() == 2 * 32 * 8 * 128 * 2


@pytest.mark.parametrize("kw, words", [
    (dict(hidden=100, heads=3), "do not divide the hidden size"),
    (dict(heads=32, kv_heads=5), "key/value heads do not divide"),
    (dict(layers=0), "layers must be"),
    (dict(vocab=-3), "vocab must be"),
    (dict(hidden=96, heads=32, kv_heads=8), "even head size"),
    (dict(ffn=2.5), "ffn must be"),
])
def test_impossible_configurations_are_refused(kw, words):
    with pytest.raises(ConfigError, match=words):
        Config(**kw)


def test_context_beyond_the_cache_is_refused():
    m = _model(context=8)
    with pytest.raises(ConfigError, match="exceed the context"):
        generate(m, _tokens(SMALL, (1, 5)), 4)
    with pytest.raises(ConfigError):
        random_model(SMALL, max_context=0)


# ------------------------------------------------------------------ quantisation

@pytest.mark.parametrize("n, k", [(1, 128), (5, 256), (33, 384)])
def test_int8_and_int4_round_trip_within_half_a_step(n, k):
    w = torch.randn(n, k, generator=torch.Generator().manual_seed(n)) * 0.02
    w[0, 3] = 0.5                                    # an outlier sets its row's (group's) scale
    codes, scale = quantize_int8(w)
    assert codes.dtype == torch.uint8 and codes.shape == (n, k)
    step8 = scale[:, None]
    assert ((dequantize_int8(codes, scale) - w).abs() <= step8 / 2 + 1e-7).all()
    packed, s4 = quantize_int4(w)
    assert packed.shape == (n, k // 2) and s4.shape == (n, k // 128)
    back = dequantize_int4(packed, s4)
    step4 = s4.float().repeat_interleave(128, dim=1)
    # bf16 scales: the step itself is rounded, so allow the rounding of 7 steps too
    assert ((back - w).abs() <= step4 * (0.5 + 7 * 2**-8) + 1e-7).all()


def test_int4_packing_puts_the_two_halves_of_a_group_in_one_byte():
    w = torch.zeros(1, 128)
    w[0, 0], w[0, 64], w[0, 1] = 7.0, -8.0, 1.0       # scale = 8/7: codes 7, -7, 1
    packed, scale = quantize_int4(w)
    q = [round(v) for v in (torch.tensor([7.0, -8.0, 1.0]) / scale.float()[0, 0]).tolist()]
    assert packed[0, 0].item() == (q[0] + 8) | ((q[1] + 8) << 4)
    assert packed[0, 1].item() == (q[2] + 8) | (8 << 4)
    with pytest.raises(ValueError, match="multiple of the group"):
        quantize_int4(torch.zeros(2, 100))


def _kernels_in_interpreter(shapes):
    """In a child with TRITON_INTERPRET=1: the Triton kernels against dequantise-then-multiply."""
    import torch

    from gpukit.llm_inference.matvec import matvec
    from gpukit.llm_inference.model import Config, KVCache, random_model
    from gpukit.llm_inference.quant import Int4Linear, Int8Linear
    out = []
    for n, k, m in shapes:
        g = torch.Generator().manual_seed(n * k + m)
        w = (torch.randn(n, k, generator=g) * k ** -0.5).to(torch.bfloat16)
        x = torch.randn(m, k, generator=g).to(torch.bfloat16)
        for L in (Int8Linear(w), Int4Linear(w)) if k % 128 == 0 else (Int8Linear(w),):
            y = L(x)
            ref = x.float() @ L.dequantize().T
            out.append({"bits": L.bits, "shape": [n, k, m], "dtype": str(y.dtype),
                        "out_shape": list(y.shape), "finite": bool(torch.isfinite(y).all()),
                        "err": float((y.float() - ref).abs().max() / ref.abs().max())})
        # the bf16 matrix-vector kernel: one row through Triton, more rows through F.linear
        y = matvec(x[None], w)[0]
        ref = x.float() @ w.float().T
        if m > 1:
            assert torch.equal(y, torch.nn.functional.linear(x, w))
        out.append({"bits": 16, "shape": [n, k, m], "dtype": str(y.dtype),
                    "out_shape": list(y.shape), "finite": bool(torch.isfinite(y).all()),
                    "err": float((y.float() - ref).abs().max() / ref.abs().max())})
    # a whole batch-1 decode step with and without the kernel
    cfg = Config(layers=2, hidden=64, heads=4, kv_heads=2, ffn=96, vocab=100)
    model = random_model(cfg, seed=0, dtype=torch.bfloat16, max_context=24)
    cache = KVCache.empty(cfg, 1, 24, "cpu", torch.bfloat16, fill_seed=1)
    a = model(torch.tensor([[5]]), torch.tensor([20]), cache).float()
    model.fast_matvec = True
    b_ = model(torch.tensor([[5]]), torch.tensor([20]), cache)
    b = b_.float()
    out.append({"bits": "model", "shape": [cfg.vocab, cfg.hidden, 1], "dtype": str(b_.dtype),
                "out_shape": list(b_.shape), "finite": bool(torch.isfinite(b).all()),
                "err": float((a - b).abs().max() / a.abs().max())})
    return out


def test_triton_kernels_match_dequantised_products_in_the_interpreter():
    # rows not a multiple of the block, K of one group, 3 groups, several input rows
    # int8 only: an input size that is no multiple of the kernel's step (int4 refuses it);
    # bf16 (the matrix-vector kernel) on every shape, and a decode step with it
    shapes = [[7, 128, 1], [33, 384, 1], [20, 256, 3], [5, 2304, 2], [3, 200, 1]]
    got = run_in_triton_interpreter("tests.test_llm_inference:_kernels_in_interpreter", shapes)
    assert isinstance(got, list), got
    assert len(got) == 3 * len(shapes) - 1 + 1
    assert {r["bits"] for r in got} == {8, 4, 16, "model"}
    for r in got:
        n, k, m = r["shape"]
        assert r["finite"] and r["dtype"] == "torch.bfloat16" and r["out_shape"] == [m, n], r
        assert r["err"] < 1e-2, r                  # bf16 output: about 2^-8 relative


def _decode_attention_in_interpreter(cases):
    """In a child with TRITON_INTERPRET=1: the split-cache kernels against attention over
    the masked cache in float32, and a whole decode step with and without them."""
    import torch

    from gpukit.llm_inference.attention import decode_attention
    from gpukit.llm_inference.model import Config, KVCache, grouped_attention, random_model
    out = []
    for b, kv, g, size, pos in cases:
        gen = torch.Generator().manual_seed(size + pos)
        q = torch.randn(b, kv * g, 1, 16, generator=gen).to(torch.bfloat16)
        k, v = (torch.randn(b, kv, size, 16, generator=gen).to(torch.bfloat16) for _ in "kv")
        p = torch.tensor([pos])
        ref = grouped_attention(q.float(), k.float(), v.float(), torch.arange(size)[None] <= p)
        got = decode_attention(q, k, v, p).float()
        out.append({"case": [b, kv, g, size, pos], "finite": bool(torch.isfinite(got).all()),
                    "err": float((got - ref).abs().max() / ref.abs().max())})
    cfg = Config(layers=2, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=100)
    m = random_model(cfg, seed=0, dtype=torch.bfloat16, max_context=48)
    tokens = torch.tensor([[3], [7]])
    for p in (30, 0, 47):
        pos = torch.tensor([p])
        ref_cache = KVCache.empty(cfg, 2, 48, "cpu", torch.bfloat16, fill_seed=1)
        cache = KVCache.empty(cfg, 2, 48, "cpu", torch.bfloat16, fill_seed=1)
        m.fast_decode = False
        a = m(tokens, pos, ref_cache).float()
        m.fast_decode = True
        b_ = m(tokens, pos, cache).float()
        # the fused kernel wrote the new keys and values where the cache writes put them,
        # and nothing else
        slot = ((cache.k - ref_cache.k).abs().amax((0, 1, 2, 4)) + (cache.v - ref_cache.v).abs()
                .amax((0, 1, 2, 4))).float()
        out.append({"case": ["model", p], "finite": bool(torch.isfinite(b_).all()),
                    "err": float((a - b_).abs().max() / a.abs().max()),
                    "cache_err": float(slot[p] / ref_cache.k.abs().max()),
                    "others_equal": bool((slot[torch.arange(48) != p] == 0).all())})
    return out


def _rope_attention_in_interpreter(cases):
    """In a child with TRITON_INTERPRET=1: the fused rotation + cache write + attention kernel
    against the steps it replaces (split_rotate, index_copy, attention over the cache)."""
    import torch

    from gpukit.llm_inference.attention import rope_decode_attention
    from gpukit.llm_inference.model import (Config, grouped_attention, rope_tables,
                                            split_rotate)
    out = []
    for b, kv, g, size, pos in cases:
        cfg = Config(layers=1, hidden=kv * g * 16, heads=kv * g, kv_heads=kv, ffn=32, vocab=10)
        gen = torch.Generator().manual_seed(size + pos)
        qkv = torch.randn(b, 1, (kv * g + 2 * kv) * 16, generator=gen).to(torch.bfloat16)
        k, v = (torch.randn(b, kv, size, 16, generator=gen).to(torch.bfloat16) for _ in "kv")
        cos, sin = rope_tables(cfg, size + 5, "cpu", torch.bfloat16)
        p = torch.tensor([pos])
        # the reference rotates in float32; the kernel rounds to bf16 once, after rotating
        q1, k1, v1 = (y.transpose(1, 2) for y in split_rotate(qkv.float(), cos[p].float(),
                                                              sin[p].float(), kv * g, kv))
        rk, rv = k.float(), v.float()
        rk.index_copy_(2, p, k1)
        rv.index_copy_(2, p, v1)
        ref = grouped_attention(q1, rk, rv, torch.arange(size)[None] <= p)
        ref = ref.transpose(1, 2).reshape(b, 1, -1)
        got = rope_decode_attention(qkv, cos, sin, k, v, p, kv * g).float()
        out.append({"case": [b, kv, g, size, pos], "finite": bool(torch.isfinite(got).all()),
                    "shape": list(got.shape) == list(ref.shape),
                    "err": float((got - ref).abs().max() / ref.abs().max()),
                    "cache_err": float(max((k.float() - rk).abs().max(), (v.float() - rv).abs().max())
                                       / rk.abs().max())})
    return out


@pytest.mark.parametrize("what", ["short table", "wrong width", "two tokens"])
def test_fused_attention_refuses_inputs_it_would_read_out_of_bounds(what):
    from gpukit.llm_inference.attention import rope_decode_attention
    b, heads, kv, d, size = 2, 4, 2, 16, 40
    qkv = torch.zeros(b, 2 if what == "two tokens" else 1,
                      (heads + 2 * kv) * d + (d if what == "wrong width" else 0))
    k, v = torch.zeros(b, kv, size, d), torch.zeros(b, kv, size, d)
    cos = torch.zeros(size - 1 if what == "short table" else size, d)
    with pytest.raises(ValueError, match="rotary tables"):
        rope_decode_attention(qkv, cos, cos.clone(), k, v, torch.tensor([3]), heads)


def test_fused_rotation_cache_write_and_attention_match_in_the_interpreter():
    # the token in the first, a middle and the last chunk; one sequence and several; groups of
    # 1, 3 and 4 query heads; a cache cut into many chunks
    cases = [[1, 2, 4, 100, 99], [2, 2, 3, 64, 10], [3, 1, 1, 40, 0], [1, 4, 2, 200, 137],
             [2, 1, 4, 3000, 2500]]
    got = run_in_triton_interpreter("tests.test_llm_inference:_rope_attention_in_interpreter",
                                    cases)
    assert isinstance(got, list) and len(got) == len(cases), got
    for r in got:
        assert r["finite"] and r["shape"], r
        assert r["err"] < 2e-2, r             # q and k rounded to bf16 move the scores
        assert r["cache_err"] < 2 ** -8, r    # the rotated key: one bf16 rounding apart


def test_split_cache_decode_attention_matches_in_the_interpreter():
    # one chunk; chunks with the token in the middle; the first position; uneven groups;
    # more chunks than one combine step reads, the last ones wholly after the token
    cases = [[1, 2, 4, 100, 99], [2, 2, 3, 64, 10], [3, 1, 1, 40, 0], [1, 4, 2, 200, 137],
             [1, 1, 2, 3000, 2500]]
    got = run_in_triton_interpreter("tests.test_llm_inference:_decode_attention_in_interpreter",
                                    cases)
    assert isinstance(got, list) and len(got) == len(cases) + 3, got
    for r in got:
        assert r["finite"], r
        assert r["err"] < 2e-2, r             # bf16 inputs and output
        if r["case"][0] == "model":
            assert r["cache_err"] < 1e-2 and r["others_equal"], r


def test_kernels_are_sorted_by_what_they_do_in_a_step():
    from gpukit.llm_inference.measure import kernel_kind
    assert kernel_kind("bf16_matvec") == kernel_kind("nvjet_tst_64x8_64x16") == "matrix products"
    assert kernel_kind("int4_matvec_0d1d") == "matrix products"
    assert kernel_kind("partial") == kernel_kind("combine") == "attention"
    assert kernel_kind("void at::native::index_elementwise_kernel<128, 4, at::native::index_copy"
                       ) == "cache writes"
    assert kernel_kind("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0") == "other"


def test_crossover_batch_is_where_the_two_times_meet():
    b = meta.crossover_batch(16e9, 1e7, 16e9, 4e12, 8e14)
    t_mem = (16e9 + b * 1e7) / 4e12
    t_cmp = b * 16e9 / 8e14
    assert abs(t_mem - t_cmp) / t_cmp < 1e-9
    assert meta.crossover_batch(16e9, 1e9, 1e6, 4e12, 8e14) is None


def test_advisor_checks_store_measurements_only():
    from gpukit.llm_inference.measure import advisor_check
    prec, b = meta.ADVISOR_CONFIGS[0]
    rows = [{"precision": prec, "batch": b, "variant": v, "context": 1024, "tokens_per_s": t}
            for v, t in (("eager", 100.0), ("graph", 150.0))]
    memory = [{"precision": prec, "batch": b, "peak_bytes": 17_000_000_000}]
    (c,) = advisor_check(rows, memory, "graph")
    assert c == {"model": meta.ADVISOR_MODEL, "batch": b, "context": 1024, "precision": prec,
                 "measured_tokens_per_s": 150.0, "measured_peak_bytes": 17_000_000_000,
                 "variant": "graph"}
    assert advisor_check(rows, [], "graph") == []          # no memory measured: no check


# ------------------------------------------------------------------ the command

@pytest.mark.parametrize("args, words", [
    (["--hidden", "100", "--heads", "3"], "do not divide the hidden size"),
    (["--kv-heads", "5"], "do not divide 32 heads"),
    (["--batch", "0"], "> 0"),
    (["--batch", "1,-2"], "> 0"),
    (["--context", "-5"], "> 0"),
    (["--layers", "0"], "> 0"),
    (["--precision", "int3"], "unknown 'int3'"),
    (["--preset", "gpt5"], "unknown preset"),
    (["--context", "100000000", "--batch", "64"], "needs about"),
])
def test_bad_input_gets_one_line_and_exit_2(args, words):
    proc_ = run_cli("llm", "bench", *args, env=proc.NO_GPU)
    line = assert_one_line_error(proc_)
    assert words in line, line


def test_int4_needs_sizes_in_whole_groups():
    proc_ = run_cli("llm", "bench", "--hidden", "192", "--heads", "2", "--kv-heads", "2",
                    "--precision", "int4", env=proc.NO_GPU)
    assert "multiple of 128" in assert_one_line_error(proc_)


def test_without_a_gpu_the_command_runs_the_tiny_model_and_says_so():
    p = run_cli("llm", "bench", "--batch", "1,2", "--context", "16", "--repeat", "2",
                env=proc.NO_GPU, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "no NVIDIA GPU" in p.stdout and "tiny configuration on the CPU" in p.stdout
    rows = [ln.split() for ln in p.stdout.splitlines() if ln.strip().startswith("fp32")]
    assert [r[1] for r in rows] == ["1", "2"]
    assert all(float(r[5].replace(",", "")) > 0 for r in rows)


# ------------------------------------------------------------------ on a real GPU

@pytest.mark.gpu
@torch.inference_mode()
def test_gpu_kernels_at_the_8b_shapes_match_dequantised_products():
    from gpukit.llm_inference.quant import Int4Linear, Int8Linear
    g = torch.Generator(device="cuda").manual_seed(0)
    for n, k in ((6144, 4096), (4096, 14336)):
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g) * k ** -0.5
        for m in (1, 3):
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
            for L in (Int8Linear(w), Int4Linear(w)):
                y = L(x).float()
                ref = x.float() @ L.dequantize().T
                assert torch.isfinite(y).all()
                assert (y - ref).abs().max() / ref.abs().max() < 1e-2, (L.bits, n, k, m)


@pytest.mark.gpu
@torch.inference_mode()
def test_gpu_split_cache_attention_matches_and_the_benchmark_enables_it():
    from gpukit.llm_inference.attention import decode_attention
    from gpukit.llm_inference.measure import enable_fast_decode
    from gpukit.llm_inference.model import grouped_attention
    g = torch.Generator(device="cuda").manual_seed(1)
    for b, size, pos in ((1, 1024, 1023), (3, 1000, 777), (64, 96, 5)):
        q = torch.randn(b, 32, 1, 128, device="cuda", generator=g).to(torch.bfloat16)
        k, v = (torch.randn(b, 8, size, 128, device="cuda", generator=g).to(torch.bfloat16)
                for _ in "kv")
        p = torch.tensor([pos], device="cuda")
        mask = torch.arange(size, device="cuda")[None] <= p
        ref = grouped_attention(q.float(), k.float(), v.float(), mask)
        got = decode_attention(q, k, v, p).float()
        assert (got - ref).abs().max() / ref.abs().max() < 2e-2, (b, size, pos)
    m = random_model(Config(layers=2, hidden=512, heads=8, kv_heads=2, ffn=1024, vocab=300),
                     device="cuda", max_context=400)
    r = enable_fast_decode(m)
    assert r["enabled"] and m.fast_decode
    assert r["matvec"]["enabled"] and m.fast_matvec, r["matvec"]
    # where a fast step's time goes: every kind of kernel found, the products' bytes counted
    from gpukit.llm_inference.measure import decode_inputs, matrix_bytes, step_profile
    p = step_profile(m, decode_inputs(m, 1, 300), {"copy_gbs": 3000.0}, steps=2)
    # the attention kernel writes the cache: no separate cache-write kernel runs
    assert {"matrix products", "attention"} <= set(p["kinds"]), p
    assert "cache writes" not in p["kinds"], p
    assert p["kinds"]["matrix products"]["kernels"] == 4 * 2 + 1, p
    assert p["matrix_bytes"] == matrix_bytes(m) == m.read_bytes(1) - sum(
        t.nbytes for t in [m.norm, m.embed[0]] + [w for L in m.layers
                                                   for w in (L.attn_norm, L.mlp_norm)])
    assert 0 < p["matrix_share_of_copy"] and p["kernel_us"] > p["kinds"]["attention"]["us"]


@pytest.mark.gpu
@torch.inference_mode()
def test_gpu_fused_decode_at_the_8b_head_shape_equals_recomputing():
    """The fused rotation + cache write + attention, at 32 query heads of 128 over 8 key/value
    heads: checked by the benchmark's own gate, then token by token against the separate
    rotation, cache writes and PyTorch attention, each through its own cache."""
    from gpukit.llm_inference.measure import enable_fast_decode
    cfg = Config(layers=2, hidden=4096, heads=32, kv_heads=8, ffn=512, vocab=300)
    m = random_model(cfg, seed=4, device="cuda", max_context=1100)
    r = enable_fast_decode(m, batch=3, context=1024)
    assert r["enabled"] and m.fast_decode, r
    tokens = _tokens(cfg, (2, 24)).cuda()
    caches = [KVCache.empty(cfg, 2, 64, "cuda", torch.bfloat16) for _ in range(2)]
    for fast, cache in zip((False, True), caches):
        m.fast_decode = fast
        m(tokens[:, :10], torch.arange(10, device="cuda"), cache, prefill=True)
    for t in range(10, 24):
        outs = []
        for fast, cache in zip((False, True), caches):
            m.fast_decode = fast
            outs.append(m(tokens[:, t:t + 1], torch.tensor([t], device="cuda"), cache).float())
        ref, got = outs
        assert (got - ref).abs().max() / ref.abs().max() < 2e-2, (t, (got - ref).abs().max())
    k_ref, k_got = (c.k[:, :, :, :24].float() for c in caches)
    assert (k_got - k_ref).abs().max() / k_ref.abs().max() < 2 ** -7


@pytest.mark.gpu
@torch.inference_mode()
def test_gpu_decoding_with_the_cache_equals_recomputing():
    m = random_model(SMALL, seed=3, device="cuda", dtype=torch.float32, max_context=40)
    tokens = _tokens(SMALL, (2, 13)).cuda()
    full = m(tokens, torch.arange(13, device="cuda"),
             KVCache.empty(SMALL, 2, 40, "cuda", torch.float32), prefill=True)
    cache = KVCache.empty(SMALL, 2, 40, "cuda", torch.float32)
    m(tokens[:, :6], torch.arange(6, device="cuda"), cache, prefill=True)
    for t in range(6, 13):
        out = m(tokens[:, t:t + 1], torch.tensor([t], device="cuda"), cache)
    assert torch.allclose(out, full, rtol=1e-3, atol=1e-4), (out - full).abs().max()


def test_decode_share_interpolates_in_log_batch_and_says_how():
    from gpukit.cloud import machines as advisor_meta
    t = {"bf16": {1: 0.8, 16: 0.6, 256: 0.7}, "int4": {1: 0.3}}
    assert advisor_meta.decode_share(t, "bf16", 16) == (0.6, "measured at batch 16", False)
    share, how, between = advisor_meta.decode_share(t, "bf16", 4)     # log2: halfway from 1 to 16
    assert share == pytest.approx(0.7) and how == "between batches 1 and 16" and between is True
    assert advisor_meta.decode_share(t, "bf16", 512) == (0.7, "from batch 256", False)
    assert advisor_meta.decode_share(t, "int4", 8) == (0.3, "from batch 1", False)
    assert advisor_meta.decode_share(t, "int8", 1) == (0.8, "bf16's, measured at batch 1", False)
    assert advisor_meta.decode_share(t, "int8", 4)[1:] == ("bf16's, between batches 1 and 16", False)
    assert advisor_meta.decode_share({}, "bf16", 1) == (None, "no measurement", False)


def test_each_advisor_check_leaves_its_own_measurement_out():
    import copy
    import json

    from gpukit import pages
    from gpukit.llm_inference import views
    from tests.helpers import ROOT
    data = json.loads((ROOT / "results" / "nvidia-h200" / "llm_inference.json").read_text())

    def checks(d):
        return {(c["precision"], c["batch"]): c for c in views.advisor_checks(d)}
    before = checks(data)
    assert {("bf16", 8), ("bf16", 32), ("bf16", 128)} <= set(before)
    changed = copy.deepcopy(data)
    r32 = next(r for r in changed["gpu"]["decode"] if r["batch"] == 32
               and r["variant"] == changed["gpu"]["best_variant"])
    r32["share_of_copy"] *= 0.5
    r32["tokens_per_s"] *= 0.5
    after = checks(changed)
    est = {k: (before[k]["estimate_tokens_per_s"], after[k]["estimate_tokens_per_s"]) for k in before}
    assert est[("bf16", 32)][0] == pytest.approx(est[("bf16", 32)][1])   # its own: left out
    assert est[("bf16", 8)][1] < est[("bf16", 8)][0]                      # its neighbours: used
    assert est[("bf16", 128)][1] < est[("bf16", 128)][0]
    assert est[("bf16", 1)][0] == pytest.approx(est[("bf16", 1)][1])     # from batch 8
    assert after[("bf16", 32)]["basis"] == "between batches 8 and 128"
    assert after[("bf16", 32)]["between"] is True and after[("bf16", 1)]["between"] is False
    # the target counts the rows between two measured batches: batch 32 is now 2x off
    dec = next(t for t in views.targets(pages.Record(changed)) if "advise` decode" in t.name)
    assert dec.met is False and "3 configurations between" in dec.name, dec
    assert float(dec.value.split()[1].rstrip("%")) > 90, dec
    text = views.advisor("nvidia-h200", pages.Record(changed))
    assert "| bf16 | 32 |" in text and "between batches 8 and 128 |" in text
    # the memory table gives the advisor's estimate for every configuration measured
    mem = views.memory("nvidia-h200", pages.Record(data))
    rows = [line for line in mem.splitlines() if line.startswith(("| bf16", "| int"))]
    assert len(rows) == len(data["gpu"]["memory"]) and not any(r.endswith("| - |") for r in rows), mem
    assert "-0.0 %" not in mem                    # a gap that rounds to zero has no sign


def test_step_view_splits_each_step_and_says_what_the_products_take():
    from gpukit.llm_inference import views

    def prof(prec, mm_us, other_us, share):
        return {"precision": prec, "kernel_us": mm_us + other_us + 100.0,
                "matrix_share_of_copy": share,
                "kinds": {"matrix products": {"us": mm_us, "kernels": 129},
                          "attention": {"us": 100.0, "kernels": 64},
                          "other": {"us": other_us, "kernels": 200}}}
    step = lambda prec, s: {"precision": prec, "batch": 1, "variant": "compile",  # noqa: E731
                            "median_s": s}
    data = {"gpu": {"decode": [step("bf16", 4e-3), {**step("bf16", 9.0), "batch": 8}],
                    "quant": [step("int4", 2e-3)],
                    "step_profile": {"bf16": prof("bf16", 3000.0, 500.0, 0.9),
                                     "int4": prof("int4", 1000.0, 500.0, 0.5),
                                     "int8": {"error": "RuntimeError: out of memory"}}}}
    md = views.steps("nvidia-h200", data)
    assert "50.0 % to 75.0 % of a step" in md, md
    bf16 = next(line for line in md.splitlines() if line.startswith("| bf16"))
    assert "3,000 µs (129)" in bf16 and "90.0 %" in bf16, bf16
    assert "400 µs" in bf16                          # 4 ms step, 3,600 µs in kernels
    assert "int8" not in md
    assert "cache writes" not in md                  # no step has them apart: no column
    data["gpu"]["step_profile"]["int4"]["kinds"]["cache writes"] = {"us": 50.0, "kernels": 64}
    md = views.steps("nvidia-h200", data)
    bf16 = next(line for line in md.splitlines() if line.startswith("| bf16"))
    int4 = next(line for line in md.splitlines() if line.startswith("| int4"))
    assert "| cache writes |" in md and "| - |" in bf16 and "| 50 µs (64) |" in int4, md
    with pytest.raises(pages.NotRecorded):
        views.steps("nvidia-h200", {"gpu": {"decode": [], "step_profile": {}}})


def test_kernel_profiles_view_reads_each_kernels_ncu_row():
    from gpukit.llm_inference import views
    from gpukit.profiling.targets import TARGETS
    t = TARGETS["llm-int4-matvec"]
    nbytes, flops = t.work()
    assert nbytes == 28672 * 4096 // 2 + 2 * 28672 * 32 + 2 * 4096 + 2 * 28672
    assert flops == 2 * 28672 * 4096
    row = {"label": t.label, "n": t.n, "duration_s": 50e-6, "counted_bytes": nbytes,
           "dram_pct": 31.5, "issue_active_pct": 92.25,
           "pipes": {"alu": 80.0, "fma": 60.0},
           "top_stalls": [{"reason": "math_pipe_throttle", "cycles_per_issue": 3.25},
                          {"reason": "long_scoreboard", "cycles_per_issue": 1.5}],
           "sass": {"mix": [["LOP3", 0.3], ["FFMA", 0.25], ["FADD", 0.2], ["IMAD", 0.1]]}}
    row["sass"]["instructions"] = nbytes * 0.5          # 500 warp instructions per KB
    bf16 = {**row, "label": TARGETS["llm-bf16-matvec"].label, "issue_active_pct": 50.0,
            "sass": {"instructions": nbytes * 0.1, "mix": []}}
    data = {"machine": {"slug": "nvidia-h200", "gpu": {"name": "NVIDIA H200"}},
            "gpu": {"rows": [bf16, row]}}
    md = views.kernels("nvidia-h200", data)
    assert "int4 5.0 times the instructions of bf16, with the issue slots 92.2 % busy" in md
    assert "(bf16: 50.0 %)" in md and "int8" not in md
    line = next(x for x in md.splitlines() if x.startswith("| int4"))
    assert "| 8 x 16 groups, 4 warps |" in line and "50.0 µs" in line, line
    assert f"{nbytes / 50e-6 / 1e9:,.0f} GB/s" in line and "31.5 %" in line and "92.2 %" in line
    assert "`math_pipe_throttle` 3.2" in line and "long_scoreboard" not in line
    assert "LOP3 30.0 %, FFMA 25.0 %" in line and "FADD" not in line and "| 500 |" in line
    assert "| 2 x 2,048, 8 warps |" in md
    with pytest.raises(pages.NotRecorded):
        views.kernels("nvidia-h200", {"machine": data["machine"], "gpu": {"rows": []}})


@pytest.mark.gpu
def test_gpu_profiled_kernels_run_at_their_fixed_tiles_and_match():
    from gpukit.llm_inference.profiles import KERNELS
    from gpukit.profiling import targets
    for name in KERNELS:
        call, check = targets.setup(name, 1000)
        call()
        assert check() < 1e-2, name


@pytest.mark.gpu
@torch.inference_mode()
def test_gpu_peak_memory_leaves_out_the_autotuners_scratch():
    from gpukit.llm_inference.measure import enable_fast_decode, peak_memory
    from gpukit.llm_inference.quant import quantized
    m = random_model(Config(layers=2, hidden=512, heads=8, kv_heads=2, ffn=1024, vocab=300),
                     device="cuda", max_context=400)
    enable_fast_decode(m)
    for model in (m, quantized(m, 8), quantized(m, 4)):
        r = peak_memory(model, 1, 256)
        # working memory of a small model's step: far below the autotuner's 256 MiB buffer
        assert 0 <= r["other_bytes"] < 64 * 2**20, (model.precision, r)
