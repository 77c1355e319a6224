import sys

from recjudge_utils._startup import skip_iri_format_check

skip_iri_format_check()  # before the book's imports reach jsonschema

from recjudge_utils.book.cli import main  # noqa: E402

sys.exit(main())
