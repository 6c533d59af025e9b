"""GPUs in the cloud and on your desk: sourced, dated data and a memory/cost advisor.

``data`` loads and validates ``gpukit/data/aws_instances.yaml`` and ``gpus.yaml``;
``advisor`` holds the memory formulas and the fit/cost ranking; ``cli`` is
``gpukit advise``; ``views`` turns the data into the chapter's tables.
"""
