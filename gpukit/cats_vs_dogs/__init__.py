"""Training a cats-vs-dogs network on the GPU: data, model, training loop, command line.

* :mod:`gpukit.cats_vs_dogs.photos` finds the photos (four common layouts) and decodes them,
  without torch, so that ``gpukit train`` decodes while torch is being imported;
* :mod:`gpukit.cats_vs_dogs.data` keeps them as uint8 tensors on the device and augments
  batches there;
* :mod:`gpukit.cats_vs_dogs.model` is a compact residual CNN trained from scratch;
* :mod:`gpukit.cats_vs_dogs.loop` is the training loop (bf16 autocast, channels_last, a weight
  average) and :func:`fit`, which runs it;
* :mod:`gpukit.cats_vs_dogs.run` is what a run needs around the loop: ``--resume``, Ctrl-C
  saving a checkpoint, N processes under ``torchrun``, the final report;
* :mod:`gpukit.cats_vs_dogs.allreduce` averages the gradients of N processes with one all-reduce;
* :mod:`gpukit.cats_vs_dogs.checkpoint` writes checkpoints atomically, in the background;
* :mod:`gpukit.cats_vs_dogs.cli` is ``gpukit train cats-vs-dogs`` and ``gpukit predict``;
* :mod:`gpukit.cats_vs_dogs.measure` is ``gpukit bench cats-vs-dogs`` and the chapter's tables.

The public API is listed in ``__all__``; importing this package does not import torch, using
one of its names does.
"""

from gpukit import lazy_api

#: public name -> the module of this package that defines it (imported on first use)
__all__, __getattr__ = lazy_api(__name__, {
    "TrainConfig": "loop", "fit": "loop", "train_epochs": "loop", "Training": "loop",
    "train_step": "loop", "evaluate": "loop", "predict_logits": "loop", "autocast": "loop",
    "pick_device": "loop", "EMA": "loop",
    "Interrupted": "run", "format_report": "run",
    "load_for_inference": "checkpoint", "save_checkpoint": "checkpoint", "load_checkpoint": "checkpoint",
    "default_data_dir": "photos", "find_dataset": "photos", "prepare_eval": "data", "augment": "data",
    "DataError": "photos",
    "CatDogNet": "model",
})
