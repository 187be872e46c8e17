import sys

from editspec.cli import main

sys.exit(main())
