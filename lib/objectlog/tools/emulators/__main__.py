import sys

from objectlog.tools.emulators.run import main

sys.exit(main())
