"""``python -m dpacct``: the command line (see :mod:`dpacct.cli`)."""

import sys

from dpacct.cli import main

sys.exit(main())
