import sys

from stam.cli import console_main

sys.exit(console_main())
