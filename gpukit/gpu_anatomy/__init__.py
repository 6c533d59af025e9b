"""What a GPU is made of: the experiments that show SMs, warps, latency hiding, coalescing and divergence."""
