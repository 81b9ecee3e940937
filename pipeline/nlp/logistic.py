"""The logistic function, shared by the learned entity model and the relation scorer."""

from __future__ import annotations

import math


def sigmoid(z: float) -> float:
    """Compute the logistic function without overflow.

    Args:
        z: A logit.

    Returns:
        ``1 / (1 + exp(-z))``, computed from ``exp(z)`` for a negative ``z`` so that neither branch overflows.
    """
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)
