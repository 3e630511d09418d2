"""``python -m ltrboost`` runs the CLI."""

import sys

from ltrboost.cli import main

sys.exit(main())
