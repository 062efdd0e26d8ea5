"""``musat.llms_solve_by_prompting``: the questions have the answers they claim and exact
chance, the rule decides correctly on constructed counts (it can fail), and a tiny causal LM
that the test builds and saves answers through the real loading code."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from attnverify.compare import Verdict
from attnverify.compare.claims.musat import LlmsSolveByPrompting
from attnverify.compare.claims.musat.llms_solve_by_prompting import answer_cell, decide_prompting
from attnverify.compare.memo import rooted
from attnverify.compare.protocol import Reason
from attnverify.empirics.tasks.retrieval_prompts import (
    FORMULATIONS,
    check_question_sizes,
    make_questions,
    max_depth,
)


class ChainFollower:
    """Follows at most ``reach`` links of the prompt's statements; beyond, it scores every
    option alike (and so picks the first)."""

    def __init__(self, reach: int) -> None:
        self.reach = reach

    def option_scores(self, prompt, options):
        lines = prompt.split("\n")
        points = {}
        for line in lines:
            if m := (re.match(r"^(\w+) = (\w+)$", line)
                     or re.match(r"^(\w+) lives (?:in|where) (\w+)", line)):
                points[m.group(1)] = m.group(2)
        entity = re.search(r"(?:value of|does) (\w+)", lines[-2]).group(1)
        for _ in range(self.reach):
            entity = points[entity]
            if entity in options:
                return np.array([o == entity for o in options], dtype=float)
        return np.zeros(len(options))


@pytest.mark.parametrize("formulation", sorted(FORMULATIONS))
def test_following_the_chain_answers_every_question(formulation):
    for depth in (1, 3, 9):
        assert answer_cell(ChainFollower(depth), formulation, depth, 4, 50, 0).all()


@pytest.mark.parametrize("formulation", sorted(FORMULATIONS))
def test_a_rule_blind_to_the_chain_is_at_chance(formulation):
    right = answer_cell(ChainFollower(1), formulation, 4, 4, 400, 0)  # reaches no root
    assert abs(right.mean() - 0.25) < 0.07  # 3.2 standard errors; the questions are fixed


def test_questions_are_reproducible_and_depend_on_the_seed():
    a = make_questions("assignment", 3, 4, 5, seed=1)
    assert a == make_questions("assignment", 3, 4, 5, seed=1)
    assert a != make_questions("assignment", 3, 4, 5, seed=2)
    q = a[0]
    assert len(q.options) == 4 == len(set(q.options))
    assert q.prompt.count("\n") == 1 + 4 * 3 + 1  # preamble, statements, question, answer


@pytest.mark.parametrize(("formulation", "depth", "chains", "match"), [
    ("sonnet", 2, 4, "unknown formulation"), ("assignment", 0, 4, "depth"),
    ("assignment", 2, 1, "chains"), ("assignment", 2, 11, "chains"),
    ("residence", 21, 4, "depth")])
def test_sizes_a_question_cannot_have_are_refused(formulation, depth, chains, match):
    with pytest.raises(ValueError, match=match):
        check_question_sizes(formulation, depth, chains)
    assert max_depth("residence", 4) == 20


@pytest.mark.parametrize(("counts", "n", "verdict", "reason"), [
    ({"assignment": {2: 90, 8: 30}}, 100, Verdict.CONFIRMED, Reason.DECIDED),
    ({"assignment": {2: 90, 8: 30}, "residence": {2: 95, 8: 20}}, 100, Verdict.CONFIRMED,
     Reason.DECIDED),
    # no fall with depth
    ({"assignment": {2: 100, 8: 99}}, 100, Verdict.REFUTED, Reason.DECIDED),
    # at chance at the shortest chain
    ({"assignment": {2: 27, 8: 25}}, 100, Verdict.REFUTED, Reason.DECIDED),
    # one formulation fails: the claim is about every formulation
    ({"assignment": {2: 90, 8: 30}, "residence": {2: 26, 8: 24}}, 100, Verdict.REFUTED,
     Reason.DECIDED),
    # a significant drop smaller than the smallest that matters
    ({"assignment": {2: 480, 8: 440}}, 500, Verdict.INCONCLUSIVE, Reason.CONFLICTING),
    # ... but a clean refutation of another formulation still refutes
    ({"assignment": {2: 480, 8: 440}, "residence": {2: 130, 8: 125}}, 500, Verdict.REFUTED,
     Reason.DECIDED),
    # too few questions to decide
    ({"assignment": {2: 7, 8: 4}}, 10, Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),
])
def test_prompting_rule(counts, n, verdict, reason):
    got, why, text, p, rows = decide_prompting(counts, n, 4)
    assert (got, why) == (verdict, reason), text
    assert 0 <= p <= 1 and len(rows) == len(counts)


def test_without_a_model_it_says_it_did_not_run():
    claim = LlmsSolveByPrompting()
    a = claim.assess(claim.params("quick"), [])
    assert a.verdict is Verdict.INCONCLUSIVE and a.reason is Reason.NOT_TESTABLE
    assert a.explanation.startswith("not run: no local model")


def test_a_directory_without_a_model_is_not_run(tmp_path):
    claim = LlmsSolveByPrompting()
    a = claim.assess(claim.params("smoke") | {"llm_dir": str(tmp_path)}, [])
    assert a.reason is Reason.NOT_TESTABLE and "config.json" in a.explanation


def test_too_few_depths_are_refused():
    claim = LlmsSolveByPrompting()
    with pytest.raises(ValueError, match="two chain lengths"):
        claim.check_params(claim.params("smoke") | {"depths": [2, 2]})
    with pytest.raises(ValueError, match="no link to follow"):
        claim.check_params(claim.params("smoke") | {"depths": [1, 4]})


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A one-layer GPT-2 with random weights and a word-level tokenizer over the questions'
    words, saved as save_pretrained writes them."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = set()
    for formulation in FORMULATIONS:
        for q in make_questions(formulation, 3, 4, 30, 0):
            words.update(re.findall(r"\w+|[^\w\s]", q.prompt))
    vocab = {"<unk>": 0, "<pad>": 1} | {w: i + 2 for i, w in enumerate(sorted(words))}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>",
                                                pad_token="<pad>")
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=len(vocab), n_positions=256, n_embd=16,
                                     n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0)
    path = tmp_path_factory.mktemp("tiny-lm")
    transformers.GPT2LMHeadModel(config).save_pretrained(path)
    fast.save_pretrained(path)
    return path


def test_option_scores_match_one_sequence_at_a_time(tiny_model):
    from attnverify.empirics.models.local_llm import LocalCausalLM

    lm = LocalCausalLM(tiny_model)
    q = make_questions("residence", 2, 4, 1, 0)[0]
    scores = lm.option_scores(q.prompt, q.options)
    prompt = lm.tokenizer(q.prompt)["input_ids"]
    for option, score in zip(q.options, scores, strict=True):
        ids = lm.tokenizer(" " + option, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = lm.model(input_ids=torch.tensor([prompt + ids])).logits[0]
        logp = torch.log_softmax(logits, -1)
        alone = sum(float(logp[len(prompt) - 1 + i, t]) for i, t in enumerate(ids))
        assert score == pytest.approx(alone, abs=1e-4)


def test_a_random_tiny_model_is_refused_and_memoised(tiny_model, tmp_path, monkeypatch):
    from attnverify.empirics.models import local_llm

    claim = LlmsSolveByPrompting()
    params = claim.params("smoke") | {"llm_dir": str(tiny_model), "questions": 40}
    with rooted(tmp_path):
        a = claim.assess(params, [])
        # a random model is at chance: 'well above chance' is refuted
        assert a.verdict is Verdict.REFUTED, a.explanation
        assert a.details["counts"]["assignment"].keys() == {"2", "4"}
        assert "accuracy" in claim.figures(params, [], a)

        def no_loading(*args, **kwargs):
            raise AssertionError("the memo should answer without the model")

        monkeypatch.setattr(local_llm.LocalCausalLM, "__init__", no_loading)
        again = claim.assess(params, [])
    assert again.details["counts"] == a.details["counts"]


class WordStartTokenizer:
    """Like SentencePiece: a word after a space is one token ("_7"), but a text that starts
    with a space gets a lone word-start token first; it closes every text with EOS (id 1)."""

    eos_token_id, eos_token = 1, "</s>"

    def __init__(self):
        self.vocab = {"_": 2}

    def __call__(self, text, add_special_tokens=True):
        ids = [self.vocab["_"]] if text.startswith(" ") else []
        ids += [self.vocab.setdefault("_" + w, len(self.vocab) + 2) for w in text.split()]
        return {"input_ids": ids + ([self.eos_token_id] if add_special_tokens else [])}


def test_options_are_tokenized_as_in_running_text():
    from attnverify.empirics.models.local_llm import LocalCausalLM

    lm = object.__new__(LocalCausalLM)  # the tokenizer alone: no model is loaded
    lm.tokenizer = WordStartTokenizer()
    prompt = "A = 7 Answer: The value of A is"
    prompt_ids = lm._ids(prompt, special=True)
    assert prompt_ids[-1] != 1  # the closing EOS is dropped from the prompt
    option = lm._option_ids(prompt, prompt_ids, "7")
    assert option == [lm.tokenizer.vocab["_7"]]  # no lone word-start token
