"""Golden regression runs: one tiny deterministic run per model family, its metric arrays
stored under ``tests/golden/`` (docs/run-store.md#run-identity).

A run's key carries the declared numerics versions of its task, model, optimizer and the loop,
not its source (:mod:`attnverify.empirics.versions`). These runs are what keeps that honest: a
change of numerics without a version bump changes a family's arrays here and fails, naming the
family and the versions to bump; a bump fails too until the golden arrays are regenerated
(``pytest tests/test_golden.py --update-golden``), so a bump is always a reviewed change of
``tests/golden/``. The stored key guards the spec's canonical form: a change of ``to_dict`` would
re-key every stored run of the family.

Tolerance: the runs are float64, and their arrays must agree with the stored ones to
``rtol = 3e-5``, ``atol = 3e-8``. Across x86 CPUs the kernels differ in vector width and in the
order of floating-point reductions; simulated here with ATen's kernel choice
(``ATEN_CPU_CAPABILITY``) and MKL's (``MKL_ENABLE_INSTRUCTIONS``, ``MKL_CBWR``), the largest
deviation is 1.3e-8 of the tolerance between the AVX2 and AVX-512 kernels (every x86-64 CPU
since 2013) and 0.81 of it with the scalar fallback kernels (``default``: the attention LMs'
final W_QK entries near zero, after 20 Adam steps). A real change of numerics is
far outside: the negative controls below change the initial weights or the optimizer's step by
1% and land 58x (the retrieval transformer's step) to 3.1e6x outside the tolerance.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from attnverify.empirics import (
    SGD,
    Adam,
    AttentionLMConfig,
    CopyTask,
    FreeAttentionToyConfig,
    RandomWalkLMTask,
    RetrievalTask,
    RetrievalTransformerConfig,
    RunSpec,
    Seq2SeqConfig,
    TextCorpusTask,
    ToyClassifierConfig,
    ToyClassifierTask,
    train,
)
from attnverify.empirics.config import _REGISTRY
from attnverify.empirics.versions import run_versions

GOLDEN_DIR = Path(__file__).parent / "golden"
RTOL, ATOL = 3e-5, 3e-8
_COMMON = {"steps": 20, "batch_size": 16, "eval_every": 5, "eval_size": 16, "seed": 3,
           "dtype": "float64"}

FAMILIES: dict[str, RunSpec] = {
    "seq2seq_learned": RunSpec(task=CopyTask("subset", 12, 5), model=Seq2SeqConfig(hidden=16),
                               attention_snapshots=(20,), **_COMMON),
    "seq2seq_uniform": RunSpec(task=CopyTask("subset", 12, 5),
                               model=Seq2SeqConfig(hidden=16, attention="uniform"), **_COMMON),
    "multihead_gru": RunSpec(task=CopyTask("permutation", 6, 6),
                             model=Seq2SeqConfig(hidden=16, heads=2, cell="gru",
                                                 shared_embedding=False),
                             **_COMMON),
    "free_attention_toy": RunSpec(task=CopyTask("subset", 12, 5),
                                  model=FreeAttentionToyConfig(init_std_ktiw=0.1,
                                                               init_std_attention=0.1),
                                  optimizer=SGD(lr=0.5), **_COMMON),
    "toy_classifier": RunSpec(task=ToyClassifierTask(),
                              model=ToyClassifierConfig(p0=0.4, beta0=0.2, beta1=-0.1),
                              optimizer=SGD(lr=0.1), **_COMMON),
    "retrieval_transformer": RunSpec(task=RetrievalTask(D=2, K=2, vocab=16),
                                     model=RetrievalTransformerConfig(layers=2, heads=2,
                                                                      d_model=16),
                                     **_COMMON),
    "attention_lm": RunSpec(task=RandomWalkLMTask(vocab=16, T=12),
                            model=AttentionLMConfig(d=16, ffn=16, dropout=0.1, locater=0.1),
                            optimizer=Adam(lr=3e-3), **_COMMON),
    "attention_lm_prenorm_locater_b": RunSpec(
        task=RandomWalkLMTask(vocab=16, T=12),
        model=AttentionLMConfig(d=16, ffn=16, norm="pre", dropout=0.0, locater=0.1,
                                locater_kind="B"),
        optimizer=Adam(lr=3e-3), **_COMMON),
    "attention_lm_locater_c": RunSpec(
        task=RandomWalkLMTask(vocab=16, T=12),
        model=AttentionLMConfig(d=16, ffn=16, dropout=0.0, locater=0.1, locater_kind="C"),
        optimizer=Adam(lr=3e-3), **_COMMON),
    "attention_lm_frobenius_control": RunSpec(
        task=RandomWalkLMTask(vocab=16, T=12),
        model=AttentionLMConfig(d=16, ffn=16, dropout=0.0, locater=0.1, locater_kind="F"),
        optimizer=Adam(lr=3e-3), **_COMMON),
    "text_corpus_lm": RunSpec(task=TextCorpusTask.from_directory(GOLDEN_DIR / "corpus", T=8),
                              model=AttentionLMConfig(d=16, ffn=16, dropout=0.0),
                              optimizer=Adam(lr=3e-3), **_COMMON),
    "retrieval_transformer_causal_rope": RunSpec(
        task=RetrievalTask(D=2, K=2, vocab=16, statement_order="value_first",
                           query_marker=True, distractors=1, ic_scope="prefix"),
        model=RetrievalTransformerConfig(layers=2, heads=2, d_model=16, norm="post",
                                         causal=True, pos_encoding="rope"),
        **_COMMON),
    "copy_iid_stop_when": RunSpec(task=CopyTask("iid", 12, 5),
                                  model=Seq2SeqConfig(hidden=16, cell="gru"),
                                  stop_when=("acc", 0.12), **_COMMON),
}
"""Every model family attnverify trains, each in a configuration that exercises its numerics
(in-model dropout and the LocAteR penalties for the attention LM, nonzero initial weights for
the free-attention toy, attention snapshots for the seq2seq, the causal rotary post-norm
variant of the retrieval transformer with the task's options, the loop's early stop), and every
task kind (``test_every_registered_kind_has_a_golden_run``)."""


def _path(family: str) -> Path:
    return GOLDEN_DIR / f"{family}.json"


def _arrays(spec: RunSpec) -> dict[str, np.ndarray]:
    result = train(spec)
    assert result.status == "ok", f"golden run diverged: {result.status}"
    return {name: np.asarray(a, dtype=np.float64) for name, a in result.arrays().items()
            if np.asarray(a).dtype.kind in "fiub"}


def _bump_hint(spec: RunSpec) -> str:
    return (f"bump the code_version of the class whose numerics changed (task "
            f"{type(spec.task).__name__}, model {type(spec.model).__name__}, optimizer "
            f"{type(spec.optimizer).__name__}) or LOOP_VERSION in empirics/versions.py (the "
            f"loop), then regenerate with 'pytest tests/test_golden.py --update-golden'")


def golden_mismatch(family: str, arrays: dict[str, np.ndarray]) -> str | None:
    """Why ``arrays`` (a run of ``FAMILIES[family]``) disagree with the stored golden run;
    None when they agree."""
    spec = FAMILIES[family]
    path = _path(family)
    if not path.exists():
        return f"{family}: no golden arrays ({path}); run 'pytest tests/test_golden.py " \
               f"--update-golden'"
    stored = json.loads(path.read_text())
    if stored["versions"] != run_versions(spec):
        return (f"{family}: the numerics versions are {run_versions(spec)} but the golden "
                f"arrays are of {stored['versions']}: a bump needs new golden arrays "
                f"('pytest tests/test_golden.py --update-golden'; review their diff)")
    if stored["key"] != spec.key():
        return (f"{family}: the run key changed ({stored['key']} -> {spec.key()}) with the same "
                f"versions: the spec's canonical form (RunSpec.identity) changed, which "
                f"re-keys every stored run of this family")
    if set(stored["arrays"]) != set(arrays):
        return f"{family}: arrays {sorted(arrays)} != golden {sorted(stored['arrays'])}"
    for name, values in stored["arrays"].items():
        expected = np.asarray(values, dtype=np.float64)
        got = arrays[name]
        if got.shape != expected.shape:
            return f"{family}: array {name!r} has shape {got.shape}, golden {expected.shape}"
        if not np.allclose(got, expected, rtol=RTOL, atol=ATOL, equal_nan=True):
            worst = float(np.nanmax(np.abs(got - expected) / (ATOL + RTOL * np.abs(expected))))
            return (f"{family}: numerics changed without a version bump (array {name!r} is "
                    f"{worst:.3g}x outside rtol {RTOL:g}, atol {ATOL:g}): {_bump_hint(spec)}")
    return None


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_golden_run_matches_its_stored_arrays(family, request):
    spec = FAMILIES[family]
    arrays = _arrays(spec)
    if request.config.getoption("--update-golden"):
        GOLDEN_DIR.mkdir(exist_ok=True)
        _path(family).write_text(json.dumps(
            {"family": family, "spec": spec.to_dict(), "versions": run_versions(spec),
             "key": spec.key(), "rtol": RTOL, "atol": ATOL,
             "arrays": {name: a.tolist() for name, a in sorted(arrays.items())}},
            indent=1) + "\n")
    problem = golden_mismatch(family, arrays)
    assert problem is None, problem


def _scaled_init(monkeypatch, spec: RunSpec) -> None:
    """The model's initial weights times 1.01 (a changed init scale), nothing in the spec."""
    cls = type(spec.model)
    build = cls.build

    def scaled(self, task):
        model = build(self, task)
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.mul_(1.01)
        return model

    monkeypatch.setattr(cls, "build", scaled)


def _scaled_step(monkeypatch, spec: RunSpec) -> None:
    """The optimizer's learning rate times 1.01 inside its ``build`` (the spec keeps its lr)."""
    cls = type(spec.optimizer)
    build = cls.build

    def scaled(self, params):
        optimizer = build(self, params)
        for group in optimizer.param_groups:
            group["lr"] *= 1.01
        return optimizer

    monkeypatch.setattr(cls, "build", scaled)


@pytest.mark.parametrize("perturb", [_scaled_init, _scaled_step], ids=["init", "step"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_negative_control_a_one_percent_change_of_numerics_is_caught(family, perturb,
                                                                     monkeypatch):
    spec = FAMILIES[family]
    perturb(monkeypatch, spec)
    problem = golden_mismatch(family, _arrays(spec))
    assert problem is not None and "without a version bump" in problem
    assert type(spec.model).__name__ in problem


def test_a_bump_without_new_golden_arrays_is_named(monkeypatch):
    spec = FAMILIES["toy_classifier"]
    monkeypatch.setattr(type(spec.model), "code_version", type(spec.model).code_version + 1)
    problem = golden_mismatch("toy_classifier", _arrays(spec))
    assert problem is not None and "a bump needs new golden arrays" in problem


def test_every_registered_kind_has_a_golden_run():
    """A new task, model or optimizer class gets a golden family, or its numerics go unguarded."""
    covered = {(family, type(part).kind) for spec in FAMILIES.values()
               for family, part in (("task", spec.task), ("model", spec.model),
                                    ("optimizer", spec.optimizer))}
    registered = {(family, kind) for family, kinds in _REGISTRY.items()
                  for kind, cls in kinds.items() if cls.__module__.startswith("attnverify.")}
    assert registered <= covered, f"no golden run for {sorted(registered - covered)}"


def test_the_early_stop_family_stops_early():
    arrays = json.loads(_path("copy_iid_stop_when").read_text())["arrays"]
    assert arrays["eval_steps"][-1] < _COMMON["steps"]
