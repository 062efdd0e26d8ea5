"""Tasks, models, the training loop, the run store and executors (torch).

Never imports ``theory`` or ``compare`` (docs/layout.md).
"""

from attnverify.empirics.config import Batch, ModelConfig, TaskConfig
from attnverify.empirics.execute.executor import Executor, ExecutorSetupError, LocalExecutor
from attnverify.empirics.models.attention_lm import AttentionLM, AttentionLMConfig
from attnverify.empirics.models.free_attention import FreeAttentionToy, FreeAttentionToyConfig
from attnverify.empirics.models.retrieval_transformer import (
    RetrievalTransformer,
    RetrievalTransformerConfig,
)
from attnverify.empirics.models.seq2seq import CopyingSeq2Seq, Seq2SeqConfig
from attnverify.empirics.models.toy_classifier import (
    ToyClassifier,
    ToyClassifierConfig,
    ToyClassifierTask,
)
from attnverify.empirics.optim import SGD, Adam, OptimizerConfig
from attnverify.empirics.probes.qk_spectrum import (
    EigenStats,
    eigen_stats,
    factored_qk,
    symmetric_qk,
)
from attnverify.empirics.probes.score_monte_carlo import (
    ScoreSample,
    rank_collapse,
    sample_scores,
    sample_scores_many,
    token_residual,
)
from attnverify.empirics.result import RunResult
from attnverify.empirics.spec import RunSpec
from attnverify.empirics.store.run_store import CorruptEntryError, RunStore, default_cache_dir
from attnverify.empirics.tasks.copying import CooccurrenceEstimate, CopyTask, estimate_cooccurrence
from attnverify.empirics.tasks.random_walk import RandomWalkLMTask, gaussian_random_walk
from attnverify.empirics.tasks.retrieval import RetrievalTask
from attnverify.empirics.tasks.text_corpus import TextCorpusTask
from attnverify.empirics.train import build_model, train

__all__ = [
    "SGD",
    "Adam",
    "AttentionLM",
    "AttentionLMConfig",
    "Batch",
    "CooccurrenceEstimate",
    "CopyTask",
    "CopyingSeq2Seq",
    "CorruptEntryError",
    "EigenStats",
    "Executor",
    "ExecutorSetupError",
    "FreeAttentionToy",
    "FreeAttentionToyConfig",
    "LocalExecutor",
    "ModelConfig",
    "OptimizerConfig",
    "RandomWalkLMTask",
    "RetrievalTask",
    "RetrievalTransformer",
    "RetrievalTransformerConfig",
    "RunResult",
    "RunSpec",
    "RunStore",
    "ScoreSample",
    "Seq2SeqConfig",
    "TaskConfig",
    "TextCorpusTask",
    "ToyClassifier",
    "ToyClassifierConfig",
    "ToyClassifierTask",
    "build_model",
    "default_cache_dir",
    "eigen_stats",
    "estimate_cooccurrence",
    "factored_qk",
    "gaussian_random_walk",
    "rank_collapse",
    "sample_scores",
    "sample_scores_many",
    "symmetric_qk",
    "token_residual",
    "train",
]
