"""The built-in claims, in report order (paper by paper). The registry
(:mod:`attnverify.compare.registry`) registers :data:`BUILTIN` when it is first asked for a
claim; the claims never import the registry, so there is no import cycle between them."""

from attnverify.compare.claims import bao, musat, snell

BUILTIN = (*snell.CLAIMS, *musat.CLAIMS, *bao.CLAIMS)
"""Every built-in claim class, in report order."""

__all__ = ["BUILTIN", "bao", "musat", "snell"]
