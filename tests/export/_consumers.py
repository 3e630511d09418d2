"""Independent evaluators of exported files, from the consumers' documented rules.

Solr and RankLib are Java and cannot run here; these small evaluators follow their
classes (cited per function) and never call ltrboost's export code.  Also: probe rows
placed at, just below and just above every split threshold, and per-query ranking
checks.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np

F32 = np.float32


def our_leaves(booster, X) -> list[np.ndarray]:
    """Per tree (booster order), the ltrboost node index of the leaf of each row."""
    out = []
    Xd = np.asarray(X, dtype=np.float64)
    for nodes in booster.trees:
        leaf = np.empty(Xd.shape[0], dtype=np.int64)
        for i in range(Xd.shape[0]):
            k = 0
            while not nodes[k]["is_leaf"]:
                x = Xd[i, nodes[k]["feature_idx"]]
                if np.isnan(x):
                    go = bool(nodes[k]["missing_go_to_left"])
                else:
                    go = x <= nodes[k]["num_threshold"]
                k = nodes[k]["left"] if go else nodes[k]["right"]
            leaf[i] = k
        out.append(leaf)
    return out


def probe_rows(booster, X, max_rows: int = 4000, seed: int = 0) -> np.ndarray:
    """float32 rows: ``X`` plus, for every split, copies of a few rows with the split's
    feature set to the float32 just below / at / just above the threshold and NaN."""
    X = np.asarray(X, dtype=np.float32)
    rng = np.random.default_rng(seed)
    rows = [X]
    for nodes in booster.trees:
        for nd in nodes[nodes["is_leaf"] == 0]:
            t = float(nd["num_threshold"])
            with np.errstate(over="ignore"):
                m = F32(t)  # then the largest float32 <= t
                if float(m) > t:
                    m = np.nextafter(m, F32(-np.inf))
                up = np.nextafter(m, F32(np.inf))
                vals = [m, np.nextafter(m, F32(-np.inf)), up, F32(np.nan)]
            vals = [v for v in vals if not np.isinf(v)]
            base = X[rng.integers(0, X.shape[0], size=len(vals))].copy()
            base[np.arange(len(vals)), int(nd["feature_idx"])] = vals
            rows.append(base)
    out = np.concatenate(rows)
    if out.shape[0] > max_rows:
        keep = np.r_[
            np.arange(X.shape[0]),
            rng.choice(
                np.arange(X.shape[0], out.shape[0]),
                max_rows - X.shape[0],
                replace=False,
            ),
        ]
        out = out[np.sort(keep)]
    return out


def assert_same_rankings(ours, theirs, qid, tol: float) -> None:
    """Within each query, any two documents whose ltrboost scores differ by more than
    ``tol`` are in the same order in the consumer's scores (tol=0: exact ties too)."""
    ours = np.asarray(ours, dtype=np.float64)
    theirs = np.asarray(theirs, dtype=np.float64)
    for q in np.unique(qid):
        idx = np.flatnonzero(qid == q)
        a, b = ours[idx], theirs[idx]
        d_ours = a[:, None] - a[None, :]
        d_theirs = b[:, None] - b[None, :]
        strict = np.abs(d_ours) > tol
        assert np.all(np.sign(d_ours[strict]) == np.sign(d_theirs[strict])), q
        if tol == 0:
            assert np.all((d_ours == 0) == (d_theirs == 0)), q


# --- Solr: org.apache.solr.ltr.model.MultipleAdditiveTreesModel ----------------------


def solr_check_schema(body: dict) -> None:
    assert body["class"] == "org.apache.solr.ltr.model.MultipleAdditiveTreesModel"
    assert isinstance(body["name"], str)
    assert body["name"]
    names = [f["name"] for f in body["features"]]
    assert len(set(names)) == len(names)
    params = body["params"]
    assert params["isNullSameAsZero"] is False
    assert isinstance(params["trees"], list)
    assert params["trees"]

    def node(n: dict) -> None:
        if "feature" not in n:  # a leaf (RegressionTreeNode.isLeaf: feature == null)
            assert set(n) == {"value"}
            float(n["value"])
            return
        assert set(n) == {"feature", "threshold", "missing", "left", "right"}
        assert n["feature"] in names
        float(n["threshold"])
        assert n["missing"] in ("left", "right")
        node(n["left"])
        node(n["right"])

    for t in params["trees"]:
        assert set(t) == {"weight", "root"}
        float(t["weight"])
        node(t["root"])


def solr_score(body: dict, X) -> np.ndarray:
    """MultipleAdditiveTreesModel.score in float32: threshold = parseFloat + 1e-6f
    (setThreshold), left when x <= threshold (scoreNode), NaN follows "missing"
    (isNullSameAsZero=false), tree score = weight * value, model score = float sum."""
    names = [f["name"] for f in body["features"]]
    index = {n: i for i, n in enumerate(names)}
    slack = F32(1e-6)
    X = np.asarray(X, dtype=np.float32)
    out = np.zeros(X.shape[0], dtype=np.float32)
    for t in body["params"]["trees"]:
        w = F32(float(t["weight"]))
        for i in range(X.shape[0]):
            n = t["root"]
            while "feature" in n:
                x = X[i, index[n["feature"]]]
                if np.isnan(x):
                    go = n["missing"] == "left"
                else:
                    go = x <= F32(F32(float(n["threshold"])) + slack)
                n = n["left"] if go else n["right"]
            out[i] = F32(out[i] + F32(w * F32(float(n["value"]))))
    return out


# --- RankLib: ciir.umass.edu.learning.tree.Ensemble / RegressionTree / Split ----------


def ranklib_parse(text: str) -> list[tuple[float, ET.Element]]:
    lines = text.splitlines()
    assert lines[0] in ("## LambdaMART", "## MART")
    body = "\n".join(ln for ln in lines if not ln.startswith("##"))
    root = ET.fromstring(body)
    assert root.tag == "ensemble"
    trees = []
    for k, tree in enumerate(root, start=1):
        assert tree.tag == "tree"
        assert int(tree.get("id")) == k
        (split,) = list(tree)
        trees.append((float(tree.get("weight")), split))
    return trees


def _ranklib_check(split: ET.Element, n_features: int) -> None:
    kids = {c.tag for c in split}
    if "output" in kids:
        assert kids == {"output"}
        return
    assert kids == {"feature", "threshold", "split"}
    fid = int(split.find("feature").text)
    assert 1 <= fid <= n_features
    float(split.find("threshold").text)
    pos = [c.get("pos") for c in split.findall("split")]
    assert pos == ["left", "right"]
    for c in split.findall("split"):
        _ranklib_check(c, n_features)


def ranklib_check_schema(text: str, n_features: int) -> None:
    for _, split in ranklib_parse(text):
        _ranklib_check(split, n_features)


def ranklib_score(text: str, X) -> np.ndarray:
    """Ensemble.eval: sum of weight * tree output (double); Split.eval goes left when
    the float feature value <= the float threshold; feature ids are 1-based; an absent
    feature is 0 (NaN is given as 0 here; a value beyond float32's range stays
    +-Infinity, as Float.parseFloat reads it)."""
    X = np.asarray(X, dtype=np.float32)
    X = np.where(np.isnan(X), F32(0.0), X)
    out = np.zeros(X.shape[0], dtype=np.float64)
    for w, root in ranklib_parse(text):
        for i in range(X.shape[0]):
            s = root
            while s.find("output") is None:
                fid = int(s.find("feature").text)
                thr = F32(float(s.find("threshold").text))
                left, right = s.findall("split")
                s = left if X[i, fid - 1] <= thr else right
            out[i] += float(F32(w)) * float(s.find("output").text)
    return out


def load_json(path) -> object:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


# --- Vespa: ai.vespa.rankingexpression.importer.xgboost / lightgbm ---------------------


def vespa_xgboost_score(dump: list, names: list[str], X, float_split: bool) -> np.ndarray:
    """Vespa's ``xgboost("model.json")``: each tree becomes ``if (f < v, yes, no)`` (``if
    (!(f >= v), yes, no)`` when ``missing == yes``, so NaN goes to ``yes``, else to
    ``no``), evaluated in double.  ``v`` is the JSON number parsed as a double (the
    ``XGBoostParser`` of Vespa before 8.5xx) or that double rounded to float
    (``AbstractXGBoostParser``: ``(float) node.getSplit_condition()``); leaves are doubles."""
    index = {n: i for i, n in enumerate(names)}
    X = np.asarray(X, dtype=np.float64)
    out = np.zeros(X.shape[0], dtype=np.float64)
    for tree in dump:
        for i in range(X.shape[0]):
            n = tree
            while "leaf" not in n:
                v = float(n["split_condition"])
                if float_split:
                    v = float(F32(v))
                x = X[i, index[n["split"]]]
                if n["missing"] == n["yes"]:
                    go_yes = not (x >= v)
                else:
                    go_yes = bool(x < v)
                want = n["yes"] if go_yes else n["no"]
                n = next(c for c in n["children"] if c["nodeid"] == want)
            out[i] += float(n["leaf"])
    return out


# --- OpenSearch LTR model/xgboost+json+raw: XGBoostRawJsonParser --------------------------


def opensearch_raw_score(model: dict, X) -> np.ndarray:
    """``XGBoostRawJsonParser``: a node is a split when both children are not -1, NaN
    follows ``default_left``, else ``x < split_conditions`` (float32) goes left; a leaf's
    value is its ``base_weights`` entry (not ``split_conditions``); trees summed with
    weight 1 in float32, ``base_score`` ignored; features by name in the feature set."""
    learner = model["learner"]
    assert all(t == "float" for t in learner["feature_types"])
    # XGBoostObjective.setName's raw (NOOP) names; it refuses any but these and the
    # sigmoid ones
    raw = ("binary:logitraw", "rank:ndcg", "rank:map", "rank:pairwise", "reg:linear")
    assert learner["objective"]["name"] in raw
    X = np.asarray(X, dtype=np.float32)
    out = np.zeros(X.shape[0], dtype=np.float32)
    for tree in learner["gradient_booster"]["model"]["trees"]:
        left, right = tree["left_children"], tree["right_children"]
        for i in range(X.shape[0]):
            k = 0
            while left[k] != -1 and right[k] != -1:
                x = X[i, tree["split_indices"][k]]
                if np.isnan(x):
                    go = tree["default_left"][k] == 1
                else:
                    go = x < F32(tree["split_conditions"][k])
                k = left[k] if go else right[k]
            out[i] = F32(out[i] + F32(tree["base_weights"][k]))
    return out
