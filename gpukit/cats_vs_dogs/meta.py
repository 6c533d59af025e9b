"""Constants the training chapter's modules share (no heavy imports)."""

#: NVLink multicast off for every multi-GPU process, as shared multi-GPU hosts require
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1"}
