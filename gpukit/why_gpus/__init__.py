"""Why CPUs alone are not enough: the same work on one core, all cores and the GPU, and where the GPU starts to win."""
