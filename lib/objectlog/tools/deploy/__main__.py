"""``python -m objectlog.tools.deploy``: see objectlog.tools.deploy.cli."""

import sys

from objectlog.tools.deploy.cli import main

sys.exit(main())
