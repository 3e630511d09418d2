"""The one list of training parameters: name, default, type, group and meaning.

Everything that spells parameters out derives from :data:`PARAMS`:

* :class:`BoosterParams` (the dataclass ``train()`` takes) has one field per entry, in
  this order (the order is also the order of ``params`` in a saved model file);
* :data:`TREE_PARAM_NAMES` are the fields of :class:`ltrboost.grower.GrowerParams`;
* :data:`OBJECTIVE_PARAM_NAMES` are passed to the objective when it accepts them;
* the CLI has one flag per entry (``--max-leaf-nodes``);
* :class:`ltrboost.sklearn.Ranker` keeps an explicit keyword-only ``__init__``
  (scikit-learn inspects its signature), and a test checks it against this list.

Groups: ``"engine"`` (the boosting loop), ``"tree"`` (one tree's growth),
``"early_stopping"`` and ``"objective"`` (None there means the objective's own default).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple


class Param(NamedTuple):
    name: str
    default: Any
    annotation: str  # the field's type, as written in the dataclass (the CLI parses it)
    group: str  # "engine" | "tree" | "early_stopping" | "objective"
    doc: str


PARAMS: tuple[Param, ...] = (
    Param(
        "objective",
        "lambdamart",
        "str",
        "engine",
        "registered objective name (Python: or a callable, docs/custom.md)",
    ),
    Param("n_estimators", 100, "int", "engine", "boosting rounds (one tree per output)"),
    Param(
        "learning_rate",
        None,
        "float | None",
        "engine",
        "shrinkage eta; None: the objective's default (0.1, or 1.0 for gbrank)",
    ),
    Param("max_leaf_nodes", 31, "int", "tree", "leaves per tree"),
    Param("max_depth", None, "int | None", "tree", "None: unlimited"),
    Param("min_samples_leaf", 20, "int", "tree", "documents per leaf, at least"),
    Param(
        "min_sum_hessian_in_leaf",
        1e-3,
        "float",
        "tree",
        "hessian sum per leaf, at least (a tree that is its root alone under it: value 0)",
    ),
    Param("l2_regularization", 0.0, "float", "tree", "lambda in -G/(H+lambda)"),
    Param(
        "min_gain_to_split",
        0.0,
        "float",
        "tree",
        "a node splits only with a gain above this (0: any positive gain)",
    ),
    Param("max_bins", 255, "int", "engine", "value bins per feature (2..255) + missing"),
    Param(
        "min_samples_bin",
        3,
        "int",
        "engine",
        "documents a bin of a low-cardinality feature must hold (min_data_in_bin)",
    ),
    Param("split_criterion", "newton", "str", "tree", '"newton" | "se" | "ole"'),
    Param(
        "ole_top_features",
        None,
        "int | None",
        "tree",
        'approximate "ole": eq. 13 over only the k features of best Newton gain at each '
        "node (fewer pair histograms); None: exact OLE over every feature",
    ),
    Param(
        "growth",
        "best_first",
        "str",
        "tree",
        '"best_first" | "breadth_first" | "depth_first"',
    ),
    Param("subsample", 1.0, "float", "engine", "fraction of queries per round"),
    Param(
        "colsample_bytree",
        1.0,
        "float",
        "engine",
        "fraction of the feature columns per tree (constant and absent columns count)",
    ),
    Param("random_state", 0, "int", "engine", "seed of every random draw"),
    Param(
        "random_strength",
        0.0,
        "float",
        "engine",
        "CatBoost's random_strength: Gaussian noise on every candidate split's score when "
        "a node's split is chosen, its scale shrinking as the model grows (0: off; "
        "ltrboost.splitting.split_noise_sigma)",
    ),
    Param(
        "quantized_gradients",
        0,
        "int",
        "engine",
        "LightGBM's use_quantized_grad with num_grad_quant_bins=k: histograms from "
        "gradients stochastically rounded to k levels (faster; leaf values from the exact "
        "gradients); 0: off (exact); k in 2..255 (ltrboost.quantize)",
    ),
    Param(
        "n_threads",
        None,
        "int | None",
        "engine",
        "None, 0 or negative: OMP_NUM_THREADS, else all cores under the CPU quota; "
        "more: capped (never changes the model)",
    ),
    Param(
        "early_stopping_rounds",
        None,
        "int | None",
        "early_stopping",
        "stop after this many rounds without improvement of the first metric",
    ),
    Param(
        "eval_metric",
        None,
        "str | list[str] | None",
        "early_stopping",
        "metrics on the validation sets; None: the objective's default",
    ),
    Param(
        "sigma",
        None,
        "float | None",
        "objective",
        "sigmoid scale of pairwise losses (None: 1.0)",
    ),
    Param(
        "lambda_metric",
        None,
        "str | None",
        "objective",
        'LambdaMART\'s Z: "ndcg", "err", "map" (None: "ndcg")',
    ),
    Param(
        "truncation_level",
        None,
        "int | None",
        "objective",
        "pairs with a document in the top k; 0: every pair (None: 30, not every pair)",
    ),
    Param(
        "pair_method",
        None,
        "str | None",
        "objective",
        '"all" | "topk" | "sampled" (None: "topk" for lambdamart, "all" for ranknet and rankboost)',
    ),
    Param(
        "pairs_per_sample",
        None,
        "int | None",
        "objective",
        "pairs drawn per document (sampled) (None: 1)",
    ),
    Param(
        "lambda_normalization",
        None,
        "bool | None",
        "objective",
        "LightGBM's lambdarank normalisation (None: True)",
    ),
    Param(
        "gain",
        None,
        "str | None",
        "objective",
        '"exp" (2^y - 1) | "linear" (y) (None: "exp"; also the metrics\' gain)',
    ),
    Param(
        "relevance_threshold",
        None,
        "float | None",
        "objective",
        "binary relevance y >= this (None: 1; also the metrics')",
    ),
    Param(
        "positive_threshold",
        None,
        "float | None",
        "objective",
        "logistic_rank positives y >= this (None: max(1, ceil(max grade / 2)))",
    ),
    Param(
        "label_scale",
        None,
        "Any",
        "objective",
        "logistic_rank scale per grade, {grade: scale} or [scale, ...]; unnamed grades "
        "get 1 (None: y - positive_threshold + 1 for positives, 1 for negatives)",
    ),
    Param(
        "tau",
        None,
        "Any",
        "objective",
        'pair margin (None: 0.1 for gbrank, "grade_difference" for qbrank)',
    ),
    Param(
        "preference_weight",
        None,
        "float | None",
        "objective",
        "qbrank's w (pairs part) (None: 0.5)",
    ),
    Param(
        "use_label_pairs",
        None,
        "bool | None",
        "objective",
        "pairs from labels too, with explicit pairs (None: whenever there are labels)",
    ),
    Param(
        "permutations",
        None,
        "int | None",
        "objective",
        "yetirank: noisy permutations per query and round (None: 10)",
    ),
    Param(
        "decay",
        None,
        "float | None",
        "objective",
        "yetirank: pair-weight decay down a permutation (None: 0.85)",
    ),
    Param(
        "unbiased",
        None,
        "bool | None",
        "objective",
        "lambdamart: Unbiased LambdaMART from clicks with positions (None: False)",
    ),
    Param(
        "position_bias_norm",
        None,
        "float | None",
        "objective",
        "unbiased: regularisation exponent p, t = ratio**(1/(1+p)) (None: 0.5)",
    ),
    Param(
        "max_positions",
        None,
        "int | None",
        "objective",
        "unbiased: positions tracked; deeper ones share the last (None: 32)",
    ),
)

PARAM_NAMES: tuple[str, ...] = tuple(p.name for p in PARAMS)
DEFAULTS: dict[str, Any] = {p.name: p.default for p in PARAMS}
TREE_PARAM_NAMES: tuple[str, ...] = tuple(p.name for p in PARAMS if p.group == "tree")
OBJECTIVE_PARAM_NAMES: tuple[str, ...] = tuple(p.name for p in PARAMS if p.group == "objective")
# by type (the annotation's first member), for the type checks of ltrboost._checks
INT_PARAM_NAMES: tuple[str, ...] = tuple(
    p.name for p in PARAMS if p.annotation.split(" |")[0] == "int"
)
REAL_PARAM_NAMES: tuple[str, ...] = tuple(
    p.name for p in PARAMS if p.annotation.split(" |")[0] == "float"
)
# The largest random_state: the per-query streams (yetirank, xendcg, sampled pairs) take
# their seeds modulo 2**62 (objectives.pair_selection.SEED_MODULUS), so a larger one
# would be another seed's in disguise.
MAX_RANDOM_STATE = 2**62 - 1


def check_random_state_range(random_state: Any) -> None:
    """Refuse an integer seed above :data:`MAX_RANDOM_STATE` (``random_state=2**64``
    silently gave seed 0's yetirank, xendcg and sampled-pairs models), naming the range."""
    if int(random_state) > MAX_RANDOM_STATE:
        raise ValueError(
            f"random_state={random_state} must be at most 2**62 - 1 (the per-query "
            "random streams of yetirank, xendcg and sampled pairs take seeds modulo 2**62)"
        )


# integer parameters whose None means their default (``random_state=None``: seed 0, as
# ``Ranker(random_state=None)`` and LightGBM's / XGBoost's None); resolved by
# ``booster.as_params``, so the model records the seed it was trained with
NONE_MEANS_DEFAULT: tuple[str, ...] = ("random_state",)
BOOL_PARAM_NAMES: tuple[str, ...] = tuple(
    p.name for p in PARAMS if p.annotation.split(" |")[0] == "bool"
)


# LightGBM's and XGBoost's names of ltrboost's parameters (README's table), for the
# error of a ported parameter dict
_OTHER_NAMES: dict[str, str] = {
    **{
        k: f"{k} is {v} here"
        for names, v in (
            (("num_iterations", "num_boost_round", "num_trees", "num_round"), "n_estimators"),
            (("eta", "shrinkage_rate"), "learning_rate"),
            (("num_leaves", "max_leaves"), "max_leaf_nodes"),
            (("min_data_in_leaf", "min_child_samples"), "min_samples_leaf"),
            (("min_child_weight",), "min_sum_hessian_in_leaf"),
            (("lambda_l2", "reg_lambda", "lambda"), "l2_regularization"),
            (("min_split_gain", "gamma", "min_split_loss"), "min_gain_to_split"),
            (("max_bin",), "max_bins"),
            (("min_data_in_bin",), "min_samples_bin"),
            (("grow_policy",), "growth"),
            (("bagging_fraction",), "subsample"),
            (("feature_fraction",), "colsample_bytree"),
            (("seed", "random_seed"), "random_state"),
            (("num_threads", "n_jobs", "nthread"), "n_threads"),
            (("early_stopping_round",), "early_stopping_rounds"),
            (("metric",), "eval_metric"),
            (("sigmoid",), "sigma"),
            (("lambdarank_truncation_level",), "truncation_level"),
            (("lambdarank_pair_method",), "pair_method"),
            (("lambdarank_norm", "lambdarank_normalization"), "lambda_normalization"),
        )
        for k in names
    },
    # gain takes "exp" or "linear", not these parameters' values: say which is which
    "label_gain": (
        "label_gain is gain here, which names LightGBM's two usual lists: gain='exp' "
        "is its default label_gain 2^i - 1, gain='linear' the list 0, 1, 2, ...; there "
        "is no list of per-grade gains (for NDCG, train on the labels label_gain[y] "
        "with gain='linear': README, 'gain')"
    ),
    "ndcg_exp_gain": (
        "ndcg_exp_gain is gain here: ndcg_exp_gain=True is gain='exp', "
        "ndcg_exp_gain=False is gain='linear'"
    ),
    **{
        k: (
            f"{k}: the cut-off is part of the metric name here: metric='ndcg' with "
            f"{k}=[5] is eval_metric='ndcg@5' (several: 'ndcg@1,ndcg@5')"
        )
        for k in ("eval_at", "ndcg_eval_at", "ndcg_at", "map_eval_at", "map_at")
    },
    **{
        k: f"{k}: ltrboost has no L1 regularisation (l2_regularization is L2's)"
        for k in ("reg_alpha", "lambda_l1", "alpha")
    },
    # LightGBM's quantised training is one parameter here (README's table)
    **{
        k: (
            f"{k} is quantized_gradients here: use_quantized_grad=True with "
            "num_grad_quant_bins=k is quantized_gradients=k (k in 2..255; LightGBM's "
            "default k is 4), use_quantized_grad=False is quantized_gradients=0"
        )
        for k in ("use_quantized_grad", "num_grad_quant_bins")
    },
    "quant_train_renew_leaf": (
        "quant_train_renew_leaf is always on with quantized_gradients: leaf values come "
        "from the exact gradients; there is no switch"
    ),
    "bagging_by_query": (
        "bagging_by_query is always on here: subsample draws whole queries (LightGBM's "
        "bagging_fraction with bagging_by_query=True is subsample)"
    ),
    "lambdarank_num_pair_per_sample": (
        "lambdarank_num_pair_per_sample is truncation_level here under "
        "pair_method='topk' (XGBoost's default), pairs_per_sample under 'sampled'"
    ),
}


class ParameterWarning(UserWarning):
    """A warning whose message names training parameters by their Python names; the
    CLI prints each as its flag.

    The convention of these messages (and of :class:`ParameterError`'s): a parameter is
    written ``name=value`` (``decay=0.5``, CLI ``--decay=0.5``) or ``name[...]``, or
    bare when its name has an underscore (``raise colsample_bytree``, CLI ``raise
    --colsample-bytree``): such a word always means the parameter.  A one-word name
    (``permutations``, ``gain``) is bare English, so a message that means the
    parameter gives it with its value (``lower permutations=10``)."""


class ParameterError(ValueError):
    """A ValueError whose message names training parameters as :class:`ParameterWarning`'s
    does: the Python API reads ``min_samples_leaf``, the CLI ``--min-samples-leaf``."""


class _BoosterParamsMethods:
    """Methods of :class:`BoosterParams` (its fields come from :data:`PARAMS`)."""

    def validate(self) -> None:
        """Raise ValueError naming the first parameter of a wrong type (integers must
        be integers: ``1.5`` and ``True`` are refused; reals finite real numbers) or
        out of range."""
        from ltrboost._checks import check_param_types
        from ltrboost.criteria import CRITERIA
        from ltrboost.grower import GROWTH_POLICIES

        def check(cond: bool, msg: str) -> None:
            if not cond:
                raise ValueError(msg)

        check_param_types(self)  # integers, finite reals, booleans; then the ranges

        check(
            int(self.n_estimators) >= 1,
            f"n_estimators={self.n_estimators} must be >= 1",
        )
        check(
            self.learning_rate is None
            or (math.isfinite(self.learning_rate) and self.learning_rate > 0),
            f"learning_rate={self.learning_rate} must be > 0",
        )
        check(
            int(self.max_leaf_nodes) >= 2,
            f"max_leaf_nodes={self.max_leaf_nodes} should not be smaller than 2",
        )
        check(
            self.max_depth is None or int(self.max_depth) >= 1,
            f"max_depth={self.max_depth} must be >= 1 or None (None: no limit, LightGBM's "
            "max_depth <= 0)",
        )
        check(
            int(self.min_samples_leaf) >= 1,
            f"min_samples_leaf={self.min_samples_leaf} must be >= 1",
        )
        check(
            self.min_sum_hessian_in_leaf >= 0,
            f"min_sum_hessian_in_leaf={self.min_sum_hessian_in_leaf} must be >= 0",
        )
        check(
            self.l2_regularization >= 0,
            f"l2_regularization={self.l2_regularization} must be >= 0",
        )
        check(
            math.isfinite(self.min_gain_to_split) and self.min_gain_to_split >= 0,
            f"min_gain_to_split={self.min_gain_to_split} must be finite and >= 0",
        )
        check(
            2 <= int(self.max_bins) <= 255,
            f"max_bins={self.max_bins} must be in [2, 255]",
        )
        check(
            int(self.min_samples_bin) >= 1,
            f"min_samples_bin={self.min_samples_bin} must be >= 1",
        )
        check(
            self.split_criterion in CRITERIA,
            f"split_criterion={self.split_criterion!r} is not one of {CRITERIA}",
        )
        check(
            self.ole_top_features is None or int(self.ole_top_features) >= 1,
            f"ole_top_features={self.ole_top_features} must be >= 1 or None",
        )
        check(
            self.growth in GROWTH_POLICIES,
            f"growth={self.growth!r} is not one of {GROWTH_POLICIES}",
        )
        check(0 < self.subsample <= 1, f"subsample={self.subsample} must be in (0, 1]")
        check(
            0 < self.colsample_bytree <= 1,
            f"colsample_bytree={self.colsample_bytree} must be in (0, 1]",
        )
        check(
            self.quantized_gradients == 0 or 2 <= self.quantized_gradients <= 255,
            f"quantized_gradients={self.quantized_gradients} must be 0 (exact gradients) "
            "or a number of levels in 2..255 (LightGBM's num_grad_quant_bins; 4 is its "
            "default)",
        )
        check(
            self.random_strength >= 0,
            f"random_strength={self.random_strength} must be >= 0 (0: no noise on the "
            "split scores)",
        )
        check(
            self.truncation_level is None or int(self.truncation_level) >= 0,
            f"truncation_level={self.truncation_level} must be >= 0 (0: every pair) or None "
            "(the objective's default)",
        )
        check(  # NumPy's generator refused it later, naming no parameter
            self.random_state is None or int(self.random_state) >= 0,
            f"random_state={self.random_state} must be >= 0 (it seeds every random draw)",
        )
        if self.random_state is not None:  # the per-query streams wrapped a larger one
            check_random_state_range(self.random_state)
        check(
            self.early_stopping_rounds is None or int(self.early_stopping_rounds) >= 1,
            f"early_stopping_rounds={self.early_stopping_rounds} must be >= 1 or None",
        )

    @classmethod
    def from_dict(cls, params: dict[str, Any]):
        """Build from a dict, refusing unknown names (a typo must not pass silently); a
        LightGBM or XGBoost name of README's parameter table (``num_leaves``,
        ``num_grad_quant_bins``) is refused naming the parameter it is here."""
        unknown = sorted(set(params) - set(PARAM_NAMES))
        if unknown:
            hints = [_OTHER_NAMES[k] for k in unknown if k in _OTHER_NAMES]
            raise ValueError(
                f"unknown parameter(s) {unknown}"
                + "".join(f"; {h}" for h in hints)
                + f"; valid: {sorted(PARAM_NAMES)}"
            )
        return cls(**params)

    def objective_kwargs(self) -> dict[str, Any]:
        """The objective parameters that were set (None: the objective's default)."""
        return {k: getattr(self, k) for k in OBJECTIVE_PARAM_NAMES if getattr(self, k) is not None}

    def tree_kwargs(self) -> dict[str, Any]:
        """The parameters of one tree's growth, as :class:`GrowerParams` takes them."""
        out = {}
        for p in PARAMS:
            if p.group != "tree":
                continue
            v = getattr(self, p.name)
            if v is not None and p.annotation.startswith("int"):
                v = int(v)
            elif v is not None and p.annotation.startswith("float"):
                v = float(v)
            out[p.name] = v
        return out


BoosterParams = dataclasses.make_dataclass(
    "BoosterParams",
    [(p.name, p.annotation, dataclasses.field(default=p.default)) for p in PARAMS],
    bases=(_BoosterParamsMethods,),
)
BoosterParams.__module__ = __name__
BoosterParams.__doc__ = (
    "Every training parameter, with its default (names follow scikit-learn's HGB).\n\n"
    "One field per entry of :data:`ltrboost.params.PARAMS`, in that order:\n\n"
    + "\n".join(f"* ``{p.name}`` = ``{p.default!r}``: {p.doc}" for p in PARAMS)
    + "\n\nEarly stopping uses the first metric of ``eval_metric`` on the first "
    "validation set.  ``truncation_level=0`` means all pairs.  ``random_state=None`` "
    "is the default seed 0 (as ``Ranker(random_state=None)``): training records 0."
)
