"""``python -m citegraph.cli``."""

import sys

from citegraph.cli import main

sys.exit(main())
