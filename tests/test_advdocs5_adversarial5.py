"""Claims of docs/ (every Markdown file, experiments' reports included) and bench/README.md's
commands checked against the code (fifth documentation pass)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

# every Markdown document with commands: the top README, bench's, and all of docs/ (the
# click experiments' READMEs and estimator.md were not read by the fourth pass's check)
_DOCS = (
    "README.md",
    "bench/README.md",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")),
)


def _spans(doc: str) -> list[str]:
    text = (ROOT / doc).read_text(encoding="utf-8")
    return re.findall(r"`([^`]+)`", text, re.S) + re.findall(r"```[a-z]*\n(.*?)```", text, re.S)


# a benchmark command's arguments run over line breaks, but stop at the next command:
# the fourth pass's pattern gave a block's later commands' flags to its first one, and
# never checked the later ones (clicks_ipw_summary.py after bench_clicks.py)
_BENCH = re.compile(
    r"python (?:-m (bench\.\w+)|(bench/\w+)\.py)((?:(?!python )(?:[^`\n]|\\\n|\n(?!\n)))*)"
)


def _bench_commands(span: str) -> list[tuple[str, set[str]]]:
    return [
        (m.group(1) or m.group(2).replace("/", "."), set(re.findall(r"--[\w-]+", m.group(3))))
        for m in _BENCH.finditer(span)
    ]


def test_bench_command_pattern_splits_a_block_into_its_commands():
    block = (
        "PYTHONPATH=src:. python bench/bench_clicks.py --data mq2008 \\\n"
        "    --out /tmp/x\n"
        "PYTHONPATH=src:. python bench/clicks_ipw_summary.py OUT /tmp/x/results.json\n"
    )
    assert _bench_commands(block) == [
        ("bench.bench_clicks", {"--data", "--out"}),
        ("bench.clicks_ipw_summary", set()),
    ]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))


def _help(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *args, "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=300,
    )


def test_every_benchmark_command_of_every_document_takes_its_flags():
    commands: dict[str, set[str]] = {}
    for doc in _DOCS:
        for span in _spans(doc):
            for module, flags in _bench_commands(span):
                commands.setdefault(module, set()).update(flags)
    # the click experiments' commands are among them now
    assert {"bench.bench_clicks", "bench.clicks_ipw_summary", "bench.check_propensities"} <= set(
        commands
    )
    for module, flags in sorted(commands.items()):
        done = _help(module)
        if done.returncode and "ModuleNotFoundError" in done.stderr:
            continue  # a peer library is not installed
        assert done.returncode == 0, (module, done.stderr[-500:])
        missing = sorted(f for f in flags if f not in done.stdout)
        assert not missing, (module, missing)


def test_every_ltrboost_command_of_every_document_takes_its_flags():
    """`ltrboost SUBCOMMAND --flag ...` anywhere in docs/ or bench/README.md (in backquotes or
    a code block, over `\\` line continuations): the subcommand exists and has the flag."""
    listing = _help("ltrboost").stdout
    subcommands = set(re.findall(r"^ {4}(\w+)(?: |$)", listing, re.M))
    assert {"train", "export", "experiment", "convert"} <= subcommands
    pattern = re.compile(r"\bltrboost (\w+)((?:(?!ltrboost |python )(?:[^`\n\\]|\\[\s\S]))*)")
    used: dict[str, set[str]] = {}
    for doc in _DOCS[1:]:  # README.md's synopsis has its own test (test_docs_claims.py)
        for span in _spans(doc):
            for m in pattern.finditer(span):
                if m.group(1) in subcommands:
                    flags = re.findall(r"(?<![\w-])--[a-z][\w-]*", m.group(2))
                    used.setdefault(m.group(1), set()).update(flags)
    assert {"export", "experiment", "train"} <= set(used)
    assert "--createmodel" in used["export"]
    assert "--ranknet-pair-method" in used["experiment"]
    for sub, flags in sorted(used.items()):
        done = _help("ltrboost", sub)
        assert done.returncode == 0, (sub, done.stderr[-500:])
        missing = sorted(f for f in flags if f not in done.stdout)
        assert not missing, (sub, missing)


def test_custom_objective_defaults_custom_md_states(tmp_path):
    """docs/custom.md: "The initial score is 0; `learning_rate` defaults to 0.1", "Validation
    metrics default to NDCG@10", the model file names the objective "custom:<fn.__name__>"."""
    from ltrboost import Ranker
    from ltrboost.datasets import make_ranking

    def squared_error(scores, labels, query_offsets):
        return 2.0 * (scores - labels), np.full_like(scores, 2.0)

    X, y, qid = make_ranking(n_queries=20, docs_per_query=10, n_features=5, random_state=0)
    default = Ranker(objective=squared_error, n_estimators=3).fit(
        X, y, qid=qid, eval_set=[(X, y, qid)]
    )
    explicit = Ranker(objective=squared_error, n_estimators=3, learning_rate=0.1).fit(X, y, qid=qid)
    assert np.array_equal(default.predict(X), explicit.predict(X))
    default.save_model(tmp_path / "model.json")
    saved = json.loads((tmp_path / "model.json").read_text(encoding="utf-8"))
    assert saved["objective"] == "custom:squared_error"
    assert saved["init_score"] == [0.0]
    assert list(default.evals_result_["valid_0"]) == ["ndcg@10"]
