"""Throughput measurements of the models and the training loop (``attnverify bench``): the
floating-point rate of one training step (``flops``) and the time of whole runs on the
executor (``training``), and the runs they time per model family (``families``: the claims'
runs at quick and full). Built on ``empirics`` alone."""
