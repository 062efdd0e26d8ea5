"""Throughput measurements of the models and the training loop (``attnverify bench``): the
floating-point rate of one training step (``flops``) and the time of whole runs on the
executor (``training``). Built on ``empirics`` alone; the claim configurations they time are
passed in by :mod:`attnverify.compare.bench`."""
