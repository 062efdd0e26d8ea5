"""Running many training runs: the executors (local worker processes, Dask), the worker
pool's units and its source check, and progress reporting."""
