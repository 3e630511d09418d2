"""Claims of docs/*.md, docs/workflow.py, docs/experiments/README.md and bench/README.md's
instructions checked against the code (fourth documentation pass): each test is one the
documents or the code broke."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _text(doc: str) -> str:
    return (ROOT / doc).read_text(encoding="utf-8")


# --- docs/workflow.py -----------------------------------------------------------------


def test_workflow_custom_mrr_is_the_metric_its_comment_names():
    """docs/workflow.py said its custom metric counts a query without a relevant document
    as 0 "as `ltrboost.metrics` does for MRR by default"; ltrboost's `mrr` gives such a
    query `empty_query_score`, 1.0 by default. The comment now names the option."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    from ltrboost.metrics import get_metric

    text = _text("docs/workflow.py")
    said = re.search(r'get_metric\("mrr", empty_query_score=([\d.]+)\)', text)
    assert said, "the comment names the ltrboost metric the callable equals"
    spec = importlib.util.spec_from_file_location(
        "ltrboost_docs_workflow4", ROOT / "docs/workflow.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(0)
    scores = rng.normal(size=30)
    labels = np.r_[np.zeros(10), rng.integers(0, 3, size=20)].astype(np.float64)  # q0 empty
    offsets = np.array([0, 10, 20, 30], dtype=np.int64)
    mine = module.reciprocal_rank(scores, labels, offsets)
    assert mine == pytest.approx(
        get_metric("mrr", empty_query_score=float(said.group(1)))(scores, labels, offsets)
    )
    assert mine != pytest.approx(get_metric("mrr")(scores, labels, offsets))  # the default
    assert "as `ltrboost.metrics` does for MRR by default" not in text


# --- docs/scaling.md --------------------------------------------------------------------


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("dask.array")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_scaling_round_trips_per_tree(dask_client):
    """docs/scaling.md: a tree costs `L + 3` round trips, `L + 4` with validation; OLE
    adds 2 at the root and one per child searched for a split. It said "+2 per split",
    which counts children that are never searched (too deep, too small, or children of
    the tree's last split): 45 round trips here where 33 were made."""
    import dask.array as da

    from ltrboost import dask as ldask
    from ltrboost.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=40, docs_per_query=20, n_features=5, random_state=0)[:3]
    chunks = (400, 400)
    data = ldask.DaskData(
        da.from_array(X, chunks=(chunks, 5)),
        da.from_array(y, chunks=(chunks,)),
        da.from_array(qid, chunks=(chunks,)),
    )
    params = dict(
        objective="lambdamart", n_estimators=3, max_depth=2, max_leaf_nodes=31, min_samples_leaf=5
    )

    def trips(valid=(), **extra):
        stats = {}
        booster = ldask.train(dask_client, dict(params, **extra), data, valid, stats=stats)
        return stats["round_trips"], booster.trees_to_dataframe()

    n, trees = trips()
    leaves = trees.groupby("tree")["feature"].apply(lambda f: int(f.isna().sum()))
    assert n == int((leaves + 3).sum())
    n, trees = trips([("v", data)])
    leaves = trees.groupby("tree")["feature"].apply(lambda f: int(f.isna().sum()))
    assert n == int((leaves + 4).sum())
    n, trees = trips(split_criterion="ole")
    leaves = trees.groupby("tree")["feature"].apply(lambda f: int(f.isna().sum()))
    # max_depth=2: the root's children are searched when they can be split, theirs never
    searched = int(((trees["depth"] == 1) & (trees["count"] >= 2 * 5)).sum())
    assert n == int((leaves + 3 + 2).sum()) + searched
    assert n < int((leaves + 3 + 2 * (leaves - 1) + 2).sum())  # what "+2 per split" gave
    row = next(r for r in _text("docs/scaling.md").splitlines() if r.startswith("| OLE only"))
    assert "+2 per split," not in row
    assert "per child" in row


def test_scaling_text_agrees_with_its_tables():
    """docs/scaling.md's prose quoted an older run of its 20k table: DaskXGBRanker's
    "41 s for 10 trees (table above)" beside a table of 11.71 s, "about 19 KiB per tree"
    from the driver beside 17.7 KB measured."""
    text = _text("docs/scaling.md")
    table = text[text.index("| run | fit s | s/tree |") :].split("\n\n")[0]
    xgb = next(r for r in table.splitlines() if r.startswith("| DaskXGBRanker"))
    fit = float(xgb.split("|")[2])
    said = re.search(r"at 20k documents already cost ([\d.]+) s for\s+10 trees", text)
    assert said
    assert float(said.group(1)) == pytest.approx(fit, abs=0.05)
    dask_row = next(r for r in table.splitlines() if r.startswith("| ltrboost.dask"))
    from_driver = float(dask_row.split("|")[6])
    said = re.search(r"About ([\d.]+) KiB per tree go the other way", text)
    assert said
    assert float(said.group(1)) == pytest.approx(from_driver, abs=0.5)


# --- docs/experiments/README.md ---------------------------------------------------------


def test_experiment_report_folders_hold_the_files_listed():
    """docs/experiments/README.md said every report folder holds `paired.md`,
    `paired.json` and `ole_minus_se.csv`; `mq2008/` (the first run) has none of them.
    Each folder the listing names holds them, and `mq2008/`'s own "Files:" exist."""
    text = _text("docs/experiments/README.md")
    listing = re.search(
        r"Each report folder of ((?:`\w+/`(?:, | and )?)+) holds(.*?)\n\n", text, re.S
    )
    assert listing, "the listing says which folders it describes"
    folders = re.findall(r"`(\w+)/`", listing.group(1))
    assert "mq2008" not in folders
    for folder in folders:
        path = ROOT / "docs" / "experiments" / folder
        for name in ("table.md", "paired.md", "paired.json", "ole_minus_se.csv", "final_loss.csv"):
            assert (path / name).is_file(), (folder, name)
        assert list(path.glob("ole_minus_se_*.png")), folder
    section = text[text.index("## MQ2008, 5 folds, up to 300 trees") :]
    files = section[section.index("Files:") : section.index("**Result")]
    for name in re.findall(r"`([\w.]+\.(?:md|csv|png))`", files):
        assert (ROOT / "docs" / "experiments" / "mq2008" / name).is_file(), name


# --- bench/README.md ------------------------------------------------------------------

# import name -> the distribution (as pyproject.toml names it) that provides it
_DISTRIBUTIONS = {
    "sklearn": "scikit-learn",
    "distributed": "dask",
    "dask": "dask",
    "lightgbm": "lightgbm",
    "xgboost": "xgboost",
    "catboost": "catboost",
    "onnx": "onnx",
    "onnxruntime": "onnxruntime",
    "psutil": "psutil",
    "matplotlib": "matplotlib",
    "pandas": "pandas",
    "scipy": "scipy",
    "numpy": "numpy",
    "numba": "numba",
    "tqdm": "tqdm",
    "pyarrow": "pyarrow",
}


def _bench_imports() -> dict[str, set[str]]:
    """Third-party modules each benchmark script imports (anywhere in the file)."""
    out = {}
    for path in sorted((ROOT / "bench").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
        out[path.name] = {n for n in names if n in _DISTRIBUTIONS}
    return out


def test_bench_install_line_installs_what_the_benchmarks_import():
    """bench/README.md: "Install the extras first: `pip install -e ".[bench]"`"; the
    `bench` extra has no Dask, which `bench_dask.py` and `bench_dask_regroup.py` (in the
    README's table) import: they failed with ModuleNotFoundError after that install."""
    import tomllib

    project = tomllib.loads(_text("pyproject.toml"))["project"]

    def dist(requirement: str) -> str:
        return re.match(r"[\w-]+", requirement).group(0).lower()

    core = {dist(r) for r in project["dependencies"]}
    extras = {k: {dist(r) for r in v} for k, v in project["optional-dependencies"].items()}
    text = _text("bench/README.md")
    head = text[: text.index("| script |")]
    installs = [n.split(",") for n in re.findall(r'`pip install -e "\.\[([\w,]+)\]"`', head)]
    assert installs
    for script, modules in _bench_imports().items():
        needed = {_DISTRIBUTIONS[m] for m in modules}
        line = next(
            (names for names in installs if needed <= core.union(*(extras[n] for n in names))),
            None,
        )
        assert line, (script, sorted(needed - core - extras["bench"]))
        if line != ["bench"]:  # another install line: the README says which scripts need it
            assert f"`{script}`" in head, script


@pytest.mark.parametrize("args", [["--help"], []])
def test_ref_models_help_and_usage(tmp_path, args):
    """`python bench/ref_models.py --help` took `--help` for OUTDIR: it trained 31 models
    and wrote `./--help/hashes.txt`; without OUTDIR it died with an IndexError."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "ref_models.py"), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert list(tmp_path.iterdir()) == []
    if args:
        assert done.returncode == 0, done.stderr
        assert "OUTDIR" in done.stdout
    else:
        assert done.returncode == 2
        assert "Traceback" not in done.stderr
        assert "OUTDIR" in done.stderr


# every benchmark command of these documents, in backquotes or code blocks, also over
# line breaks and as `python bench/NAME.py` (it replaces test_docs_claims.py's check, which
# read one line of `python -m bench.NAME` only)
_COMMAND_DOCS = (
    "README.md",
    "bench/README.md",
    "docs/scaling.md",
    "docs/deploy.md",
    "docs/custom.md",
    "docs/python-stack.md",
    "docs/theory.md",
    "docs/experiments/README.md",
)


def _documented_commands() -> dict[str, set[str]]:
    commands: dict[str, set[str]] = {}
    pattern = r"python (?:-m (bench\.\w+)|(bench/\w+)\.py)((?:[^`\n]|\\\n|\n(?!\n))*)"
    for doc in _COMMAND_DOCS:
        text = _text(doc)
        spans = re.findall(r"`([^`]+)`", text, re.S)
        spans += re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
        for span in spans:
            for m in re.finditer(pattern, span):
                module = m.group(1) or m.group(2).replace("/", ".")
                commands.setdefault(module, set()).update(re.findall(r"--[\w-]+", m.group(3)))
    return commands


def test_every_documented_benchmark_command_takes_its_flags():
    """Each benchmark command the documents give (`python -m bench.NAME` or `python
    bench/NAME.py`, in a table cell, prose or a code block, over line breaks) answers
    `--help` and has every flag the document passes it."""
    commands = _documented_commands()
    assert "bench.ref_models" in commands
    assert "bench.bench_parser_compile" in commands
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    for module, flags in sorted(commands.items()):
        done = subprocess.run(
            [sys.executable, "-m", module, "--help"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=300,
        )
        if done.returncode and "ModuleNotFoundError" in done.stderr:
            continue  # a peer library is not installed
        assert done.returncode == 0, (module, done.stderr[-500:])
        missing = sorted(f for f in flags if f not in done.stdout)
        assert not missing, (module, missing)
    assert not (ROOT / "--help").exists()


# --- docs/deploy.md ---------------------------------------------------------------------


def test_export_name_default_on_stdout(tmp_path, capsys):
    """docs/deploy.md: `--name` defaults to the output file's stem; with `--output -`
    there is no file and the name is `ltrboost`, which the page did not say."""
    import json

    from ltrboost import Ranker
    from ltrboost.cli import main
    from ltrboost.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=8, docs_per_query=10, n_features=3, random_state=0)[:3]
    model = tmp_path / "model.json"
    Ranker(n_estimators=2, min_samples_leaf=5).fit(X, y, qid=qid).save_model(str(model))
    assert main(["export", str(model), "--format", "solr", "--output", "-"]) in (0, None)
    assert json.loads(capsys.readouterr().out)["name"] == "ltrboost"
    out = tmp_path / "my_ranker.json"
    assert main(["export", str(model), "--format", "solr", "--output", str(out)]) in (0, None)
    assert json.loads(out.read_text())["name"] == "my_ranker"
    text = " ".join(_text("docs/deploy.md").split())
    assert "default the output file's stem, `ltrboost` with `--output -`" in text
