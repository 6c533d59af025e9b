"""GPUs in the cloud and on your desk: sourced, dated data and a memory, speed and cost advisor.

``data`` loads and validates ``gpukit/data/aws_instances.yaml`` and ``gpus.yaml`` and says how old
the prices are; ``models`` holds the model presets and counts their parameters; ``advisor`` holds the
memory formulas; ``machines`` the fit, the speed estimates and the ranking by price; ``cli`` is
``gpukit advise``; ``views`` turns the data into the chapter's tables.
"""
