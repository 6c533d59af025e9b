"""Constants the training chapter's modules share, and the statistics its record and views use
(no heavy imports)."""

import math

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

# ------------------------------------------------ means and intervals over seeds
# Pure functions on lists of numbers (no numpy, no scipy): the t quantile is found by bisection
# on the t distribution's cumulative probability, itself Simpson's rule on its density. The
# difference of two means uses Welch's interval (no assumption that both have the same spread),
# with the Welch-Satterthwaite degrees of freedom.
LEVEL = 0.95


def _t_density(x: float, df: float) -> float:
    c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(c - (df + 1) / 2 * math.log1p(x * x / df))


def t_probability(x: float, df: float, intervals: int = 2000) -> float:
    """P(T <= x) for Student's t with ``df`` degrees of freedom (any real df > 0)."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    a = abs(x)
    if a == 0:
        return 0.5
    h = a / intervals
    s = _t_density(0.0, df) + _t_density(a, df)
    s += sum((4 if k % 2 else 2) * _t_density(k * h, df) for k in range(1, intervals))
    half = min(0.5, s * h / 3)
    return 0.5 + half if x > 0 else 0.5 - half


def t_quantile(p: float, df: float) -> float:
    """The x with P(T <= x) = p, for 0.5 <= p < 1 (bisection to 1e-9)."""
    if not 0.5 <= p < 1:
        raise ValueError(f"p must be in [0.5, 1), got {p}")
    lo, hi = 0.0, 1.0
    while t_probability(hi, df) < p:
        lo, hi = hi, 2 * hi
    while hi - lo > 1e-9:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_probability(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


def _var(xs: list[float]) -> float:
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def mean_interval(xs, level: float = LEVEL) -> dict:
    """Mean of ``xs`` with its two-sided Student-t interval: {n, mean, sd, lo, hi}.

    With fewer than two values the interval is unknown (``lo`` and ``hi`` are None).
    """
    xs = [float(x) for x in xs]
    if not xs:
        raise ValueError("no values")
    n, mean = len(xs), sum(xs) / len(xs)
    if n < 2:
        return {"n": n, "mean": mean, "sd": None, "lo": None, "hi": None}
    sd = math.sqrt(_var(xs))
    half = t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return {"n": n, "mean": mean, "sd": sd, "lo": mean - half, "hi": mean + half}


def difference_interval(a, b, level: float = LEVEL) -> dict:
    """mean(b) - mean(a) with Welch's two-sided interval: {diff, lo, hi, df}.

    Unknown (None) with fewer than two values on either side; with no spread on either side
    the interval is the difference itself.
    """
    a, b = [float(x) for x in a], [float(x) for x in b]
    if not a or not b:
        raise ValueError("no values")
    diff = sum(b) / len(b) - sum(a) / len(a)
    if len(a) < 2 or len(b) < 2:
        return {"diff": diff, "lo": None, "hi": None, "df": None}
    va, vb = _var(a) / len(a), _var(b) / len(b)
    if va + vb == 0:
        return {"diff": diff, "lo": diff, "hi": diff, "df": None}
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = t_quantile(0.5 + level / 2, df) * math.sqrt(va + vb)
    return {"diff": diff, "lo": diff - half, "hi": diff + half, "df": df}


def same_accuracy(one, many, level: float = LEVEL) -> dict:
    """The accuracy verdict of the data-parallel record: the N-GPU mean within the one-GPU
    interval (None when the one-GPU interval is unknown), with both intervals and the
    difference of the means (N-GPU minus one-GPU) with Welch's interval."""
    i1, iN = mean_interval(one, level), mean_interval(many, level)
    within = None if i1["lo"] is None else i1["lo"] <= iN["mean"] <= i1["hi"]
    return {"one": i1, "many": iN, "diff": difference_interval(one, many, level), "within": within}
