"""Training a cats-vs-dogs network on the GPU: data, model, training loop, command line.

* :mod:`gpukit.cats_vs_dogs.data` finds the photos (four common layouts), decodes them once
  and keeps them as uint8 tensors on the device, and augments batches there;
* :mod:`gpukit.cats_vs_dogs.model` is a compact residual CNN trained from scratch;
* :mod:`gpukit.cats_vs_dogs.loop` trains it: bf16 autocast, channels_last, atomic checkpoints,
  ``--resume``, Ctrl-C saving a checkpoint, DistributedDataParallel under ``torchrun``;
* :mod:`gpukit.cats_vs_dogs.cli` is ``gpukit train cats-vs-dogs`` and ``gpukit predict``;
* :mod:`gpukit.cats_vs_dogs.measure` is ``gpukit bench cats-vs-dogs`` and the chapter's tables.

Importing this package does not import torch; its modules do.
"""
