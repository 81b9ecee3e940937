"""Logistic regression, shared by the learned entity model and the relation scorer: fitting and the logistic function.

One fitting path: both models fit an L2-regularised logistic regression with scikit-learn (L-BFGS,
deterministic: the same rows give the same weights on the same machine and package versions) over
sparse features, and store it as feature -> weight, rounded, with the intercept in ``bias``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

DECIMALS = 4
"""Decimals the stored weights keep (a smaller model file; a probability moves by less than 1e-4 per weight)."""


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


def rounded(weights: Mapping[str, float]) -> dict[str, float]:
    """Round weights to [`DECIMALS`][pipeline.nlp.logistic.DECIMALS] places, dropping those that round to 0.

    Args:
        weights: Feature -> weight.

    Returns:
        The rounded non-zero weights, sorted by feature.
    """
    return {f: round(w, DECIMALS) for f, w in sorted(weights.items()) if round(w, DECIMALS)}


def fit_logistic(rows: Sequence[tuple[Mapping[str, float], int]], c: float) -> dict[str, float]:
    """Fit an L2 logistic regression (scikit-learn ``LogisticRegression``, L-BFGS) on sparse rows.

    Args:
        rows: ``(feature -> value, label 0/1)`` per example.
        c: Inverse L2 strength (scikit-learn's ``C``); the intercept is not penalised.

    Returns:
        Feature -> weight, rounded ([`rounded`][pipeline.nlp.logistic.rounded]), the intercept added to
            ``bias``.  With a single label, or no feature, a constant model: ``bias`` alone, the log-odds of
            the label rate (clipped to [0.001, 0.999]).  No side effect.
    """
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    labels = [y for _x, y in rows]
    names = sorted({f for x, _y in rows for f in x})
    if len(set(labels)) < 2 or not names:
        # nothing to separate, or nothing to separate it by (a tiny training set): a constant model
        rate = min(max(sum(labels) / max(1, len(labels)), 1e-3), 1 - 1e-3)
        return {"bias": round(math.log(rate / (1 - rate)), DECIMALS)}
    column = {f: j for j, f in enumerate(names)}
    data, indices, indptr = [], [], [0]
    for x, _y in rows:
        for f, v in sorted(x.items(), key=lambda kv: column[kv[0]]):
            data.append(v)
            indices.append(column[f])
        indptr.append(len(indices))
    matrix = csr_matrix((data, indices, indptr), shape=(len(rows), len(names)))
    model = LogisticRegression(C=c, max_iter=5000, tol=1e-6).fit(matrix, labels)
    weights = {f: float(w) for f, w in zip(names, model.coef_[0], strict=True)}
    weights["bias"] = weights.get("bias", 0.0) + float(model.intercept_[0])
    return rounded(weights)
