"""``python -m attnverify.compare.cli``: the ``attnverify`` command."""

import sys

from attnverify.compare.cli import main

sys.exit(main())
