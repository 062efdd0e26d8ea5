"""Retrieval questions in words, for a pretrained language model (Mușat 2024, §3 of the spec:
the LLM prompting experiment; Figure 1's retrieval question).

A question holds ``chains`` chains of ``depth`` statements each (D = the links of the queried
chain, as in the training task): a root statement gives the chain's first entity a value, and
every later statement points an entity at the one before it. All statements are shuffled; the
question asks for the value of the queried chain's last entity and offers the ``chains`` roots
as its options (multiple choice, chance 1/chains, four options as in the paper's F1-F4).

The paper's five templates are not known (the spec marks them [U]); the two formulations here
are reconstructions [R] in the flavour of Figure 1: ``assignment`` (``A = 7``, ``B = A``, "What
is the value of B?") and ``residence`` ("Alice lives in Oslo.", "Bob lives where Alice lives.",
"Where does Bob live?").

Chance is exact: the queried chain is drawn uniformly, the roots' values are a uniformly random
draw without replacement and the options are shuffled, so any answer rule that does not follow
the chain is right with probability exactly 1/chains.
"""

from __future__ import annotations

import itertools
import string
from dataclasses import dataclass

import numpy as np

ASSIGNMENT_VALUES = tuple(string.digits)
PERSONS = (
    "Alice", "Bob", "Carol", "David", "Emma", "Frank", "Grace", "Henry", "Irene", "Jack",
    "Karen", "Leo", "Maria", "Nick", "Olga", "Paul", "Quinn", "Rosa", "Sam", "Tina", "Umar",
    "Vera", "Walter", "Xenia", "Yusuf", "Zoe", "Anna", "Boris", "Clara", "Dmitri", "Elena",
    "Felix", "Greta", "Hugo", "Ida", "Jonas", "Kira", "Lars", "Mila", "Nora", "Oscar", "Petra",
    "Ralf", "Sara", "Tom", "Ulla", "Victor", "Wanda", "Yara", "Zack", "Amir", "Bella", "Caleb",
    "Dora", "Emil", "Fiona", "Gus", "Hanna", "Ivan", "Julia", "Kurt", "Lena", "Marco", "Nina",
    "Otto", "Pia", "Rex", "Sofia", "Theo", "Una", "Vince", "Willa", "Yves", "Zara", "Arthur",
    "Beth", "Cyril", "Diana", "Eric", "Flora")
CITIES = ("Oslo", "Paris", "Rome", "Lima", "Cairo", "Delhi", "Tokyo", "Quito", "Dakar", "Seoul",
          "Madrid", "Vienna", "Prague", "Dublin", "Lisbon", "Athens")


def _variable_names() -> tuple[str, ...]:
    """A..Z, then AA..ZZ: enough distinct variables for 4 chains of depth 160."""
    letters = string.ascii_uppercase
    return tuple(letters) + tuple(a + b for a, b in itertools.product(letters, repeat=2))


VARIABLES = _variable_names()


@dataclass(frozen=True)
class Formulation:
    """How a question is worded: entity and value pools, the statements, the question and the
    start of the answer that each option completes."""

    name: str
    number: int
    """Its part of the questions' seed: fixed per formulation, so that adding one changes no
    other formulation's questions."""
    entities: tuple[str, ...]
    values: tuple[str, ...]
    root: str
    """Format of a root statement, with ``{entity}`` and ``{value}``."""
    link: str
    """Format of a link statement, with ``{entity}`` and ``{source}``."""
    question: str
    """Format of the question line, with ``{entity}`` and ``{options}``."""
    answer: str
    """Format of the answer's start, with ``{entity}``; each option completes it after a space."""
    preamble: str = ""


FORMULATIONS = {
    "assignment": Formulation(
        name="assignment", number=0, entities=VARIABLES, values=ASSIGNMENT_VALUES,
        preamble="Each line assigns a variable.",
        root="{entity} = {value}", link="{entity} = {source}",
        question="Question: What is the value of {entity}? Choose one of {options}.",
        answer="Answer: The value of {entity} is"),
    "residence": Formulation(
        name="residence", number=1, entities=PERSONS, values=CITIES,
        preamble="Each line says where somebody lives.",
        root="{entity} lives in {value}.", link="{entity} lives where {source} lives.",
        question="Question: Where does {entity} live? Choose one of {options}.",
        answer="Answer: {entity} lives in"),
}
"""The formulations by name (reconstructions [R]; the paper's templates are unknown)."""


@dataclass(frozen=True)
class RetrievalQuestion:
    """One multiple-choice question: the prompt (statements, question, the answer's start), the
    options (each continues the prompt after a space) and the index of the right one."""

    prompt: str
    options: tuple[str, ...]
    correct: int
    depth: int


def max_depth(formulation: str, chains: int) -> int:
    """The largest D whose ``chains`` chains find distinct entities in the formulation."""
    return len(FORMULATIONS[formulation].entities) // chains


def check_question_sizes(formulation: str, depth: int, chains: int) -> None:
    """ValueError naming what a question cannot have (an unknown formulation, D < 1, fewer than
    2 chains, more chains than values, more entities than the formulation has)."""
    if formulation not in FORMULATIONS:
        raise ValueError(f"unknown formulation {formulation!r}; accepted: "
                         f"{', '.join(FORMULATIONS)}")
    values = FORMULATIONS[formulation].values
    if not 2 <= chains <= len(values):
        raise ValueError(f"chains must be between 2 and {len(values)} (the {formulation} "
                         f"formulation's values); got {chains}")
    if not 1 <= depth <= max_depth(formulation, chains):
        raise ValueError(f"depth must be between 1 and {max_depth(formulation, chains)} for "
                         f"{chains} chains in the {formulation} formulation; got {depth}")


def make_question(formulation: str, depth: int, chains: int,
                  rng: np.random.Generator) -> RetrievalQuestion:
    """One question with ``chains`` chains of ``depth`` statements, shuffled; the queried chain,
    the entities, the roots' values and the options' order are drawn from ``rng``."""
    check_question_sizes(formulation, depth, chains)
    form = FORMULATIONS[formulation]
    names = [form.entities[i] for i in rng.choice(len(form.entities), chains * depth,
                                                   replace=False)]
    roots = [form.values[i] for i in rng.choice(len(form.values), chains, replace=False)]
    statements = []
    for c in range(chains):
        chain = names[c * depth:(c + 1) * depth]
        statements.append(form.root.format(entity=chain[0], value=roots[c]))
        statements += [form.link.format(entity=entity, source=source)
                       for source, entity in itertools.pairwise(chain)]
    order = rng.permutation(len(statements))
    queried = int(rng.integers(chains))
    target = names[queried * depth + depth - 1]
    option_order = rng.permutation(chains)
    options = tuple(roots[i] for i in option_order)
    lines = [form.preamble] if form.preamble else []
    lines += [statements[i] for i in order]
    lines.append(form.question.format(entity=target, options=", ".join(options)))
    lines.append(form.answer.format(entity=target))
    return RetrievalQuestion(prompt="\n".join(lines), options=options,
                             correct=int(np.flatnonzero(option_order == queried)[0]),
                             depth=depth)


def make_questions(formulation: str, depth: int, chains: int, n: int,
                   seed: int) -> list[RetrievalQuestion]:
    """``n`` questions from one generator seeded by (seed, depth, formulation): a cell's
    questions do not depend on which other cells are asked."""
    check_question_sizes(formulation, depth, chains)
    rng = np.random.default_rng([seed, depth, FORMULATIONS[formulation].number])
    return [make_question(formulation, depth, chains, rng) for _ in range(n)]
