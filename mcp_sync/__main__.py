"""`python -m mcp_sync`: the `mcp-sync` command line (see `mcp_sync._cli`)."""

import sys

from ._cli import main

sys.exit(main())
