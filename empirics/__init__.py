"""Tasks, models, the training loop, the run store and executors (torch).

Never imports ``theory`` or ``compare`` (ARCHITECTURE.md, "Layout").
"""

from empirics.config import Batch, ModelConfig, TaskConfig
from empirics.copying import CooccurrenceEstimate, CopyTask, estimate_cooccurrence
from empirics.executor import LocalExecutor
from empirics.free_attention import FreeAttentionToy, FreeAttentionToyConfig
from empirics.optim import SGD, Adam, OptimizerConfig
from empirics.result import RunResult
from empirics.seq2seq import CopyingSeq2Seq, Seq2SeqConfig
from empirics.spec import RunSpec
from empirics.store import CorruptEntryError, RunStore, default_cache_dir
from empirics.toy_classifier import ToyClassifier, ToyClassifierConfig, ToyClassifierTask
from empirics.train import build_model, train

__all__ = [
    "SGD",
    "Adam",
    "Batch",
    "CooccurrenceEstimate",
    "CopyTask",
    "CopyingSeq2Seq",
    "CorruptEntryError",
    "FreeAttentionToy",
    "FreeAttentionToyConfig",
    "LocalExecutor",
    "ModelConfig",
    "OptimizerConfig",
    "RunResult",
    "RunSpec",
    "RunStore",
    "Seq2SeqConfig",
    "TaskConfig",
    "ToyClassifier",
    "ToyClassifierConfig",
    "ToyClassifierTask",
    "build_model",
    "default_cache_dir",
    "estimate_cooccurrence",
    "train",
]
