"""The ``attnverify`` command line (docs/cli.md).

    attnverify verify [--paper P] [--claim ID ...] [--profile smoke|quick|full] [--out DIR]
                      [--executor local|dask-local|dask://HOST:PORT] [--workers N] [--cache DIR]
                      [--device cpu|cuda] [--claim ID --param NAME=VALUE ...] [--dry-run]
    attnverify predict PAPER.QUANTITY --NAME VALUE ...
    attnverify falsify CLAIM [--budget N] [--profile P] [--max-cost SECONDS] [--seed S] [--out DIR]
                      [--device cpu|cuda]
    attnverify figures [--profile P] [--out DIR]
    attnverify bench [--json FILE] [--families F,...] [--configs quick,full] [--verify] [--compile]
    attnverify claims [--json]
    attnverify --version
    attnverify runs list | show KEY | export [--format csv|json] [--out FILE] | pack | unpack
                   | migrate | rm KEY | clear

One module per subcommand (``verify``, ``predict``, ``falsify``, ``figures``, ``bench``,
``claims``, ``runs`` with ``runs_archive``), each with ``add_parser`` (its options) and ``run``;
:mod:`.parser` puts them together, :mod:`.entry` runs one. What several share is in
:mod:`.common`, the checks of what a user types in :mod:`.inputs`, and the one grammar of
``NAME=VALUE`` values (``predict`` arguments, ``verify --param``) in :mod:`.values`.

User errors print one line on stderr naming the problem and the accepted values and exit with 2,
without a traceback and without writing anything; an option that takes one value refuses a
second one. Refuted claims are results: exit 0.
"""

from attnverify.compare.cli.entry import main
from attnverify.compare.cli.inputs import UserError
from attnverify.compare.cli.parser import build_parser

__all__ = ["UserError", "build_parser", "main"]
