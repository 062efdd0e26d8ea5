"""A pretrained causal language model from a local directory, answering multiple-choice
questions by likelihood (the LLM prompting experiment of Mușat 2024, spec §3).

The directory is what ``save_pretrained`` writes for a model and its tokenizer (Hugging Face
``transformers`` layout); it is loaded with ``local_files_only``: nothing is downloaded.
``transformers`` is an optional extra (``pip install 'attnverify[llm]'``).

An option's score is the sum of the log-probabilities of its tokens after the prompt and a
space; the answer is the option with the highest score (no sampling, no decoding settings, so
the same model gives the same answers). Each option is scored on the tokens that the whole
text (prompt, a space, the option) has after the prompt's own tokens, so the option is
tokenized as it would be in running text (a SentencePiece tokenizer adds no word-start marker
of its own); where the prompt's tokens are not a prefix of the whole text's, the option's own
tokens are appended instead. A trailing end-of-sequence token that a tokenizer adds to the
prompt is dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

INSTALL_HINT = "pip install 'attnverify[llm]' (the optional transformers extra)"


class ChoiceScorer(Protocol):
    """Anything that scores the options of a prompt (higher: more likely)."""

    def option_scores(self, prompt: str, options: Sequence[str]) -> np.ndarray: ...


def model_fingerprint(directory: Path) -> str:
    """SHA-256 over the names and bytes of the directory's files (sorted, recursively): two
    directories answer alike exactly when they hold the same files."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is not a directory")
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(directory)).encode())
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 24):
                digest.update(chunk)
    return digest.hexdigest()[:16]


def check_model_directory(directory: Path) -> Path:
    """The directory, resolved, after checking that it holds a model's ``config.json``
    (FileNotFoundError naming what is missing)."""
    directory = Path(directory).expanduser().resolve()
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is not a directory")
    if not (directory / "config.json").is_file():
        raise FileNotFoundError(f"{directory} has no config.json: give the directory that "
                                f"save_pretrained wrote for a causal language model and its "
                                f"tokenizer")
    return directory


class LocalCausalLM:
    """A causal LM and its tokenizer loaded from ``directory`` in float32, on ``device``."""

    def __init__(self, directory: Path, device: str = "cpu") -> None:
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
            from transformers.utils import logging as transformers_logging
        except ImportError:
            raise ImportError(f"a local language model needs transformers: "
                              f"{INSTALL_HINT}") from None
        transformers_logging.disable_progress_bar()  # the report's progress is its own
        self.directory = check_model_directory(directory)
        self.device = torch.device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(self.directory, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(self.directory, local_files_only=True)
        self.model = model.to(self.device, dtype=torch.float32).eval()

    def _ids(self, text: str, special: bool) -> list[int]:
        ids = list(self.tokenizer(text, add_special_tokens=special)["input_ids"])
        eos = self.tokenizer.eos_token_id
        if special and len(ids) > 1 and eos is not None and ids[-1] == eos \
                and not text.endswith(str(self.tokenizer.eos_token)):
            ids = ids[:-1]  # a tokenizer that closes every text with EOS
        return ids

    def _option_ids(self, prompt: str, prompt_ids: list[int], option: str) -> list[int]:
        """The option's tokens as they follow the prompt in running text."""
        whole = self._ids(f"{prompt} {option}", special=True)
        if whole[:len(prompt_ids)] == prompt_ids and len(whole) > len(prompt_ids):
            return whole[len(prompt_ids):]
        return self._ids(" " + option, special=False)

    @torch.no_grad()
    def option_scores(self, prompt: str, options: Sequence[str]) -> np.ndarray:
        """Sum of log-probabilities of each option's tokens (the option after a space),
        given the prompt; one forward pass over the options, padded on the right."""
        prompt_ids = self._ids(prompt, special=True)
        option_ids = [self._option_ids(prompt, prompt_ids, option) for option in options]
        if not prompt_ids or any(not ids for ids in option_ids):
            raise ValueError("the tokenizer returned no token for the prompt or an option")
        rows = [prompt_ids + ids for ids in option_ids]
        width = max(map(len, rows))
        tokens = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            tokens[i, :len(row)] = torch.tensor(row)
            mask[i, :len(row)] = 1
        logits = self.model(input_ids=tokens.to(self.device),
                            attention_mask=mask.to(self.device)).logits.float()
        logp = torch.log_softmax(logits[:, :-1], dim=-1)
        scores = np.empty(len(rows))
        start = len(prompt_ids)
        for i, ids in enumerate(option_ids):
            positions = torch.arange(start - 1, start - 1 + len(ids), device=self.device)
            targets = torch.tensor(ids, device=self.device)
            scores[i] = float(logp[i, positions, targets].sum())
        return scores


def answer_questions(scorer: ChoiceScorer, prompts: Sequence[str],
                     options: Sequence[Sequence[str]]) -> np.ndarray:
    """The index of the option each prompt's scores rank first (ties: the first)."""
    return np.array([int(np.argmax(scorer.option_scores(prompt, opts)))
                     for prompt, opts in zip(prompts, options, strict=True)], dtype=np.int64)
