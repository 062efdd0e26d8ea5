"""A word-level language-modelling task read from local files in the WikiText format
(Bao et al. 2024 train on WikiText-2; nothing is downloaded).

A directory holds ``wiki.train.tokens`` and ``wiki.valid.tokens`` (``wiki.test.tokens`` is not
read): one paragraph per line, tokens separated by spaces, ``<unk>`` already in place. As in
fairseq, every line ends with ``<eos>`` (empty lines included) and the vocabulary is built from the
training file. Training batches are random windows of T tokens from the training stream;
evaluation batches are windows of the validation stream (validation tokens missing from the
training vocabulary map to ``<unk>``).

The task records a SHA-256 fingerprint of both files, so a run key changes when the corpus does;
:meth:`TextCorpusTask.from_directory` computes it. The directory itself is not part of the key:
the same corpus in another place (another machine, an unpacked archive's user) keeps its runs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import torch

from attnverify.empirics.config import Batch, TaskConfig, is_int, require

FILES = {"train": "wiki.train.tokens", "valid": "wiki.valid.tokens"}
EOS, UNK = "<eos>", "<unk>"


def corpus_fingerprint(directory: Path) -> str:
    """SHA-256 over the training and validation files (FileNotFoundError naming a missing one)."""
    digest = hashlib.sha256()
    for name in FILES.values():
        path = directory / name
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: a WikiText-format corpus directory "
                                    f"holds {', '.join(FILES.values())}")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _read_text(path: Path) -> str:
    """The file as UTF-8 text; ValueError (one line, naming the file and the first bad byte)
    for anything else, e.g. a binary file."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at "
                         f"offset {exc.start}): a WikiText-format corpus is UTF-8 text") from None


def tokenize(text: str) -> list[str]:
    """Whitespace tokens, ``<eos>`` after every line."""
    return [tok for line in text.splitlines() for tok in (*line.split(), EOS)]


@cache
def load_corpus(directory: str, fingerprint: str) -> tuple[list[str], dict[str, torch.Tensor]]:
    """The vocabulary (sorted by descending count, then alphabetically) and the token-id streams
    of both splits; cached per process. ValueError if the files changed since ``fingerprint``."""
    root = Path(directory)
    found = corpus_fingerprint(root)
    if found != fingerprint:
        raise ValueError(f"the corpus in {root} changed (fingerprint {found}, the run expects "
                         f"{fingerprint}); build the task again with from_directory")
    streams = {split: tokenize(_read_text(root / name)) for split, name in FILES.items()}
    counts: dict[str, int] = {}
    for tok in streams["train"]:
        counts[tok] = counts.get(tok, 0) + 1
    counts.setdefault(UNK, 0)
    vocab = sorted(counts, key=lambda t: (-counts[t], t))
    index = {tok: i for i, tok in enumerate(vocab)}
    ids = {split: torch.tensor([index.get(t, index[UNK]) for t in toks], dtype=torch.long)
           for split, toks in streams.items()}
    return vocab, ids


@dataclass(frozen=True)
class TextCorpusTask(TaskConfig):
    """``text_corpus``: windows of T tokens from a local WikiText-format corpus."""

    kind = "text_corpus"
    code_version = 1
    location_fields = ("directory",)
    directory: str = ""
    T: int = 64
    fingerprint: str = ""

    def validate(self) -> None:
        require(isinstance(self.directory, str) and self.directory != "", "task.directory",
                "a corpus directory", self.directory)
        require(is_int(self.T) and self.T >= 2, "task.T", "an integer >= 2", self.T)
        require(isinstance(self.fingerprint, str) and len(self.fingerprint) == 16,
                "task.fingerprint", "the corpus fingerprint (use from_directory)",
                self.fingerprint)

    @classmethod
    def from_directory(cls, directory: str | Path, T: int = 64) -> TextCorpusTask:
        root = Path(directory).resolve()
        task = cls(directory=str(root), T=T, fingerprint=corpus_fingerprint(root))
        for split, ids in load_corpus(task.directory, task.fingerprint)[1].items():
            require(ids.numel() > T, f"corpus {split} split", f"longer than T = {T} tokens",
                    ids.numel())
        return task

    def vocab_size(self) -> int:
        return len(load_corpus(self.directory, self.fingerprint)[0])

    def _windows(self, split: str, batch_size: int, generator: torch.Generator) -> Batch:
        ids = load_corpus(self.directory, self.fingerprint)[1][split]
        starts = torch.randint(ids.numel() - self.T + 1, (batch_size, 1), generator=generator)
        return {"tokens": ids[starts + torch.arange(self.T)]}                 # (B, T)

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        return self._windows("train", batch_size, generator)

    def sample_eval(self, batch_size: int, generator: torch.Generator) -> Batch:
        return self._windows("valid", batch_size, generator)
