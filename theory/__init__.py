"""Closed-form and numeric predictions of the three papers (numpy, scipy, sympy; never torch).

>>> import theory
>>> theory.snell.kappa(V=60, L=40).value
0.005649717514124294
"""

from attnverify.theory import bao, musat, snell
from attnverify.theory.prediction import Prediction
from attnverify.theory.registry import QUANTITIES, predict

__all__ = ["QUANTITIES", "Prediction", "bao", "musat", "predict", "snell"]
