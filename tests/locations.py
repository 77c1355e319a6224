"""Where the tests' files are, from any test module under ``tests/`` (they sit in folders mirroring the package)."""

from pathlib import Path

#: the tests folder
TESTS = Path(__file__).resolve().parent
#: the repository's root
ROOT = TESTS.parent
#: the fixtures every test folder reads
FIXTURES = TESTS / "fixtures"
