import sys

from ablate.cli import main

sys.exit(main())
