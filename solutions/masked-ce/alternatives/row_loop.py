"""masked_ce one row at a time in plain Python floats (math.fsum), as a loop-minded learner writes it."""

import math


def masked_ce(logits, y, mask, eps=0.1, T=1.0):
    total, count = 0.0, 0
    for row, label, keep in zip(logits, y, mask):
        if not keep:
            continue
        z = [float(v) / T for v in row]
        top = max(z)
        lse = top + math.log(math.fsum(math.exp(v - top) for v in z))
        logp = [v - lse for v in z]
        total += (1 - eps) * -logp[int(label)] + eps * -math.fsum(logp) / len(logp)
        count += 1
    return total / count if count else 0.0
