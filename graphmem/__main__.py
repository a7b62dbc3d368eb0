"""`python -m graphmem` is the `graphmem` command."""

import sys

from graphmem.cli import main

sys.exit(main())
