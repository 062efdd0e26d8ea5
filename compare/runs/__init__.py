"""Stored runs for analysis (``attnverify.runs``): a tidy pandas table of every run x step x
metric (:mod:`~attnverify.compare.runs.tidy`) and the TensorBoard export
(:mod:`~attnverify.compare.runs.tensorboard`)."""

from attnverify.compare.runs.tidy import (
    FIRST_COLUMNS,
    frame,
    frame_of,
    interval_loss,
    labels_of,
    long_rows,
    store_of,
)

__all__ = ["FIRST_COLUMNS", "frame", "frame_of", "interval_loss", "labels_of", "long_rows",
           "store_of"]
