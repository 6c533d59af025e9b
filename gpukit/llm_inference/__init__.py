"""Running a language model on one GPU: a Llama-3.1-8B-shaped decoder in plain PyTorch,
its decode and prefill measured against the memory and compute roofs, and weight-only int8
and int4 through dequantising Triton kernels.

The public API is listed in ``__all__``; importing this package imports torch or Triton only
when one of its names is first used.
"""

from gpukit import lazy_api

#: public name -> the module of this package that defines it (imported on first use)
__all__, __getattr__ = lazy_api(__name__, {
    "Config": "model", "ConfigError": "model", "PRESETS": "model", "Model": "model",
    "KVCache": "model", "random_model": "model", "generate": "model",
    "to_hf_state_dict": "model", "naive_attention": "model",
    "Int8Linear": "quant", "Int4Linear": "quant", "quantized": "quant"})
