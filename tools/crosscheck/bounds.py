"""How finely "A is no farther from the float64 truth than B" can be decided, and how far apart two
results that are each near the truth can be (docs/crosscheck.md, "transformers").

The truth's logits and gradients are stored as F32: each element is the float64 value rounded once,
so the float64 truth lies within half an ulp of what is stored. A distance measured against the
stored truth is therefore only known to within what that rounding can move it:

- max |d logit|: +- h, h = half an ulp of the largest |truth logit| (triangle inequality, exact);
- a gradient's relative error: +- 2^-24 (1 + e) (each element rounded with relative error <= 2^-24);
- per-position KL(P_truth || P): to leading order its derivative in the truth's logits is
  p_j (d_j - KL) with d = log p - log q, so a shift of at most h moves it by at most
  h E_p|d - KL| <= h sqrt(Var_p d) ~= h sqrt(2 KL); plus a second-order term < h^2. Over positions
  the max moves by at most h sqrt(2 KL_max) + h^2 and the mean (Jensen) by h sqrt(2 KL_mean) + h^2.

A is farther than B only when A's figure exceeds B's by more than both resolutions together.
Standard library only (tests/cli/reference_transformers.sh runs it with any python3).
"""
import math

F32_REL = 2.0 ** -24


def logit_half_ulp(truth_logits):
    import numpy as np  # only here: the CLI test uses the rest with a bare python3
    m = float(np.max(np.abs(truth_logits)))
    return float(np.spacing(np.float32(m))) / 2.0


def kl_resolution(kl, h):
    return h * math.sqrt(2.0 * max(kl, 0.0)) + h * h


def no_farther(metric, a, b, h):
    """(ok, allowed, resolution) for "a is no farther from the truth than b" on one metric
    ('kl_mean', 'kl_max', 'max_abs_logit_diff', 'grad_max_rel_err', 'grad_global_rel_err')."""
    if metric.startswith("kl_"):
        res = kl_resolution(a, h) + kl_resolution(b, h)
    elif metric == "max_abs_logit_diff":
        res = 2.0 * h
    else:
        res = F32_REL * (2.0 + a + b)
    return a <= b + res, b + res, res


def between(metric, a, b):
    """The largest distance between two results whose distances to the same point are a and b:
    max |d logit|, |d loss| add (triangle inequality); gradient relative errors add, over the
    second result's norm (1 - b) instead of the point's; per-position KL, to second order half the
    p-weighted variance of the log-ratio, obeys Minkowski: sqrt(KL) adds (also for the mean:
    Cauchy-Schwarz)."""
    if metric.startswith("kl_"):
        return (math.sqrt(max(a, 0.0)) + math.sqrt(max(b, 0.0))) ** 2
    if metric.startswith("grad_"):
        return (a + b) / (1.0 - b)
    return a + b
