import sys

from recjudge_utils.book.cli import main

sys.exit(main())
