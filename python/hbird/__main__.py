"""python3 -m hbird: the same command line as the hbird console script."""
import sys

from .cli import main

sys.exit(main())
