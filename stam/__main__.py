import sys

from stam.cli import main

sys.exit(main())
