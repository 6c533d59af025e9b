"""One operation at every level: a row softmax from PyTorch down to CUDA C."""
