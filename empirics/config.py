"""Frozen, self-validating configuration records with a kind registry.

Tasks, models and optimizers are small frozen dataclasses. Each subclass names its ``kind``;
the registry turns a plain dict (from JSON) back into the right class, so a
:class:`~attnverify.empirics.spec.RunSpec` round-trips through the run store exactly. Validation
errors are ``ValueError`` naming the field and the accepted values.

Every registered class declares its **numerics version**, ``code_version``: a run's key is its
spec plus the versions of its task, model, optimizer and the training loop
(:func:`~attnverify.empirics.versions.run_versions`), so comments, renames, moved files and
refactors keep every key, and a change of what a class computes (its data, its initialisation,
its forward pass) must bump its ``code_version``. The golden regression runs
(``tests/test_golden.py``) fail when numerics change without a bump. A class without the
attribute is refused when it is defined, so a third-party config can never reuse stale runs.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar, Self, cast

from attnverify.empirics.versions import require_code_version

if TYPE_CHECKING:
    import torch
    from torch import nn

Batch = dict[str, "torch.Tensor"]
"""A batch of named tensors, as a task samples it and a model consumes it."""

_REGISTRY: dict[str, dict[str, type[Config]]] = {}


class Config:
    """Base of task, model and optimizer configs: frozen dataclasses registered by kind."""

    family: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    code_version: ClassVar[int]
    """The numerics version of this class: bump it (1, 2, ...) whenever what the class
    computes changes; every run using it then gets a new key. Each class that declares a
    ``kind`` declares its own (inheriting a parent's is refused: a subclass computes something
    else)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" not in vars(cls) and cls.kind:
            raise TypeError(
                f"{cls.__module__}.{cls.__qualname__} inherits kind {cls.kind!r}: declare its "
                f"own kind and code_version (its runs would otherwise share the keys and the "
                f"stored runs of its parent)")
        if "kind" in vars(cls) and cls.kind:
            require_code_version(cls, f"{cls.family} kind {cls.kind!r}")
            known = _REGISTRY.setdefault(cls.family, {}).get(cls.kind)
            if known is not None and (known.__module__, known.__qualname__) != (
                    cls.__module__, cls.__qualname__):
                raise TypeError(
                    f"{cls.__module__}.{cls.__qualname__} declares {cls.family} kind "
                    f"{cls.kind!r}, which {known.__module__}.{known.__qualname__} has: choose "
                    f"another kind (a run's spec names its class by kind)")
            _REGISTRY[cls.family][cls.kind] = cls

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError on an invalid field; subclasses extend this."""

    location_fields: ClassVar[tuple[str, ...]] = ()
    """Fields that say where data lives, not what it is (a corpus's directory, whose content a
    fingerprint field names): in the spec, so that a run can find its data, but not in the
    run's identity (:meth:`identity`), so the same data elsewhere keeps the key."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **dataclasses.asdict(self)}  # type: ignore[call-overload]

    def identity(self) -> dict[str, Any]:
        """``to_dict`` without the :attr:`location_fields`: what the run key hashes."""
        return {k: v for k, v in self.to_dict().items() if k not in self.location_fields}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        kinds = _REGISTRY.get(cls.family, {})
        kind = data.get("kind")
        if kind not in kinds:
            raise ValueError(
                f"unknown {cls.family} kind {kind!r}; accepted: {', '.join(sorted(kinds))}"
            )
        fields = {k: v for k, v in data.items() if k != "kind"}
        # the registry of this family holds subclasses of cls
        return cast(Self, kinds[kind](**fields))


def require(condition: bool, field: str, accepted: str, value: Any) -> None:
    """Raise ``ValueError("FIELD must be ACCEPTED; got VALUE")`` unless ``condition`` holds."""
    if not condition:
        raise ValueError(f"{field} must be {accepted}; got {value!r}")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class TaskConfig(Config):
    """A data distribution: ``sample`` draws a batch from a seeded generator."""

    family = "task"

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        raise NotImplementedError

    def sample_eval(self, batch_size: int, generator: torch.Generator) -> Batch:
        """The evaluation batch: by default the training distribution (a fresh seed); a task
        with a held-out split (a text corpus) draws from it."""
        return self.sample(batch_size, generator)


class ModelConfig(Config):
    """A network family: ``build`` returns a module with ``loss``, ``metrics`` and ``attention``
    (see :class:`empirics.train.TrainableModel`)."""

    family = "model"
    seconds_per_cost: ClassVar[float | None] = None
    """Seconds per unit of ``relative_cost`` (per example and step) on one core of the reference
    CPU, a 2-core x86-64 machine: the median over the family's runs in a cold
    ``verify --profile quick`` (measured 2026-11-25 beside other jobs; on 2026-11-26 with the
    cores idle, 1-12% apart, and 28% faster for ``snell_seq2seq``). None for a family never
    timed. It makes runs of different families comparable (:meth:`RunSpec.time_estimate`)."""

    def build(self, task: TaskConfig) -> nn.Module:
        raise NotImplementedError

    def relative_cost(self, task: TaskConfig) -> float:
        """Rough cost of one training example, in this family's own units (FLOPs up to a
        factor); ``seconds_per_cost`` turns it into time."""
        return 1.0

    def seed_batchable(self) -> bool:
        """Whether runs of this model that differ only in their seed may train as one
        seed-batched model (:mod:`empirics.seed_batch`): no in-model randomness and every op
        with a vmap rule. Default False (the plain loop)."""
        return False
