"""masked_ce by torch's own loss: select the counted rows, then F.cross_entropy with label_smoothing."""

import numpy as np
import torch
import torch.nn.functional as F


def masked_ce(logits, y, mask, eps=0.1, T=1.0):
    counted = torch.from_numpy(np.asarray(mask) != 0)
    if not bool(counted.any()):
        return 0.0  # F.cross_entropy of an empty batch is the NaN of a 0 / 0 mean
    z = torch.from_numpy(np.asarray(logits))[counted] / T
    target = torch.from_numpy(np.asarray(y)).long()[counted]
    return float(F.cross_entropy(z, target, label_smoothing=eps))
