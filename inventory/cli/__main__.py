"""`python -m inventory.cli`, the same as the `inventory` script."""

import sys

from inventory.cli import main

sys.exit(main())
