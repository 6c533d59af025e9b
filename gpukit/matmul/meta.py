"""The matmul chapter's names and shapes its measure and views share (no heavy imports)."""

#: the results file of the compiler's register and spill report
PTXAS_NAME = "matmul_ptxas"
#: M, N, K of the correctness check where no tile divides any of them
AWKWARD = (257, 129, 67)
