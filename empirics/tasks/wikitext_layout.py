"""Turn a folder of English plain-text or reStructuredText documents into a corpus in the
WikiText layout that :class:`~attnverify.empirics.tasks.text_corpus.TextCorpusTask` reads, for the
Bao language-model claims when WikiText-2 itself is not at hand (it cannot be downloaded at run
time).

The layout follows WikiText-2's (Merity et al. 2016): one document after another, each opened by
a `` = Title = `` line, one paragraph per line, tokens separated by spaces (words, numbers and
each punctuation mark a token of its own, hyphens and apostrophes inside words kept), every
token seen fewer than ``min_count`` times in the training split replaced by ``<unk>`` in all
splits. Documents, not lines, go to the splits (about 90 / 5 / 5 % of the tokens, in an order
drawn with ``seed``), so no document is split across training and validation.

What is dropped from reStructuredText sources: directive and comment blocks (lines from
``..`` and their indented body), literal blocks (the indented body after a line ending in
``::``), section underlines and table borders (lines of punctuation only), and inline markup
characters that are not prose (``:role:`target``` becomes ``target``, backquotes and ``*``
emphasis marks go). What stays is the prose of the paragraphs, lists and tables.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from attnverify.empirics.store.output_paths import write_atomic
from attnverify.empirics.tasks.text_corpus import EOS, UNK

SPLITS = {"train": "wiki.train.tokens", "valid": "wiki.valid.tokens",
          "test": "wiki.test.tokens"}
SUFFIXES = (".txt", ".rst")
TOKEN = re.compile(r"[A-Za-z0-9]+(?:['\-][A-Za-z0-9]+)*|[^\sA-Za-z0-9]")
ROLE = re.compile(r":[\w:+-]+:`([^`<]*?)(?:\s*<[^>]*>)?`")
_PUNCT = "[=\\-~^\"'`#*+.:_|]"
RULE = re.compile(rf"^\s*(?:{_PUNCT}{{3,}}|{_PUNCT}{{2,}}(?=\s+\S))(?:\s+{_PUNCT}+)*\s*$")
"""A section underline or overline, a transition, or a table border (grid: ``+---+---+``;
simple: ``==  =====``, runs separated by spaces, the first of 2 or more). A lone ``::``
(a literal block's start) is not one."""
MARKUP = re.compile(r"``|`_*|\*\*|(?<!\w)\*|\*(?!\w)")


@dataclass(frozen=True)
class CorpusSummary:
    """What :func:`build_wikitext` wrote: tokens per split (``<eos>`` not counted), documents
    per split, the vocabulary size as :class:`TextCorpusTask` builds it and the share of
    ``<unk>`` in the training split."""

    tokens: dict[str, int]
    documents: dict[str, int]
    vocabulary: int
    unk_share: float

    def text(self) -> str:
        per_split = ", ".join(f"{split} {self.tokens[split]:,} tokens in "
                              f"{self.documents[split]} documents" for split in SPLITS)
        return (f"{per_split}; vocabulary {self.vocabulary:,} (as the task reads it: with "
                f"<unk>, <eos> and the heading mark =), <unk> "
                f"{self.unk_share:.1%} of the training tokens")


def source_files(sources: Sequence[Path]) -> list[Path]:
    """Every ``.txt`` / ``.rst`` file under ``sources`` (files or folders), sorted; ValueError
    naming the sources when there is none."""
    found: set[Path] = set()
    for source in sources:
        if source.is_file():
            found.add(source)
        elif source.is_dir():
            found.update(p for p in source.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
        else:
            raise ValueError(f"{source} does not exist")
    if not found:
        raise ValueError(f"no .txt or .rst files in {', '.join(map(str, sources))}")
    return sorted(found)


def prose_paragraphs(text: str) -> list[str]:
    """The paragraphs of a plain-text or reStructuredText document, markup dropped (module
    docstring), each as one line of text."""
    paragraphs: list[str] = []
    current: list[str] = []
    skip_indent: int | None = None  # inside a directive or literal block: its base indent
    for raw in text.splitlines():
        line = raw.rstrip()
        indent = len(line) - len(line.lstrip())
        if skip_indent is not None:
            if not line or indent > skip_indent:
                continue
            skip_indent = None
        stripped = line.strip()
        if not stripped or RULE.match(line):
            if current:
                paragraphs.append(" ".join(current))
                current = []
            continue
        if stripped.startswith(".."):
            skip_indent = indent
            if current:
                paragraphs.append(" ".join(current))
                current = []
            continue
        literal = stripped.endswith("::")
        if literal:
            skip_indent = indent
            stripped = stripped[:-2].rstrip() + (":" if stripped != "::" else "")
        stripped = MARKUP.sub("", ROLE.sub(r"\1", stripped)).strip("|").strip()
        if stripped:
            current.append(stripped)
        if literal and current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return paragraphs


def tokens_of(paragraph: str) -> list[str]:
    return TOKEN.findall(paragraph)


def _document(path: Path) -> tuple[str, list[list[str]]]:
    text = path.read_text(encoding="utf-8", errors="replace")
    title = path.name.split(".")[0].replace("_", " ").replace("-", " ")
    return title, [tokens for p in prose_paragraphs(text) if (tokens := tokens_of(p))]


def _lines(documents: Iterable[tuple[str, list[list[str]]]], vocab: set[str]) -> str:
    out = []
    for title, paragraphs in documents:
        heading = " ".join(t if t in vocab else UNK for t in tokens_of(title))
        out += ["", f" = {heading} = ", ""]
        out += [" " + " ".join(t if t in vocab else UNK for t in tokens) + " "
                for tokens in paragraphs]
    return "\n".join(out) + "\n"


def build_wikitext(sources: Sequence[Path], out: Path, min_count: int = 3,
                   seed: int = 0) -> CorpusSummary:
    """Write ``wiki.{train,valid,test}.tokens`` into ``out`` (created if missing) from the
    documents under ``sources``; returns what was written (module docstring)."""
    if min_count < 1:
        raise ValueError(f"min_count must be >= 1; got {min_count!r}")
    documents = [doc for path in source_files(sources) if (doc := _document(path))[1]]
    if len(documents) < 3:
        raise ValueError(f"{len(documents)} documents with prose found; the three splits "
                         f"need at least 3")
    random.Random(seed).shuffle(documents)
    sizes = [sum(map(len, paragraphs)) for _, paragraphs in documents]
    total, running = sum(sizes), 0
    split_of = []
    for size in sizes:
        share = running / total
        split_of.append("train" if share < 0.9 else "valid" if share < 0.95 else "test")
        running += size
    for split in ("test", "valid"):  # every split gets a document; the first stays in train
        if split not in split_of:
            last_train = max(i for i, s in enumerate(split_of) if s == "train")
            split_of[last_train if split == "valid" else -1] = split
    parts = {split: [d for d, s in zip(documents, split_of, strict=True) if s == split]
             for split in SPLITS}
    counts = Counter(t for _, paragraphs in parts["train"] for tokens in paragraphs
                     for t in tokens)
    vocab = {t for t, c in counts.items() if c >= min_count}
    out.mkdir(parents=True, exist_ok=True)
    for split, name in SPLITS.items():
        write_atomic(out / name, _lines(parts[split], vocab))
    train_tokens = sum(counts.values())
    unknown = sum(c for t, c in counts.items() if t not in vocab)
    return CorpusSummary(
        tokens={split: sum(len(t) for _, ps in parts[split] for t in ps) for split in SPLITS},
        documents={split: len(parts[split]) for split in SPLITS},
        vocabulary=len(vocab | {UNK, EOS, "="}),
        unk_share=unknown / train_tokens if train_tokens else 0.0)
