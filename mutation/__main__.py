"""`python -m mutation` (what `make mutation` runs): see mutation/run.py."""

import sys

from mutation.run import main

sys.exit(main())
