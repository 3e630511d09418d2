"""``NUMBA_DISABLE_JIT=1`` (Numba's debugging switch): ltrboost imported and trained with
every kernel as plain Python used to fail at import of the engine (a dispatcher's cache
was looked up on a plain function) and then at the histogram's vector-add intrinsic; now
it trains the models the compiled kernels train."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

SRC = str(Path(__file__).resolve().parents[1] / "src")

SCRIPT = r"""
import json, sys
import numpy as np
from ltrboost import Ranker
from ltrboost.datasets import make_ranking
X, y, q = make_ranking(8, (4, 8), 4, missing_rate=0.1, random_state=3)[:3]
out = {}
for name, params in json.loads(sys.argv[1]).items():
    m = Ranker(n_estimators=2, min_samples_leaf=2, **params).fit(X, y, qid=q)
    out[name] = m.predict(X).tolist()
print(json.dumps(out))
"""

CONFIGS = {  # the pair path (OLE) and the noisy split search; plain Python is slow
    "lambdamart_ole": {"split_criterion": "ole"},
    "ranknet_noise": {"objective": "ranknet", "random_strength": 1.0},
}


def _run(disable_jit: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": SRC, "LTRBOOST_BACKGROUND_COMPILE": "0"}
    env.pop("NUMBA_DISABLE_JIT", None)
    if disable_jit:
        env["NUMBA_DISABLE_JIT"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(CONFIGS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_training_without_jit_gives_the_compiled_models():
    plain = _run(disable_jit=True)
    compiled = _run(disable_jit=False)
    assert plain.keys() == compiled.keys()
    for name in CONFIGS:
        np.testing.assert_allclose(plain[name], compiled[name], rtol=1e-12, atol=1e-12)
