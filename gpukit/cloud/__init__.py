"""GPUs in the cloud and on your desk: sourced, dated data and a memory, speed and cost advisor.

The data (``gpukit/data/aws_instances.yaml`` and ``gpus.yaml``) is loaded, validated and dated by
the core's :mod:`gpukit.catalogue`. ``meta`` holds the advisor as plain data and arithmetic: the
model presets, the memory formulas, the fit, speed and price of each machine, and the report;
``models``, ``advisor`` and ``machines`` document those parts and keep their names; ``cli`` is
``gpukit advise``; ``views`` turns the data and the advisor's answers into the chapter's tables.
"""
