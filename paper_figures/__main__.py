"""``python -m attnverify.paper_figures``: the same as ``attnverify figures``."""

import sys

from attnverify.compare.cli import main

sys.exit(main(["figures", *sys.argv[1:]]))
