"""The chapter card's three takeaways, computed from the reference machine's record."""

from gpukit import pages

from .meta import NAME


@pages.card_renderer(NAME)
def card(data: dict) -> str:
    gpu, cpu = data["gpu"]["rows"][0], data["cpu"]["rows"][0]
    return pages.takeaways([
        "Each output element reads three inputs, so neighbouring threads share two of them.",
        f"The GPU kernel moves {pages.fmt_num(gpu['gbs'], 0)} GB/s, "
        f"NumPy on the CPU {pages.fmt_num(cpu['gbs'], 0)} GB/s.",
        f"That is {pages.fmt_ratio(gpu['gbs'] / cpu['gbs'])} the CPU's rate on "
        f"{pages.fmt_num(data['gpu']['n'])} elements.",
    ], source=pages.machine_title(data))
