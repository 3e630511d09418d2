"""The experiment protocol of Xia, Zhai & Wang (seed 000), as one resumable command.

Systems {``mcrank``, ``lambdamart``, ``ranknet``} x split criteria {``se``, ``ole``} x
leaves {10, 20} x learning rates {0.06, 0.10, 0.12}, up to 1000 (LambdaMART, RankNet) /
2500 (McRank) trees or a user cap, on every ``FoldK/{train,vali,test}.txt`` (or
``SeedK/...``, see :func:`write_synthetic_folds`; LETOR 3.0's
``FoldK/{trainingset,validationset,testset}.txt`` too) below a folder.  Each cell (system,
criterion, leaves, learning rate, fold) trains once with the validation and test files
evaluated after every tree (NDCG@1/3/10 and ERR); the reported number is the test metric
at the iteration with the best validation NDCG@10.

``patience=N`` stops a cell N rounds after its best validation NDCG@10 (the engine's
``early_stopping_rounds``).  The reported iteration is then the full run's unless
validation NDCG@10 would have improved again after N rounds without improvement: the
best is tracked with the same strict ``>`` (first maximum) in both cases.

RankNet is pairwise like LambdaMART, so under ``"ole"`` its trees use the exact pairwise
hessian correction of eq. 13 of the seed (``PairTerms`` from the objective, see
:meth:`ltrboost.booster.Training.ole_pairs`); McRank is pointwise, where OLE equals
RWSE/Newton (Theorem 1).

The report folder holds:

* ``cells/*.json`` -- one finished cell each (the run resumes by skipping them; one
  made with other settings, or from fold files of other sizes, is an error);
* ``iterations.csv`` -- every metric at every iteration for every cell;
* ``table.md`` -- the paper's Table 2/3 layout: SE / OLE per cell (mean over folds),
  improvements of OLE over SE above 0.1 point (0.001; exactly 0.1 point is not)
  marked with ``*``;
* ``ole_minus_se_<system>.png`` -- OLE - SE of test NDCG@10 per iteration (Figure 2),
  when matplotlib is installed;
* ``final_loss.csv`` -- the objective's training loss at the final iteration, the time,
  the best iteration and the trees trained;
* ``ole_minus_se.csv`` -- the mean OLE - SE curves of test NDCG@10 (one column per
  system, leaves and learning rate), small enough to commit when ``iterations.csv``
  is not;
* ``paired.md`` / ``paired.json`` -- the paired test of OLE - SE (:func:`paired_test`;
  the interval and p-value of fewer than two units, e.g. of one fold, are ``nan`` in
  ``paired.md`` and ``null`` in ``paired.json``).
"""

from __future__ import annotations

import contextlib
import csv
import glob
import io
import itertools
import json
import os
import re
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltrboost.io._atomic import atomic_write_files, atomic_write_text

METRICS = ("ndcg@1", "ndcg@3", "ndcg@10", "err")
# The paper's caps; RankNet (not in the paper) gets LambdaMART's, the other pairwise one.
DEFAULT_TREES = {"lambdamart": 1000, "mcrank": 2500, "ranknet": 1000}
SYSTEMS = ("mcrank", "lambdamart", "ranknet")


@dataclass(frozen=True)
class Cell:
    system: str
    criterion: str
    leaves: int
    learning_rate: float
    fold: str

    @property
    def key(self) -> str:
        lr = rate_text(self.learning_rate)
        return f"{self.system}_{self.criterion}_L{self.leaves}_lr{lr}_{self.fold}"


def rate_text(lr: float) -> str:
    """A learning rate as cell files and the report name it: ``{lr:g}`` (``0.1``,
    ``1``), or the exact ``repr`` when 6 digits do not tell it from its neighbours
    (``0.1000001``), so that two cells never share a file or a row label."""
    short = f"{lr:g}"
    return short if float(short) == lr else repr(float(lr))


def fold_sort_key(name: str) -> tuple:
    """Sort key of a fold's name in natural order, its numbers as numbers: ``Fold2``
    before ``Fold10`` (as text, a 10-fold set ran and was reported as Fold1, Fold10,
    Fold2, ...).  Only ASCII digits count as a number; equal numbers written
    differently (``Fold01``, ``Fold1``) keep a fixed order by their text."""
    parts = re.split(r"([0-9]+)", name)
    # odd positions are the numbers: text and numbers alternate, so two keys compare
    # text with text and numbers with numbers
    return (tuple(int(p) if k % 2 else p for k, p in enumerate(parts)), name)


# A fold's three files (train, validation, test) as the releases name them: LETOR 4.0
# (MQ2007/MQ2008), MSLR-WEB10K/30K, Istella-S and ``ltrboost generate``; LETOR 3.0
# (OHSUMED, TD2003/2004, HP/NP2003/2004).
FOLD_FILE_NAMES = (
    ("train.txt", "vali.txt", "test.txt"),
    ("trainingset.txt", "validationset.txt", "testset.txt"),
)

# The endings of a fold's files still compressed (train.txt.gz): not read, not skipped.
_PACKED = (".gz", ".bz2", ".xz", ".zst", ".zip", ".7z")

# What a folder without a fold is told about the layouts read.
_LAYOUTS = (
    "experiment reads FoldK/ (or SeedK/) folders, or FOLDS_DIR itself, holding "
    "train.txt, vali.txt, test.txt (LETOR 4.0, MSLR-WEB, Istella-S) or trainingset.txt, "
    "validationset.txt, testset.txt (LETOR 3.0)"
)


def _fold_files(d: str) -> tuple[str, str, str] | None:
    """The train, validation and test files of the fold folder ``d`` (one naming of
    :data:`FOLD_FILE_NAMES`), None when it holds none of them; ValueError when it holds
    some of a naming but not all (an interrupted copy must not shrink the mean over
    folds unseen) or all of two (which three are the fold is not for us to guess).
    A file of these names that is there but is no regular file (a broken link, a
    folder, a FIFO) is a ValueError too: it made the fold "without" it, or, all three
    so, no fold at all, skipped unsaid (a fold of links to a disk that is gone)."""
    for names in FOLD_FILE_NAMES:
        for f in names:
            problem = _not_a_data_file(os.path.join(d, f))
            if problem is not None:
                raise ValueError(f"{os.path.join(d, f)}: {problem}")
    found = [[os.path.isfile(os.path.join(d, f)) for f in names] for names in FOLD_FILE_NAMES]
    complete = [names for names, ok in zip(FOLD_FILE_NAMES, found, strict=True) if all(ok)]
    if len(complete) > 1:
        raise ValueError(
            f"{d}: holds both {', '.join(complete[0])} and {', '.join(complete[1])}: "
            "move one set of files out of the fold"
        )
    if complete:
        a, b, c = (os.path.join(d, f) for f in complete[0])
        return a, b, c
    packed = [
        f + ext
        for names in FOLD_FILE_NAMES
        for f in names
        for ext in _PACKED
        if os.path.isfile(os.path.join(d, f + ext))
    ]
    if packed:  # a fold not yet decompressed was "not a fold": skipped, unsaid
        raise ValueError(
            f"{d}: holds {', '.join(packed)}, compressed; experiment reads the text "
            f"files: decompress {'it' if len(packed) == 1 else 'them'} (gunzip, unxz, ...) "
            "in the fold's folder"
        )
    best = max(range(len(found)), key=lambda k: sum(found[k]))
    if not any(found[best]):
        return None
    missing = [f for f, ok in zip(FOLD_FILE_NAMES[best], found[best], strict=True) if not ok]
    why = ""
    if FOLD_FILE_NAMES[best][1] in missing and len(missing) == 1:
        why = (
            "; the validation file picks each cell's best iteration: for a release "
            "without one (Istella's full set: train.txt and test.txt) split one off "
            "the training file's queries"
        )
    raise ValueError(
        f"{d}: fold without {', '.join(missing)} (each Fold*/ or Seed*/ folder needs "
        f"{', '.join(FOLD_FILE_NAMES[best])}){why}"
    )


def _not_a_data_file(path: str) -> str | None:
    """Why the fold file ``path``, which is there, cannot be read as one (None: it is a
    regular file, a link to one included, or nothing is there)."""
    if os.path.isfile(path) or not os.path.lexists(path):
        return None
    if os.path.islink(path) and not os.path.exists(path):
        return (
            f"a link to {os.readlink(path)}, which does not exist: restore the fold's "
            "file or remove the link"
        )
    if os.path.isdir(path):
        return "is a folder, not a data file"
    return (
        "not a regular file (a FIFO, socket or device?): experiment reads a fold's files "
        "more than once; give the file itself"
    )


def _no_fold_hint(folder: str) -> str:
    """What a folder without a fold holds instead: the Yahoo! challenge's
    ``set1.train.txt ...`` side by side, or a subfolder holding the folds (the folder
    above ``istella-s/sample/``, or ``OHSUMED/`` above ``QueryLevelNorm/``)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return ""
    splits = [n for n in names if re.fullmatch(r".+\.(train|valid|vali|test)\.txt", n)]
    if splits:
        return (
            f"; it holds {', '.join(splits[:6])}{' ...' if len(splits) > 6 else ''} "
            "(the Yahoo! challenge's names): put each set's three files in a folder of its "
            "own as train.txt, vali.txt and test.txt (links will do) and give that folder"
        )
    holders = []
    for name in names:
        sub = os.path.join(folder, name)
        if not os.path.isdir(sub):
            continue
        with contextlib.suppress(ValueError, OSError):
            if _folds_in(sub):
                holders.append(sub)
    if len(holders) == 1:
        return f"; its subfolder {holders[0]} holds folds: give it as FOLDS_DIR"
    if holders:  # LETOR 3.0's Gov/QueryLevelNorm/ holds one data set per subfolder
        more = " ..." if len(holders) > 4 else ""
        return (
            f"; its subfolders {', '.join(holders[:4])}{more} hold folds: give one of "
            "them as FOLDS_DIR (each is a data set of its own)"
        )
    return ""


def _folds_in(folder: str) -> list[tuple[str, str, str, str]]:
    """The folds of :func:`find_folds`, [] when there is none."""
    folds = []
    # escaped: a folder named like a pattern ("runs[1]") is searched as named
    base = glob.escape(folder)

    def in_order(paths: list[str]) -> list[str]:
        return sorted(paths, key=lambda p: fold_sort_key(os.path.basename(p)))

    candidates = (
        in_order(glob.glob(os.path.join(base, "Fold*")))
        or in_order(glob.glob(os.path.join(base, "Seed*")))
        or [folder]
    )
    for d in candidates:
        if os.path.islink(d) and not os.path.exists(d):
            # a link whose target was moved was skipped as "not a fold": the report
            # averaged the other folds, unseen (as a fold missing one file would)
            raise ValueError(
                f"{d}: a link to {os.readlink(d)}, which does not exist: restore the "
                "fold's folder or remove the link"
            )
        paths = _fold_files(d)
        if paths is not None:
            # the folder's own name: "." (a run inside the fold's folder) named its
            # cells "..._..json" and its rows "."
            folds.append((os.path.basename(os.path.abspath(d)), *paths))
    return folds


def find_folds(folder: str) -> list[tuple[str, str, str, str]]:
    """(fold name, train, vali, test) for each ``Fold*`` or ``Seed*`` (or the folder
    itself), in the natural order of their names (:func:`fold_sort_key`).  A fold's
    files are ``train.txt``, ``vali.txt``, ``test.txt`` (LETOR 4.0, MSLR-WEB, Istella-S)
    or ``trainingset.txt``, ``validationset.txt``, ``testset.txt`` (LETOR 3.0).  A fold
    folder holding some of a naming's three files but not all is an error (an
    interrupted copy must not shrink the mean over folds unseen), and so is a
    ``Fold*`` link whose target does not exist, or a folder holding the files
    compressed (``train.txt.gz``: they are not read); a folder holding none is not a
    fold.
    When no fold is found the error says what the folder holds instead (the Yahoo!
    challenge's ``set1.train.txt ...``, subfolders holding the folds)."""
    folds = _folds_in(folder)
    if not folds:
        raise ValueError(f"{folder}: no fold found: {_LAYOUTS}{_no_fold_hint(folder)}")
    return folds


# the folder of finished units that marks each protocol's report
REPORT_MARKS = {"xia": "cells", "qbrank": "folds"}


def check_report_folder(output: str, protocol: str = "xia") -> None:
    """Refuse an empty report path (``os.path.join("", "cells")`` wrote the report into
    the working directory) and a folder holding the other protocol's report (both
    write ``table.md``: the first report was replaced, the folder a mix of both)."""
    if not os.fspath(output):
        raise ValueError("the report folder (--output) is an empty path; give a folder name")
    # a file where the folder (or one above it) would be: makedirs' "cells: Not a
    # directory" named neither the option nor the file in the way
    p = os.path.abspath(output)
    while not os.path.lexists(p) and os.path.dirname(p) != p:
        p = os.path.dirname(p)
    if os.path.lexists(p) and not os.path.isdir(p):
        where = "" if p == os.path.abspath(output) else f" ({p} is a file)"
        raise ValueError(
            f"output={os.fspath(output)!r} names a file, not a folder{where}: the report "
            "is a folder of files; give a folder"
        )
    for other, mark in REPORT_MARKS.items():
        if other != protocol and os.path.isdir(os.path.join(output, mark)):
            raise ValueError(
                f"{output}: holds a --protocol {other} report ({mark}/), whose table.md "
                "this run would replace; write to another --output"
            )


@contextlib.contextmanager
def report_folder(path: str) -> Iterator[str]:
    """Make the report's folder ``path`` (with its missing parents) for the block; if
    the block fails, remove again those of them that are still empty: a run that could
    not complete (a fold it cannot read, an empty ``L1``) must leave no empty
    ``cells/`` or ``folds/`` behind.  A folder that was there before, or that holds a
    finished cell or fold, stays."""
    made = []
    p = os.path.abspath(path)
    while not os.path.lexists(p):
        made.append(p)  # the deepest first
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    os.makedirs(path, exist_ok=True)
    try:
        yield path
    except BaseException:
        for d in made:
            try:
                os.rmdir(d)
            except OSError:  # not empty (a finished cell), or not ours to remove
                break
        raise


def write_synthetic_folds(
    folder: str,
    *,
    n_seeds: int = 3,
    n_train: int = 200_000,
    n_vali: int = 50_000,
    n_test: int = 50_000,
    docs_per_query: tuple[int, int] = (100, 200),
    decimals: int = 4,
) -> list[str]:
    """Write ``Seed1..SeedK/{train,vali,test}.txt`` of an MSLR-like synthetic set.

    Each seed is one draw of :func:`ltrboost.datasets.make_ranking_mslr_like` (136
    features, MSLR's grade skew) with query sizes uniform in ``docs_per_query``; its
    queries are cut in order into train (the first queries holding at least
    ``n_train`` documents), vali (at least ``n_vali``) and test (the rest), so the
    three files share one relevance function.  A query the generator truncated to
    fewer than ``docs_per_query[0]`` documents (the last one) is dropped, so every
    query has at least that many.  Features are rounded to ``decimals`` decimals
    (LETOR files carry 4-6) to keep the files small.

    Returns the seed folders written (each is a fold for :func:`run_experiment`).
    """
    from ltrboost.datasets import make_ranking_mslr_like
    from ltrboost.io.letor import dump_svmlight

    lo, hi = (int(v) for v in docs_per_query)
    if not 1 <= lo <= hi:
        raise ValueError(f"docs_per_query={docs_per_query!r} must be (min, max), 1 <= min <= max")
    for name, v in (("n_seeds", n_seeds), ("n_train", n_train), ("n_vali", n_vali)):
        if int(v) < 1:
            raise ValueError(f"{name}={v} must be >= 1")
    if int(n_test) < 1:
        raise ValueError(f"n_test={n_test} must be >= 1")
    dirs = []
    for seed in range(1, int(n_seeds) + 1):
        # headroom of two queries per part so that no part comes up short
        total = int(n_train) + int(n_vali) + int(n_test) + 6 * hi
        X, y, qid = make_ranking_mslr_like(total, (lo, hi), random_state=seed)
        starts = np.r_[0, np.flatnonzero(np.diff(qid)) + 1]
        ends = np.r_[starts[1:], qid.size]
        keep = (ends - starts) >= lo
        starts, ends = starts[keep], ends[keep]
        sizes = ends - starts
        cum = np.cumsum(sizes)
        cut1 = int(np.searchsorted(cum, n_train)) + 1  # queries in train
        cut2 = int(np.searchsorted(cum, cum[cut1 - 1] + n_vali)) + 1
        cut3 = int(np.searchsorted(cum, cum[cut2 - 1] + n_test)) + 1
        d = os.path.join(folder, f"Seed{seed}")
        os.makedirs(d, exist_ok=True)
        for name, a, b in (("train", 0, cut1), ("vali", cut1, cut2), ("test", cut2, cut3)):
            rows = np.concatenate(
                [np.arange(s0, e0) for s0, e0 in zip(starts[a:b], ends[a:b], strict=True)]
            )
            Xp = np.round(X[rows].astype(np.float64), decimals)
            dump_svmlight(os.path.join(d, f"{name}.txt"), Xp, y[rows], qid[rows])
        dirs.append(d)
    return dirs


def run_experiment(
    folder: str,
    output: str,
    *,
    systems: Sequence[str] = ("mcrank", "lambdamart"),
    criteria: Sequence[str] = ("se", "ole"),
    leaves: Sequence[int] = (10, 20),
    learning_rates: Sequence[float] = (0.06, 0.10, 0.12),
    max_trees: int | None = None,
    growth: str = "breadth_first",
    min_samples_leaf: int = 20,
    n_threads: int | None = None,
    progress: bool = True,
    patience: int | None = None,
    system_params: dict[str, dict] | None = None,
    system_grids: dict[str, tuple[Sequence[int], Sequence[float]]] | None = None,
    na_values: Sequence[str] | None = None,
    n_features: int | None = None,
) -> dict:
    """Run (or resume) the grid and write the report; returns the summary table data.

    Parameters
    ----------
    patience : int or None
        Stop a cell this many rounds after its best validation NDCG@10 (None: train
        every tree).
    system_params : dict, optional
        Extra :class:`~ltrboost.params.BoosterParams` per system, e.g.
        ``{"ranknet": {"pair_method": "topk"}}``.
    system_grids : dict, optional
        ``{system: (leaves, learning_rates)}`` replacing the grid for that system (to
        cut an expensive system to one cell).
    na_values : sequence of str, optional
        Feature values that mean missing (``load_svmlight``'s ``na_values``, e.g.
        ``["NULL"]`` for LETOR 3.0's "Feature-null" files).
    n_features : int, optional
        Read each fold's training file as this many features wide (default: its
        highest feature index), for validation and test files that use higher feature
        indices, as ``ltrboost train --n-features``; the features absent from the
        training file are never split on, so a cell's results are those of a narrower
        read, and finished cells are reused whatever the value.

    A fold whose validation or test file shares query ids with its training file gets
    a ``UserWarning`` (:class:`~ltrboost.io.letor.SharedQueriesWarning`) per such file,
    naming both files and the count (those queries were trained on, unless the ids are
    only per file, as in some LETOR sets); the cells' trainings do not repeat it.
    """
    check_n_features(n_features)
    check_report_folder(output)
    systems, criteria, leaves, learning_rates, grids = _checked_grid(
        systems, criteria, leaves, learning_rates, max_trees, patience, system_grids,
        system_params,
    )  # fmt: skip
    from ltrboost.io.letor import _check_na_values
    from ltrboost.params import BoosterParams

    na_tokens = sorted(set(_check_na_values(na_values)))
    folds = find_folds(folder)
    cells = [
        Cell(s, c, nl, lr, f[0])
        for s in systems
        for c, nl, lr, f in itertools.product(
            criteria, *grids.get(s, (leaves, learning_rates)), folds
        )
    ]

    def cell_params(cell: Cell) -> BoosterParams:
        return BoosterParams(
            objective=cell.system,
            n_estimators=max_trees or DEFAULT_TREES.get(cell.system, 1000),
            learning_rate=cell.learning_rate,
            max_leaf_nodes=cell.leaves,
            split_criterion=cell.criterion,
            growth=growth,
            n_threads=n_threads,
            eval_metric=["ndcg@10", *(m for m in METRICS if m != "ndcg@10")],
            min_samples_leaf=min_samples_leaf,
            early_stopping_rounds=patience,
            **(system_params or {}).get(cell.system, {}),
        )

    def settings(cell: Cell) -> dict:
        # as a cell file records them (a NumPy number as the number it is)
        return _as_recorded(
            {
                "max_trees": max_trees or DEFAULT_TREES.get(cell.system, 1000),
                "patience": patience,
                "growth": growth,
                "min_samples_leaf": min_samples_leaf,
                **(system_params or {}).get(cell.system, {}),
                # the values read as missing change the data (recorded only when given, so
                # that cells from before it was recorded resume)
                **({"na_values": na_tokens} if na_tokens else {}),
            }
        )

    # every cell's parameters checked before the first one trains (hours, on real data)
    for c in cells:
        cell_params(c).validate()
    # and recordable: a value JSON cannot hold failed after the first cell's training
    for s, extra in (system_params or {}).items():
        for k, v in extra.items():
            try:
                _as_recorded(v)
            except TypeError:
                raise ValueError(
                    f"system_params of {s}: {k}={v!r} is not a JSON value, which the cell "
                    "files record (give a number, string, bool or list)"
                ) from None
    cells_dir = os.path.join(output, "cells")
    fold_paths = {f[0]: f[1:] for f in folds}

    def check_cells(during: bool) -> list[Cell]:
        """The cells still to train; those finished must match this run (``during``:
        checked again after the run, whose cells another run may have replaced)."""
        todo = []
        for c in cells:
            path = os.path.join(cells_dir, c.key + ".json")
            if not during and not os.path.exists(path):
                todo.append(c)
                continue
            try:
                paths = fold_paths[c.fold]
                _check_resumed_cell(path, settings(c), data_sizes(paths), data_digests(paths))
            except ValueError as e:
                if not during:
                    raise
                note = f" (it changed during this run: another run writes to {output}?)"
                if isinstance(e, SettingsChanged):
                    raise SettingsChanged(e.path, e.changes, note) from None
                raise ValueError(f"{e}{note}") from None
        return todo

    # a run that cannot complete (a fold it cannot read) leaves no empty folder behind
    with report_folder(cells_dir):
        todo = check_cells(during=False)
        # one fold's cells together: its files are read once (seconds at 200k documents)
        fold_rank = {f[0]: k for k, f in enumerate(folds)}
        todo.sort(key=lambda c: fold_rank[c.fold])
        # every fold still to train read and checked before the first cell trains (a
        # malformed line of the last fold failed after hours of the others' cells); the
        # first fold to train is read last and kept for its cells
        datasets = _check_folds(todo, folds, na_values, cell_params, n_features)
        bar = None
        if progress:
            from ltrboost._progress import progress_bar

            bar = progress_bar(
                "--quiet (progress=False in Python)",
                total=len(cells),
                initial=len(cells) - len(todo),
                unit="cell",
                file=sys.stderr,
            )
        # closed before an error is reported, so that the error gets its own line
        with bar if bar is not None else contextlib.nullcontext():
            for k, cell in enumerate(todo):
                if k > 0 and todo[k - 1].fold != cell.fold:
                    datasets = ()  # the previous fold's data freed before reading the next
                    datasets = _fold_datasets(fold_paths[cell.fold], na_values, n_features)
                with warnings_named(f"cell {cell.key}"):
                    measured = _train_cell(cell_params(cell), datasets)
                result = {
                    "cell": cell.__dict__,
                    **measured,
                    "settings": settings(cell),
                    "data": data_sizes(fold_paths[cell.fold]),
                    "data_sha256": data_digests(fold_paths[cell.fold]),
                }
                atomic_write_text(os.path.join(cells_dir, cell.key + ".json"), json.dumps(result))
                if bar is not None:
                    bar.update(1)
        # a run started meanwhile with the same output (the default folder, say) and other
        # settings replaces cells: the report must not mix them unawares
        check_cells(during=True)
        return write_report(output, cells)


def _checked_grid(
    systems, criteria, leaves, learning_rates, max_trees, patience, system_grids, system_params
) -> tuple[list, list, list, list, dict]:
    """:func:`run_experiment`'s grid without repeats (a value given twice is one cell,
    trained once), checked before any data is read: ``(systems, criteria, leaves,
    learning_rates, {system: (leaves, learning_rates)})``."""
    if patience is not None and int(patience) < 1:
        raise ValueError(f"patience={patience} must be >= 1 or None")
    if max_trees is not None and int(max_trees) < 1:
        raise ValueError(f"max_trees={max_trees} must be >= 1 or None (the paper's caps)")
    systems, criteria = _distinct(systems), _distinct(criteria)
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown:
        raise ValueError(f"systems {unknown} are not among {SYSTEMS}")
    grids = {
        s: (_distinct(_leaf_count(v) for v in g[0]), _distinct(float(v) for v in g[1]))
        for s, g in (system_grids or {}).items()
    }
    for name, given in (("system_grids", grids), ("system_params", system_params or {})):
        not_run = sorted(set(given) - set(systems))
        if not_run:
            raise ValueError(
                f"{name} names {not_run}, not among this run's systems {list(systems)}"
            )
    leaves = _distinct(_leaf_count(v) for v in leaves)
    learning_rates = _distinct(float(v) for v in learning_rates)
    for name, values in (("systems", systems), ("criteria", criteria)):
        if not values:
            raise ValueError(f"{name} is empty: the grid has no cell")
    for s in systems:
        for name, values in zip(
            ("leaves", "learning_rates"), grids.get(s, (leaves, learning_rates)), strict=True
        ):
            if not values:
                raise ValueError(f"{name} of {s} is empty: the grid has no cell")
    return systems, criteria, leaves, learning_rates, grids


def _check_folds(
    todo: Sequence[Cell], folds: list, na_values, cell_params, n_features: int | None = None
) -> tuple:
    """Read every fold of the cells ``todo`` (sorted by fold) and check its data as each
    system's training will (:func:`~ltrboost.booster.check_training_data`: the
    objective's label checks, the validation and test files'), one fold in memory at
    a time; returns the datasets of the first fold, read last (``()`` when there is
    nothing to train).  An error that names no file names the fold.  A fold whose
    validation or test file shares query ids with its training file is warned of once
    per such file, in fold order (:class:`FoldLeaks`)."""
    from ltrboost.booster import check_training_data
    from ltrboost.dataset import LTRInputError

    fold_paths = {f[0]: f[1:] for f in folds}
    place = {f[0]: k + 1 for k, f in enumerate(folds)}
    order = list(dict.fromkeys(c.fold for c in todo))
    datasets: tuple = ()
    leaks = FoldLeaks(folds)
    for fold in [*order[1:], *order[:1]]:
        datasets = ()  # the previous fold's data freed before reading the next
        datasets = _fold_datasets(fold_paths[fold], na_values, n_features)
        tr, va, te = datasets
        leaks.check(fold, tr, va, te)
        _check_rankable(fold_paths[fold][1:], (va, te))
        first_of_system = {c.system: c for c in reversed(todo) if c.fold == fold}
        for cell in first_of_system.values():
            try:
                check_training_data(cell_params(cell), tr, [("vali", va), ("test", te)])
            except ValueError as e:
                if isinstance(e, LTRInputError) and e.path is not None:
                    raise
                raise ValueError(
                    f"fold {place[fold]}/{len(folds)} ({fold_paths[fold][0]}): {cell.system}: {e}"
                ) from None
    leaks.warn(stacklevel=3)
    return datasets


def _check_rankable(paths: Sequence[str], datasets: Sequence[Any]) -> None:
    """A fold's validation and test files (``paths``, ``datasets``) must each hold a
    query with two grades: in a file whose every query has one grade (no judged
    query: all 0) NDCG and ERR are the same whatever the scores, so every cell's best
    iteration would be its first tree and the fold's test metrics 100.00 for SE and
    OLE alike (``--protocol qbrank`` refuses such files too)."""
    whys = (
        "its NDCG@10 is the same whatever the scores, so every cell's best iteration "
        "would be its first tree",
        "every test metric is the same whatever the scores, for SE and OLE alike",
    )
    from ltrboost.dataset import one_grade_queries

    for path, ds, what, why in zip(paths, datasets, ("validation", "test"), whys, strict=True):
        if one_grade_queries(ds.y, ds.query_offsets).all():
            raise ValueError(
                f"{path}: no {what} query with two grades: {why}; give the fold a file "
                "with judged queries, or leave the fold out"
            )


class FoldLeaks:
    """The folds whose validation or test file shares query ids with their training
    file, for both protocols (:func:`run_experiment`, :func:`~ltrboost.experiment_qbrank.
    run_qbrank_experiment`): :meth:`check` each fold as it is read (in any order), then
    :meth:`warn` once per such file, in the folds' order.  Folds built by hand that put
    a query in both report the metrics of queries the model was trained on: a test
    file's are optimistic, and so is everything chosen on a validation file's (the best
    iteration, RankSVM's C) (:func:`~ltrboost.io.letor.shared_query_ids`: a
    :class:`~ltrboost.io.letor.SharedQueriesWarning`, not an error).  The protocols'
    trainings do not warn again per cell."""

    def __init__(self, folds: Sequence[Sequence[str]]) -> None:
        self._place = {f[0]: k + 1 for k, f in enumerate(folds)}
        self._notes: dict[str, list[str]] = {}

    def check(self, fold: str, train: Any, vali: Any, test: Any) -> None:
        """Note ``fold``'s ``vali`` and ``test`` datasets that share query ids with
        ``train``."""
        from ltrboost.io.letor import shared_query_ids

        said = [
            shared_query_ids(
                train,
                vali,
                "those validation queries were trained on, so the best iteration (and "
                "any setting) chosen on them and the fold's validation metrics are optimistic",
            ),
            shared_query_ids(
                train,
                test,
                "those test queries were trained on and the fold's test metrics are optimistic",
            ),
        ]
        where = f"fold {self._place[fold]}/{len(self._place)}"
        self._notes[fold] = [f"{where}: {s}" for s in said if s]

    def warn(self, stacklevel: int = 2) -> None:
        """One :class:`~ltrboost.io.letor.SharedQueriesWarning` per noted file, in the
        folds' order, validation before test (``stacklevel`` as :func:`warnings.warn`'s,
        counted from the caller of this method)."""
        from ltrboost.io.letor import SharedQueriesWarning

        for fold in sorted(self._notes, key=self._place.__getitem__):
            for note in self._notes[fold]:
                warnings.warn(note, SharedQueriesWarning, stacklevel=stacklevel + 1)


def check_n_features(n_features: Any) -> None:
    """Both protocols' ``n_features``: None or an integer >= 1 (ValueError naming it)."""
    whole = isinstance(n_features, int | np.integer) and not isinstance(n_features, bool)
    if n_features is not None and (not whole or n_features < 1):
        raise ValueError(f"n_features={n_features!r} must be an integer >= 1 or None")


def _fold_datasets(
    paths: Sequence[str], na_values: Sequence[str] | None, n_features: int | None = None
) -> tuple:
    """A fold's ``(train, vali, test)`` datasets; the training file is read
    ``n_features`` wide (None: its own width), validation and test at the training
    data's width.  A label error names the file and line."""
    from ltrboost.dataset import LTRInputError, make_dataset
    from ltrboost.io.letor import imposed_width, load_svmlight, require_qid, width_error_as

    tr_p, va_p, te_p = paths
    owner = f"n_features={n_features}"
    n = imposed_width(tr_p, n_features, owner, tr_p, na_values=na_values)
    try:
        tr = load_svmlight(tr_p, n_features=n, na_values=na_values)
    except LTRInputError as e:
        reworded = None if n is None else width_error_as(e, n, f"is above {owner}")
        if reworded is None:
            raise
        raise reworded from None
    va, te = (
        load_at_training_width(p, tr.X.shape[1], tr_p, na_values, widen_hint=True)
        for p in (va_p, te_p)
    )
    out = []
    for d, p in zip((tr, va, te), (tr_p, va_p, te_p), strict=True):
        ds = make_dataset(d.X, d.y, qid=require_qid(d, p))
        ds.source = str(p)
        if d.lines is not None:
            ds.row_lines = d.lines if ds.order is None else d.lines[ds.order]
        out.append(ds)
    return tuple(out)


@contextlib.contextmanager
def warnings_named(where: str) -> Iterator[None]:
    """The warnings of the block given again as it ends, each text once, led by
    ``where`` (``"cell lambdamart_se_L10_lr0.1_Fold3: ..."``, the name of the cell's
    file in ``cells/``): a training's "every tree is one leaf ..." named neither the
    cell nor the fold, and a grid trains dozens."""
    from ltrboost._callsite import external_stacklevel

    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        for text in dict.fromkeys(str(w.message) for w in caught):
            category = next(w.category for w in caught if str(w.message) == text)
            bare = text.removeprefix("ltrboost: ")
            warnings.warn(f"{where}: {bare}", category, stacklevel=external_stacklevel())


def _train_cell(params: Any, datasets: tuple) -> dict:
    """Train one cell on its fold's ``(train, vali, test)``: the record's measured part
    (time, best iteration by validation NDCG@10, curves, final training loss)."""
    from ltrboost.booster import _train

    tr_ds, va_ds, te_ds = datasets
    t0 = time.perf_counter()
    # shared queries were warned of once for the fold (FoldLeaks), not per cell
    booster = _train(params, tr_ds, [("vali", va_ds), ("test", te_ds)], check_leaks=False)
    seconds = time.perf_counter() - t0
    best = int(np.argmax(booster.evals_result["vali"]["ndcg@10"]))
    obj = booster._objective_instance()
    raw = booster.predict_raw(tr_ds.X, iteration=booster.n_iterations)
    try:
        final_loss = float(obj.loss(raw[0] if raw.shape[0] == 1 else raw, tr_ds))
    except NotImplementedError:
        final_loss = float("nan")
    return {
        "seconds": seconds,
        "best_iteration": best + 1,
        "test_at_best": {m: booster.evals_result["test"][m][best] for m in METRICS},
        "curves": {
            split: {m: booster.evals_result[split][m] for m in METRICS}
            for split in ("vali", "test")
        },
        "final_train_loss": final_loss,
        "n_trees": booster.n_iterations,
    }


def _leaf_count(v: Any) -> int:
    """A leaves value as an int; ``int(4.7)`` trained 4-leaf cells silently."""
    if isinstance(v, float | np.floating) and not float(v).is_integer():
        raise ValueError(f"leaves value {v!r} is not a whole number")
    return int(v)


def _recordable(value: Any) -> Any:
    """``json.dumps``'s ``default``: a NumPy number or array as the Python value it is."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _as_recorded(value: Any) -> Any:
    """``value`` as a cell file records it and reads it back (tuples as lists, NumPy
    numbers as Python's); TypeError if JSON cannot hold it."""
    return json.loads(json.dumps(value, default=_recordable))


def _distinct(values) -> list:
    """``values`` without repeats, in their first order."""
    return list(dict.fromkeys(values))


def load_at_training_width(
    path: str,
    width: int,
    train_path: str,
    na_values: Sequence[str] | None = None,
    *,
    widen_hint: bool = False,
) -> Any:
    """A fold's validation or test file read at its training file's width (``width``
    features, :func:`~ltrboost.io.letor.load_svmlight`'s data); a feature index above
    it is an error naming the training file ("larger than n_features=5" named a keyword
    that experiment has no flag for); ``widen_hint``: it says which ``n_features``
    (:func:`run_experiment`'s, ``--n-features``) reads the training data that wide."""
    from ltrboost.dataset import LTRInputError
    from ltrboost.io.letor import imposed_width, load_svmlight, width_error_as

    n = imposed_width(path, width, "the training data", train_path, na_values=na_values)
    try:
        return load_svmlight(path, n_features=n, na_values=na_values)
    except LTRInputError as e:
        instead = f"is above the {n} features of the fold's training file ({train_path})"
        reworded = width_error_as(e, n, instead)
        if reworded is None:
            raise
        if not widen_hint:
            raise reworded from None
        index = reworded.problem.split()[2]  # "feature index K is above ..."
        raise LTRInputError(
            f"{reworded.problem}; give n_features={index} (or more) to read the training "
            "data that wide",
            path=reworded.path,
            line=reworded.line,
        ) from None


def data_sizes(paths: Sequence[str]) -> dict[str, int]:
    """``{file name: size in bytes}`` of a fold's files, recorded with each finished
    cell: a rerun into the same output on other data (another data set with the same
    ``FoldK`` names) must not reuse its cells."""
    return {os.path.basename(p): os.path.getsize(p) for p in paths}


# file -> (its stat's identity, its SHA-256): a fold's files are hashed once per
# process, not once per cell (a grid checks every cell of a fold against them)
_DIGESTS: dict[str, tuple[tuple[int, ...], str]] = {}


def data_digests(paths: Sequence[str]) -> dict[str, str]:
    """``{file name: SHA-256 hex digest of its bytes}`` of a fold's files, recorded
    with each finished cell (and fold, under ``--protocol qbrank``) beside
    :func:`data_sizes`: a file changed in place with the same size (a label edited)
    was reused unnoticed.  A digest is computed again whenever the file's ``stat``
    (device, inode, size, modification and change times) differs from the one it was
    computed for; the change time cannot be set back by ``touch``."""
    import hashlib

    out = {}
    for p in paths:
        st = os.stat(p)
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        real = os.path.realpath(p)
        known = _DIGESTS.get(real)
        if known is None or known[0] != key:
            digest = hashlib.sha256()
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            known = _DIGESTS[real] = (key, digest.hexdigest())
        out[os.path.basename(p)] = known[1]
    return out


def data_changed(
    saved_sizes: Any, saved_digests: Any, sizes: dict[str, int], digests: dict[str, str]
) -> str | None:
    """What differs between the data files a finished cell (or fold) recorded and this
    run's, in words (``train.txt 1200 bytes (this run: 1300)``, ``vali.txt: another
    content of the same size``); None when nothing does.  A record without digests
    (made before they were recorded) is compared by sizes alone."""
    if saved_sizes is not None and saved_sizes != sizes:
        return ", ".join(
            f"{k} {saved_sizes.get(k)} bytes (this run: {sizes.get(k)})"
            for k in sorted(set(saved_sizes) | set(sizes))
            if saved_sizes.get(k) != sizes.get(k)
        )
    if saved_digests is not None and saved_digests != digests:
        return ", ".join(
            f"{k}: another content (SHA-256 {str(saved_digests.get(k))[:12]}..., this run "
            f"{str(digests.get(k))[:12]}...)"
            for k in sorted(set(saved_digests) | set(digests))
            if saved_digests.get(k) != digests.get(k)
        )
    return None


_CELL_KEYS = ("curves", "test_at_best", "final_train_loss", "seconds", "best_iteration")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _cell_shape_problem(record: dict) -> str | None:
    """What in a finished cell's record the report could not read (None: nothing):
    a hand-edited or foreign file must fail here, naming it, not in the report."""
    curves = record["curves"]
    if not isinstance(curves, dict) or set(curves) != {"vali", "test"}:
        return "curves must map vali and test to their metric curves"
    n = None
    for split, by_metric in curves.items():
        if not isinstance(by_metric, dict) or any(m not in by_metric for m in METRICS):
            return f"curves.{split} must hold {', '.join(METRICS)}"
        for m in METRICS:
            curve = by_metric[m]
            if not isinstance(curve, list) or not curve or not all(map(_is_number, curve)):
                return f"curves.{split}.{m} must be a non-empty list of numbers"
            if n is not None and len(curve) != n:
                return "the curves differ in length"
            n = len(curve)
    best = record["best_iteration"]
    if not isinstance(best, int) or isinstance(best, bool) or not 1 <= best <= (n or 0):
        return f"best_iteration {best!r} is not a round of its curves (1..{n})"
    at_best = record["test_at_best"]
    if not isinstance(at_best, dict) or not all(_is_number(at_best.get(m)) for m in METRICS):
        return f"test_at_best must hold numbers for {', '.join(METRICS)}"
    for key in ("seconds", "final_train_loss"):
        if not _is_number(record[key]):
            return f"{key} {record[key]!r} is not a number"
    for key in ("settings", "data", "data_sha256"):  # optional (older cells lack them)
        if record.get(key) is not None and not isinstance(record[key], dict):
            return f"{key} {record[key]!r} is not an object"
    return None


def _check_resumed_cell(
    path: str,
    wanted: dict,
    data: dict[str, int] | None = None,
    digests: dict[str, str] | None = None,
) -> None:
    """A finished cell is reused only if it was made with this run's settings from
    files of the same sizes and contents (``digests``, :func:`data_digests`; a cell
    recorded without them is compared by sizes alone): a report must not mix cells of
    different tree caps, patience, parameters or data sets unawares."""
    try:
        with open(path) as f:
            record = json.load(f)
        if not isinstance(record, dict):
            raise ValueError(f"a JSON {type(record).__name__}, not an object")
        lacking = [k for k in _CELL_KEYS if k not in record]
        if lacking:
            raise ValueError(f"no {', '.join(lacking)}")
        problem = _cell_shape_problem(record)
        if problem:
            raise ValueError(problem)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read this finished cell ({e}); delete it") from None
    what = None
    if data is not None:
        saved_digests = record.get("data_sha256") if digests is not None else None
        what = data_changed(record.get("data"), saved_digests, data, digests or {})
    if what is not None:
        raise ValueError(
            f"{path}: this finished cell was made from other data files ({what}); "
            "write to another output folder"
        )
    saved = record.get("settings")
    if saved is None:
        return  # a cell file from before settings were recorded
    wanted = json.loads(json.dumps(wanted))  # as saved: tuples become lists
    diff = sorted(k for k in set(saved) | set(wanted) if saved.get(k) != wanted.get(k))
    if diff:
        raise SettingsChanged(path, [(k, saved.get(k), wanted.get(k)) for k in diff])


class SettingsChanged(ValueError):
    """A finished cell made with other settings: ``changes`` lists ``(key, saved, this
    run's)``; :meth:`text` names the keys as the caller's flags (the CLI's
    ``--max-trees`` for ``max_trees``)."""

    def __init__(self, path: str, changes: list[tuple[str, Any, Any]], note: str = "") -> None:
        self.path, self.changes, self.note = path, changes, note
        super().__init__(self.text())

    def text(self, names: dict[str, str] | None = None) -> str:
        what = ", ".join(
            f"{(names or {}).get(k, k)} {a!r} (this run: {b!r})" for k, a, b in self.changes
        )
        return (
            f"{self.path}: this finished cell was made with {what}; resume with the same "
            f"settings, or write to another output folder{self.note}"
        )


def write_report(output: str, cells: list[Cell]) -> dict:
    """The report's files from the finished ``cells``, written all or none (one after
    the other, a signal between two left this run's ``table.md`` beside another run's
    ``paired.md``)."""
    files: list[tuple[str, bytes]] = []  # (path, contents), written together at the end
    results = {}
    for c in cells:
        with open(os.path.join(output, "cells", c.key + ".json")) as f:
            results[c] = json.load(f)
    # iterations.csv
    rows = []
    for c, r in results.items():
        for split, curves in r["curves"].items():
            n = len(curves[METRICS[0]])
            for it in range(n):
                rows.append(
                    [
                        c.system,
                        c.criterion,
                        c.leaves,
                        c.learning_rate,
                        c.fold,
                        split,
                        it + 1,
                        *(f"{curves[m][it]:.6f}" for m in METRICS),
                    ]
                )
    _write_csv(
        files,
        os.path.join(output, "iterations.csv"),
        ["system", "criterion", "leaves", "learning_rate", "fold", "split", "iteration", *METRICS],
        rows,
    )
    _write_csv(
        files,
        os.path.join(output, "final_loss.csv"),
        [
            "system",
            "criterion",
            "leaves",
            "learning_rate",
            "fold",
            "final_train_loss",
            "seconds",
            "best_iteration",
            "n_trees",
        ],
        (
            [
                c.system,
                c.criterion,
                c.leaves,
                c.learning_rate,
                c.fold,
                r["final_train_loss"],
                f"{r['seconds']:.2f}",
                r["best_iteration"],
                r.get("n_trees", len(r["curves"]["test"]["ndcg@10"])),
            ]
            for c, r in results.items()
        ),
    )
    # table.md: mean over folds of the test metric at the best validation iteration
    summary: dict = {}
    for c, r in results.items():
        k = (c.system, c.leaves, c.learning_rate, c.criterion)
        summary.setdefault(k, []).append(r["test_at_best"])
    lines = [
        "Test metrics at the best validation NDCG@10 iteration, mean over folds, "
        "as SE / OLE; `*` marks OLE better than SE by more than 0.1 point.",
        "",
    ]
    header = "| system | leaves | learning rate | " + " | ".join(METRICS) + " |"
    lines += [header, "|" + "---|" * (3 + len(METRICS))]
    table = {}
    systems = sorted({c.system for c in results})
    for system in systems:
        for nl in sorted({c.leaves for c in results}):
            for lr in sorted({c.learning_rate for c in results}):
                se = summary.get((system, nl, lr, "se"))
                ole = summary.get((system, nl, lr, "ole"))
                if not se or not ole:
                    continue
                cells_txt = []
                for m in METRICS:
                    a = float(np.mean([x[m] for x in se]))
                    b = float(np.mean([x[m] for x in ole]))
                    table[(system, nl, lr, m)] = (a, b)
                    mark = "*" if _above_a_tenth(b - a) else ""
                    cells_txt.append(f"{100 * a:.2f} / {100 * b:.2f}{mark}")
                lines.append(
                    f"| {system} | {nl} | {rate_text(lr)} | " + " | ".join(cells_txt) + " |"
                )
    wins = sum(1 for (a, b) in table.values() if _above_a_tenth(b - a))
    losses = sum(1 for (a, b) in table.values() if _above_a_tenth(a - b))
    lines += [
        "",
        f"OLE better by > 0.1 point in {wins} of {len(table)} cells, "
        f"worse by > 0.1 point in {losses}.",
    ]
    files.append((os.path.join(output, "table.md"), ("\n".join(lines) + "\n").encode()))
    paired = paired_test(results)
    text = json.dumps(_finite_or_null(paired), indent=1, allow_nan=False)
    files.append((os.path.join(output, "paired.json"), text.encode()))
    files.append((os.path.join(output, "paired.md"), format_paired(paired).encode()))
    curves = ole_minus_se_curves(results)
    _write_curves(files, output, curves)
    _plot(files, output, curves)
    atomic_write_files(files)
    return {
        "table": table,
        "wins": wins,
        "losses": losses,
        "n_cells": len(table),
        "paired": paired,
    }


def _above_a_tenth(d: float) -> bool:
    """``d`` above 0.1 point (0.001), taken to 12 decimals: a difference of exactly 0.1
    point is 0.0010000000000000009 in floats for 0.401 - 0.400 and 0.0009999999999999454
    for 0.344 - 0.343, which the table showed marked and unmarked."""
    return round(d, 12) > 0.001


def _finite_or_null(obj: Any) -> Any:
    """``obj`` with every NaN or infinity as None: JSON has no NaN (``json.dumps`` wrote
    ``NaN``, which strict readers such as JavaScript's ``JSON.parse`` refuse)."""
    if isinstance(obj, dict):
        return {k: _finite_or_null(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite_or_null(v) for v in obj]
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


def held_curve(values: Sequence[float], length: int) -> NDArray[np.float64]:
    """A metric curve extended to ``length`` iterations by holding its last value: a
    cell stopped early keeps its last model, whose metric no longer changes."""
    v = np.asarray(values, dtype=np.float64)
    if v.size >= length:
        return v[:length]
    return np.concatenate([v, np.full(length - v.size, v[-1] if v.size else np.nan)])


def ole_minus_se_curves(results: dict, metric: str = "ndcg@10") -> dict:
    """``{(system, leaves, learning_rate): mean over folds of OLE - SE test curve}``.

    Curves of cells stopped early (``patience``) are held at their last value up to the
    longer twin, so every fold counts at every iteration."""
    out = {}
    for system in sorted({c.system for c in results}):
        configs = sorted({(c.leaves, c.learning_rate) for c in results if c.system == system})
        for nl, lr in configs:
            diffs = []
            for c, r in results.items():
                if (c.system, c.leaves, c.learning_rate, c.criterion) != (system, nl, lr, "ole"):
                    continue
                twin = Cell(system, "se", nl, lr, c.fold)
                if twin not in results:
                    continue
                a = results[twin]["curves"]["test"][metric]
                b = r["curves"]["test"][metric]
                diffs.append((a, b))
            if not diffs:
                continue
            n = max(max(len(a), len(b)) for a, b in diffs)
            d = [held_curve(b, n) - held_curve(a, n) for a, b in diffs]
            out[(system, nl, lr)] = np.mean(d, axis=0)
    return out


def _write_csv(files: list[tuple[str, bytes]], path: str, header: list, rows) -> None:
    """A CSV file (``csv.writer``'s dialect) added to the report's ``files``, which are
    written atomically: an interrupted report leaves the previous files, never half of
    one, nor some of them."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    files.append((path, buf.getvalue().encode()))


def _write_curves(files: list[tuple[str, bytes]], output: str, curves: dict) -> None:
    keys = list(curves)
    n = max((v.size for v in curves.values()), default=0)
    _write_csv(
        files,
        os.path.join(output, "ole_minus_se.csv"),
        ["iteration", *(f"{s}_L{nl}_lr{rate_text(lr)}" for s, nl, lr in keys)],
        ([it + 1, *(f"{held_curve(curves[k], n)[it]:.5f}" for k in keys)] for it in range(n)),
    )


# --- the paired test ---


def t_interval(x: ArrayLike, confidence: float = 0.95) -> tuple[float, float, float, float]:
    """Mean, its two-sided t confidence interval and the t test's p-value (mean = 0).

    ``mean +- t_{n-1, (1+confidence)/2} * s / sqrt(n)`` with ``s`` the sample standard
    deviation (ddof=1); the interval is (nan, nan) and p nan for fewer than 2 values,
    (mean, mean) and p 0 or 1 when every value is the same.
    """
    from scipy import stats

    x = np.asarray(x, dtype=np.float64)
    n = x.size
    mean = float(x.mean()) if n else float("nan")
    if n < 2:
        return mean, float("nan"), float("nan"), float("nan")
    if np.all(x == x[0]):
        # tested on the values, not on their std: the mean of three 0.1s is
        # 0.10000000000000002, whose rounding made a spread (an interval 4e-17 wide,
        # p = 1e-32)
        v = float(x[0])
        return v, v, v, float(v == 0.0)
    se = float(x.std(ddof=1)) / np.sqrt(n)
    if se == 0.0:  # values apart by less than the std can hold (subnormal)
        return mean, mean, mean, float(mean == 0.0)
    q = float(stats.t.ppf(0.5 + confidence / 2, n - 1))
    p = float(2 * stats.t.sf(abs(mean / se), n - 1))
    return mean, mean - q * se, mean + q * se, p


def paired_test(results: dict, metrics: Sequence[str] = METRICS, tie: float = 0.0) -> dict:
    """OLE - SE of the test metrics at the best validation iteration, paired.

    A paired unit is one (fold, leaves, learning rate) cell of a system with both
    criteria finished.  For each system and metric:

    * ``cells``: mean difference over the units, a 95% t-interval treating them as
      independent (they are not: the cells of one fold share its data), the p-value,
      and counts better / worse / tied (``|d| <= tie``);
    * ``folds``: the same over folds after averaging each fold's cells -- the honest
      interval (n = number of folds, few degrees of freedom).
    """
    out: dict = {}
    for system in sorted({c.system for c in results}):
        units = []
        for c, r in results.items():
            if c.system != system or c.criterion != "ole":
                continue
            twin = Cell(system, "se", c.leaves, c.learning_rate, c.fold)
            if twin in results:
                units.append((c.fold, r["test_at_best"], results[twin]["test_at_best"]))
        if not units:
            continue
        out[system] = {}
        for m in metrics:
            d = np.array([o[m] - s[m] for _, o, s in units])
            by_fold: dict[str, list[float]] = {}
            for (fold, _, _), v in zip(units, d, strict=True):
                by_fold.setdefault(fold, []).append(float(v))
            fold_means = np.array([np.mean(by_fold[f]) for f in sorted(by_fold, key=fold_sort_key)])
            mean, lo, hi, p = t_interval(d)
            fmean, flo, fhi, fp = t_interval(fold_means)
            out[system][m] = {
                "cells": {
                    "n": int(d.size),
                    "mean": mean,
                    "ci95": [lo, hi],
                    "p": p,
                    "better": int((d > tie).sum()),
                    "worse": int((d < -tie).sum()),
                    "tied": int((np.abs(d) <= tie).sum()),
                },
                "folds": {
                    "n": int(fold_means.size),
                    "mean": fmean,
                    "ci95": [flo, fhi],
                    "p": fp,
                    "better": int((fold_means > tie).sum()),
                    "worse": int((fold_means < -tie).sum()),
                },
            }
    return out


def format_paired(paired: dict) -> str:
    """``paired.md``: one row per system and metric, differences in NDCG/ERR points."""

    def pts(v: float) -> str:
        return "nan" if not np.isfinite(v) else f"{100 * v:+.2f}"

    lines = [
        "Paired test of OLE - SE (test metric at the best validation NDCG@10 "
        "iteration), in points (x100).",
        "",
        "* **over cells**: one unit per (fold, leaves, learning rate); the t-interval "
        "treats the cells as independent, which they are not (the cells of a fold share "
        "its data), so it is too narrow;",
        "* **over folds**: each fold's cells averaged first, then a t-interval over folds "
        "(the honest one; few degrees of freedom).",
        "",
        "| system | metric | cells: n | mean | 95% CI | p | better / worse / tied "
        "| folds: n | mean | 95% CI | p | better / worse |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for system, per_metric in paired.items():
        for m, r in per_metric.items():
            c, f = r["cells"], r["folds"]
            lines.append(
                f"| {system} | {m} | {c['n']} | {pts(c['mean'])} | "
                f"[{pts(c['ci95'][0])}, {pts(c['ci95'][1])}] | {c['p']:.3g} | "
                f"{c['better']} / {c['worse']} / {c['tied']} | {f['n']} | {pts(f['mean'])} | "
                f"[{pts(f['ci95'][0])}, {pts(f['ci95'][1])}] | {f['p']:.3g} | "
                f"{f['better']} / {f['worse']} |"
            )
    return "\n".join(lines) + "\n"


def _plot(files: list[tuple[str, bytes]], output: str, curves: dict) -> None:
    """``ole_minus_se_SYSTEM.png`` (with matplotlib) added to the report's ``files``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    for system in sorted({k[0] for k in curves}):
        fig, ax = plt.subplots(figsize=(7, 4))
        for (s, nl, lr), mean in curves.items():
            if s != system:
                continue
            ax.plot(
                np.arange(1, mean.size + 1), 100 * mean, label=f"{nl} leaves, lr {rate_text(lr)}"
            )
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xlabel("iteration (trees)")
        ax.set_ylabel("OLE - SE, test NDCG@10 (points)")
        ax.set_title(f"{system}: OLE minus SE per iteration (mean over folds)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=110)
        plt.close(fig)
        files.append((os.path.join(output, f"ole_minus_se_{system}.png"), png.getvalue()))
