"""``python -m ltrboost.cli`` runs the CLI, as ``python -m ltrboost`` does (it ran
``cli.py`` before the CLI was a package)."""

import sys

from ltrboost.cli import main

sys.exit(main())
