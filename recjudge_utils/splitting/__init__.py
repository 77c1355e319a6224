"""Splitting interactions into training and evaluation data, in one place (see :mod:`.temporal`)."""
