"""GPUs in the cloud and on your desk: sourced, dated data and a memory, speed and cost advisor.

The data (``gpukit/data/aws_instances.yaml`` and ``gpus.yaml``) is loaded, validated and dated by
the core's :mod:`gpukit.catalogue`; ``models`` holds the model presets and counts their parameters; ``advisor`` holds the
memory formulas; ``machines`` the fit, the speed estimates and the ranking by price; ``cli`` is
``gpukit advise``; ``views`` turns the data into the chapter's tables.
"""
