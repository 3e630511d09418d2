"""Hand-made trees for tests of the tree readers (contributions, prediction): one
builder shared by the test files that need it (tests/ is on ``sys.path`` under pytest's
default import mode)."""

from __future__ import annotations

import numpy as np

from ltrboost._config import NODE_DTYPE


def nodes_from_spec(spec):
    """A tree from ``[(feature, threshold, missing_left, left, right, count) | (value,
    count)]``, node 0 the root."""
    nodes = np.zeros(len(spec), dtype=NODE_DTYPE)
    for k, s in enumerate(spec):
        if len(s) == 2:
            nodes[k]["value"], nodes[k]["count"] = s
            nodes[k]["is_leaf"] = 1
            nodes[k]["feature_idx"] = -1
            nodes[k]["left"] = nodes[k]["right"] = -1
        else:
            f, t, m, lft, rgt, c = s
            nodes[k]["feature_idx"], nodes[k]["num_threshold"] = f, t
            nodes[k]["missing_go_to_left"] = m
            nodes[k]["left"], nodes[k]["right"], nodes[k]["count"] = lft, rgt, c
    depth = np.zeros(len(spec), dtype=np.int32)
    for k in range(len(spec)):
        if not nodes[k]["is_leaf"]:
            depth[nodes[k]["left"]] = depth[nodes[k]["right"]] = depth[k] + 1
    nodes["depth"] = depth
    return nodes


# A feature split twice on one path (TreeSHAP's unwinding case), NaN routed both ways, a
# leaf no training document reached (count 0).
REPEATED_FEATURE_TREE = [
    (0, 0.0, 1, 1, 2, 10),
    (1, 0.5, 0, 3, 4, 6),
    (0, 1.0, 0, 5, 6, 4),
    (2.0, 4),
    (0, -1.0, 1, 7, 8, 2),
    (-1.0, 3),
    (0.5, 1),
    (3.0, 2),
    (-4.0, 0),
]
