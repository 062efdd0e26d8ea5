"""Importing this package registers every claim (the report orders them paper by paper,
see :func:`compare.registry.select`)."""

from compare.claims import bao, musat, snell

__all__ = ["bao", "musat", "snell"]
