"""Building a WikiText-layout corpus from local documents: the markup that goes, the layout,
the splits, <unk>, determinism, and that the Bao task reads the result."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnverify.compare.cli.entry import main
from attnverify.empirics import TextCorpusTask
from attnverify.empirics.tasks.wikitext_layout import build_wikitext, prose_paragraphs, tokens_of

REST = """\
Section title
=============

The :func:`inspect.getmembers` function returns *all* the members, ``quickly``.
It spans two lines.

.. note::
   A directive body that goes.

An example follows::

    code = "dropped"
    more = code

Back to prose, well-known and don't-care.
"""


def test_rest_markup_is_dropped():
    assert prose_paragraphs(REST) == [
        "Section title",
        "The inspect.getmembers function returns all the members, quickly. It spans two lines.",
        "An example follows:",
        "Back to prose, well-known and don't-care.",
    ]


def test_table_borders_go_and_their_cells_stay():
    border = "=====  ==========\n"
    simple = f"{border}Name   Meaning\n{border}temp   degrees\n{border}"
    grid = "+------+------+\n| a    | b    |\n+======+======+\n"
    assert prose_paragraphs(simple) == ["Name   Meaning", "temp   degrees"]
    assert prose_paragraphs(grid) == ["a    | b"]
    assert prose_paragraphs("Prose with = signs = stays.\n") == ["Prose with = signs = stays."]


def test_tokens_split_punctuation_and_keep_inner_hyphens():
    assert tokens_of("Well-known, isn't it (3.5)?") == [
        "Well-known", ",", "isn't", "it", "(", "3", ".", "5", ")", "?"]


def write_documents(root: Path, n: int = 12) -> Path:
    root.mkdir()
    for i in range(n):
        words = " ".join(f"common word{i % 3} rare{i}" for _ in range(20))
        (root / f"doc_{i:02d}.rst.txt").write_text(f"Doc {i}\n=====\n\n{words}.\n\nSecond "
                                                   f"paragraph of document {i}.\n")
    (root / "ignored.html").write_text("<p>not read</p>")
    return root


def test_layout_splits_and_unk(tmp_path):
    src = write_documents(tmp_path / "src")
    summary = build_wikitext([src], tmp_path / "corpus", min_count=30)
    files = {p.name for p in (tmp_path / "corpus").iterdir()}
    assert files == {"wiki.train.tokens", "wiki.valid.tokens", "wiki.test.tokens"}
    assert sum(summary.documents.values()) == 12 and min(summary.documents.values()) >= 1
    train = (tmp_path / "corpus" / "wiki.train.tokens").read_text()
    headings = [line for line in train.splitlines() if line.startswith(" = ")]
    assert len(headings) == summary.documents["train"] and all(h.endswith(" = ")
                                                               for h in headings)
    assert "<unk>" in train and "common" in train
    assert "rare3" not in train  # 20 occurrences < min_count 30
    assert 0 < summary.unk_share < 1
    task = TextCorpusTask.from_directory(tmp_path / "corpus", T=4)
    assert task.vocab_size() == summary.vocabulary


def test_same_seed_same_files_other_seed_other_split(tmp_path):
    src = write_documents(tmp_path / "src")
    build_wikitext([src], tmp_path / "a", seed=0)
    build_wikitext([src], tmp_path / "b", seed=0)
    build_wikitext([src], tmp_path / "c", seed=1)
    read = lambda d: (tmp_path / d / "wiki.valid.tokens").read_bytes()  # noqa: E731
    assert read("a") == read("b")
    assert read("a") != read("c")


@pytest.mark.parametrize(("make", "message"), [
    (lambda root: root.mkdir(), "no .txt or .rst files"),
    (lambda root: write_documents(root, n=2), "the three splits need at least 3"),
])
def test_bad_sources_are_one_line_errors(tmp_path, capsys, make, message):
    make(tmp_path / "src")
    assert main(["corpus", str(tmp_path / "src"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_cli_writes_and_summarises(tmp_path, capsys):
    src = write_documents(tmp_path / "src")
    assert main(["corpus", str(src), "--out", str(tmp_path / "out")]) == 0
    assert "tokens in" in capsys.readouterr().out
    with pytest.raises(ValueError, match="min_count"):
        build_wikitext([src], tmp_path / "x", min_count=0)
