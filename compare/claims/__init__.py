"""Importing this package registers every claim, paper by paper, in report order."""

from compare.claims import snell  # noqa: F401
