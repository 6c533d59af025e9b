"""Constants the training chapter's modules share (no heavy imports)."""

#: NVLink multicast off for every multi-GPU process, as shared multi-GPU hosts require
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1"}

#: name -> (training options changed from the recipe, what it is); ``--lr`` is the peak at batch
#: 256 and the command scales it with the global batch, so batch 512 trains at twice the rate
REGIMES = {
    "chapter": ({}, "the chapter's recipe: 128 px, width 32, global batch 256"),
    "wide": ({"width": 96}, "the chapter's recipe with a network three times as wide (about 9x the "
             "parameters): a longer step"),
    "wide-512": ({"width": 96, "batch_size": 512},
                 "the wide network with a global batch of 512: on two GPUs each gets the 256 photos "
                 "that one GPU gets in the `wide` regime"),
}
#: seeds trained per regime and GPU count (``--seeds`` or ``gpukit bench --n`` replaces it)
SEEDS = 5
#: the parts of the record: the step breakdown, and the whole runs
PARTS = ("steps", "runs")
#: marks a record of this shape (launcher time, 1 and N GPUs alternating, parts with sessions)
SHAPE = "alternating"

#: A typical tutorial pipeline (ImageFolder + PIL DataLoader, fp32, small CNN, 30 epochs at
#: 128 px), timed on an H200 runner outside this benchmark when the chapter's targets were
#: set. Shown as a reference only: the "ten times" target uses the pipeline measured in the
#: same run (``throughput.tutorial_measured``).
TUTORIAL_REPORTED = {"images_per_s": 3483, "val_acc": 0.815, "wall_s": 22,
                     "source": "reported outside this benchmark (an H200 runner, 30 epochs "
                               "at 128 px)"}
COMMAND = "gpukit: one all-reduce after backward"
#: the overlapped exchange (:class:`~gpukit.cats_vs_dogs.allreduce.OverlappedGradients`), by
#: name: its bucket size in MB (25 is DDP's default cap)
OVERLAPPED = {"gpukit: overlapped, 25 MB buckets": 25.0, "gpukit: overlapped, 4 MB buckets": 4.0}


def step_times(rows: list[dict]) -> tuple[float, float]:
    """(synthetic, real) step time: the mean of the two orders they were timed in.

    A step that waits for the host varies by a fifth or more between two timings a few seconds
    apart, so one pair alone can show real photos faster than synthetic data, or much slower.
    """
    def both(r):
        return (r["median_s"] + r["second_median_s"]) / 2 if r.get("second_median_s") else r["median_s"]
    return both(rows[0]), both(rows[1])
