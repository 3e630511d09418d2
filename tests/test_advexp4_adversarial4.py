"""``ltrboost experiment`` (both protocols), ``ltrboost clicks`` and the bench scripts the
docs/experiments/ pages tell users to run: inputs a fourth adversarial pass found
mishandled -- each now does what its flag says, or fails up front with one line naming
the flag or file, leaving nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ltrboost.cli import build_parser
from ltrboost.experiment import DEFAULT_TREES
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

ROOT = Path(__file__).resolve().parent.parent
QB = ["--protocol", "qbrank", "--max-trees", "2", "--min-samples-leaf", "2", "--quiet"]
XIA = [
    "--systems", "mcrank", "--leaves", "4", "--learning-rates", "0.1",
    "--max-trees", "2", "--min-samples-leaf", "2", "--quiet",
]  # fmt: skip


@pytest.fixture
def no_l1(tmp_path, write_letor_folds):
    """One fold of 30 documents per query: no query has a single grade (no L1)."""
    return write_letor_folds(tmp_path / "noL1", 1, 30, 5)


@pytest.fixture
def no_qid(tmp_path, write_letor_folds):
    """One fold whose train.txt has no ``qid:`` (an error once the fold is read)."""
    root = write_letor_folds(tmp_path / "noqid", 1, 6, 5)
    train = root / "Fold1" / "train.txt"
    train.write_text(
        "\n".join(" ".join(t for t in ln.split() if not t.startswith("qid:")) for ln in
                  train.read_text().splitlines()) + "\n"
    )  # fmt: skip
    return root


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# --- nothing left behind by a run that could not complete ------------------------------


def test_qbrank_without_l1_leaves_no_empty_report_folder(no_l1, tmp_path, capsys):
    """``--protocol qbrank`` on data without a single-grade training query stopped with
    "L1 is empty" but left ``OUT/folds/`` (and OUT) behind, empty."""
    out = tmp_path / "a" / "report"
    rc, _, err = run(["experiment", no_l1, "-o", out, *QB], capsys)
    one_line_error(rc, err, "train.txt", "L1 is empty")
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize("protocol", [XIA, QB], ids=["xia", "qbrank"])
def test_a_fold_that_cannot_be_read_leaves_no_empty_report_folder(
    no_qid, tmp_path, capsys, protocol
):
    """The default protocol left an empty ``OUT/cells/`` the same way."""
    out = tmp_path / "report"
    rc, _, err = run(["experiment", no_qid, "-o", out, *protocol], capsys)
    one_line_error(rc, err, "train.txt", "qid")
    assert not out.exists()


@pytest.mark.parametrize("protocol", [XIA, QB], ids=["xia", "qbrank"])
def test_a_failed_run_keeps_the_folder_it_found(no_qid, tmp_path, capsys, protocol):
    """Only the folders the run made are removed: one the user had stays, with its
    files."""
    out = tmp_path / "report"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    rc, _, err = run(["experiment", no_qid, "-o", out, *protocol], capsys)
    one_line_error(rc, err, "train.txt", "qid")
    assert _files(out) == ["notes.txt"]


# --- --max-trees help ------------------------------------------------------------------


def _help(parser, *path: str) -> dict[str, str]:
    """``{option: help}`` of the sub-command ``path``."""
    for name in path:
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        parser = sub.choices[name]
    return {o: a.help or "" for a in parser._actions for o in a.option_strings}


def test_max_trees_help_gives_every_systems_default():
    """``experiment --max-trees``'s help gave LambdaMART's and McRank's caps, not
    RankNet's (1000), nor --protocol qbrank's (500)."""
    from ltrboost.experiment_qbrank import DEFAULT_TREES as QB_TREES

    text = " ".join(_help(build_parser(), "experiment")["--max-trees"].split())
    names = {"lambdamart": "LambdaMART", "mcrank": "McRank", "ranknet": "RankNet"}
    for system, n in DEFAULT_TREES.items():
        assert f"{n} {names[system]}" in text or f"{names[system]} {n}" in text, (system, text)
    assert f"qbrank: {QB_TREES}" in text or f"qbrank {QB_TREES}" in text, text


# --- bench scripts the docs/experiments pages tell users to run ------------------------


@pytest.mark.parametrize("args", [["--help"], ["-h"], []])
def test_clicks_ipw_summary_help_and_usage(tmp_path, args):
    """``python bench/clicks_ipw_summary.py --help`` took ``--help`` for OUT_DIR and
    wrote ``./--help/results.json`` and ``table.md``; without arguments it died with an
    IndexError."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "clicks_ipw_summary.py"), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert list(tmp_path.iterdir()) == []
    assert "Traceback" not in done.stderr
    if args:
        assert done.returncode == 0, done.stderr
        assert "OUT_DIR" in done.stdout
    else:
        assert done.returncode == 2
        assert "OUT_DIR" in done.stderr


def test_clicks_ipw_summary_bad_results_file_is_one_error_and_writes_nothing(tmp_path):
    """A results file that is missing or not bench_clicks.py's ended in a traceback."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    (tmp_path / "other.json").write_text('{"a": 1}')
    for name, needle in (("missing.json", "No such file"), ("other.json", "settings")):
        done = subprocess.run(
            [sys.executable, str(ROOT / "bench" / "clicks_ipw_summary.py"), "out", name],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=120,
        )
        assert done.returncode == 2
        assert "Traceback" not in done.stderr
        assert name in done.stderr, done.stderr
        assert needle in done.stderr, done.stderr
        assert not (tmp_path / "out").exists()


def _experiment_page_commands() -> dict[str, set[str]]:
    """``{bench module: flags}`` of every ``python bench/NAME.py`` or ``python -m
    bench.NAME`` command in a code block or backquotes of docs/experiments/**/*.md
    (test_advdocs4_adversarial4.py reads docs/experiments/README.md only)."""
    import re

    # a command goes on over a line ending in a backslash, not over a plain line break
    # (which in a code block starts the next command)
    pattern = r"python (?:-m (bench\.\w+)|(bench/\w+)\.py)((?:\\\n|[^`\n])*)"
    commands: dict[str, set[str]] = {}
    for doc in sorted((ROOT / "docs" / "experiments").rglob("*.md")):
        text = doc.read_text(encoding="utf-8")
        spans = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        spans += [sp.replace("\n", " ") for sp in re.findall(r"`([^`]+)`", prose)]
        for span in spans:
            for m in re.finditer(pattern, span):
                module = m.group(1) or m.group(2).replace("/", ".")
                commands.setdefault(module, set()).update(re.findall(r"--[\w-]+", m.group(3)))
    return commands


def test_every_bench_command_of_the_experiment_pages_takes_its_flags(tmp_path):
    """Each bench script a docs/experiments page tells users to run answers ``--help``
    (writing nothing) and has every flag the page passes it."""
    commands = _experiment_page_commands()
    assert {"bench.bench_clicks", "bench.clicks_ipw_summary"} <= set(commands)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    for module, flags in sorted(commands.items()):
        done = subprocess.run(
            [sys.executable, "-m", module, "--help"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, (module, done.stderr)
        assert list(tmp_path.iterdir()) == [], module
        missing = sorted(f for f in flags if f not in done.stdout)
        assert not missing, (module, missing)


# --- two protocols, one output folder --------------------------------------------------


@pytest.fixture
def qb_folds(tmp_path, write_letor_folds):
    single = {"train.txt": (0, 3, 7), "test.txt": (1,)}
    return write_letor_folds(tmp_path / "qb", 1, 8, 5, single)


@pytest.mark.parametrize(("first", "second"), [(XIA, QB), (QB, XIA)], ids=["xia-qb", "qb-xia"])
def test_one_protocol_does_not_overwrite_the_others_report(
    qb_folds, tmp_path, capsys, first, second
):
    """``--protocol qbrank -o R`` into the default protocol's report R replaced its
    table.md with seed 004's table beside seed 000's iterations.csv and paired.md (and
    the other way round): the first report was damaged, the folder a mix of both."""
    out = tmp_path / "r"
    rc, _, _ = run(["experiment", qb_folds, "-o", out, *first], capsys)
    assert rc == 0
    before = {p: (out / p).read_bytes() for p in _files(out) if (out / p).is_file()}
    rc, _, err = run(["experiment", qb_folds, "-o", out, *second], capsys)
    other = "qbrank" if first is QB else "xia"
    one_line_error(rc, err, str(out), "--output", f"--protocol {other}")
    assert {p: (out / p).read_bytes() for p in _files(out) if (out / p).is_file()} == before


# --- folds whose files differ in width ---------------------------------------------------


@pytest.mark.parametrize("protocol", [XIA, QB], ids=["xia", "qbrank"])
def test_a_validation_file_wider_than_training_names_the_training_file(
    tmp_path, write_letor_folds, capsys, protocol
):
    """vali.txt with a feature index above train.txt's highest failed with "feature
    index 6 is larger than n_features=5": a Python keyword experiment has no flag for,
    not saying that the 5 are the training file's."""
    single = {"train.txt": (0, 3, 7), "test.txt": (1,)}
    root = write_letor_folds(tmp_path / "a", 1, 8, 5, single)
    wide = write_letor_folds(tmp_path / "b", 1, 8, 7, single)
    (root / "Fold1" / "vali.txt").write_bytes((wide / "Fold1" / "vali.txt").read_bytes())
    out = tmp_path / "r"
    rc, _, err = run(["experiment", root, "-o", out, *protocol], capsys)
    line = one_line_error(rc, err, "vali.txt", "train.txt", "5 features")
    assert "n_features" not in line
    assert not out.exists()


@pytest.mark.parametrize("protocol", [XIA, QB], ids=["xia", "qbrank"])
def test_folds_of_different_widths_each_train(tmp_path, write_letor_folds, capsys, protocol):
    """Fold1 with 5 features and Fold2 with 7: each fold is read at its own width."""
    single = {"train.txt": (0, 3, 7), "test.txt": (1,)}
    root = write_letor_folds(tmp_path / "a", 1, 8, 5, single)
    wide = write_letor_folds(tmp_path / "b", 1, 8, 7, single)
    (wide / "Fold1").rename(root / "Fold2")
    rc, _, err = run(["experiment", root, "-o", tmp_path / "r", *protocol], capsys)
    assert rc == 0, err


# --- the table on a stdout that cannot encode it -----------------------------------------


def test_qbrank_table_on_a_cp1252_stdout_is_printed_not_an_error(
    qb_folds, tmp_path, capsys, monkeypatch
):
    """seed 004's table has a union sign and ``±``: on a stdout in cp1252 (a Windows console or
    a redirect there) the finished run ended with "ltrboost: error: 'charmap' codec
    can't encode character '\\u222a'" and exit status 2, after the report was written."""
    import io

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="cp1252", errors="strict")
    monkeypatch.setattr(sys, "stdout", out)
    rc = __import__("ltrboost.cli", fromlist=["main"]).main(
        ["experiment", str(qb_folds), "-o", str(tmp_path / "r"), *QB]
    )
    out.flush()
    err = capsys.readouterr().err
    assert rc == 0, err
    text = raw.getvalue().decode("cp1252")
    assert "Precision at K%" in text
    assert "GBT(L1\\u222aL2)" in text
    # the report's own file keeps the character
    assert "GBT(L1\u222aL2)" in (tmp_path / "r" / "table.md").read_text(encoding="utf-8")


# --- ltrboost clicks ---------------------------------------------------------------------


def _letor(tmp_path: Path) -> Path:
    """Two queries of four documents with '#docid' comments."""
    path = tmp_path / "data.txt"
    lines = [
        f"{y} qid:{q} 1:{k / 10:.1f} 2:{k % 3} #docid = {q}{d}"
        for q in (1, 2)
        for k, (y, d) in enumerate(zip((2, 1, 0, 1), "abcd", strict=True))
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _log(tmp_path: Path, rows: list[str], name: str = "log.tsv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--top-k", "0"),
        ("--noise", "2"),
        ("--noise", "nan"),
        ("--eta", "-1"),
        ("--eta", "nan"),
        ("--satisfaction", "2"),
        ("--n-sessions", str(2**62 + 1)),
    ],
)
def test_simulate_flag_errors_name_the_flag(tmp_path, capsys, flag, value):
    """``clicks simulate --top-k 0`` said "top_k=0 must be >= 1" (``--noise 2``:
    "noise=2.0 ...", ``--n-sessions`` huge: "n_sessions=..."): Python names, not the
    flags, and only once the data file had been read."""
    data = _letor(tmp_path)
    model = ["--model", "position_based"] if flag == "--eta" else []
    argv = ["clicks", "simulate", data, "-o", tmp_path / "l.tsv", *model, flag, value]
    rc, _, err = run(argv, capsys)
    line = one_line_error(rc, err, flag)
    assert "_" not in line.split(flag)[0]  # no Python name before the flag
    assert not (tmp_path / "l.tsv").exists()


def test_mine_without_any_pair_warns_with_the_highest_count(tmp_path, capsys):
    """``clicks mine --min-count`` above every net count wrote a pairs file holding no
    pair and said only "-> 0 pairs"; training on it then warned that the model is
    trained on the labels alone.  The file is still written (a valid, empty pairs
    file), with a warning naming --min-count and the highest count."""
    data = _letor(tmp_path)
    log = _log(tmp_path, ["1 1a 1 0", "1 1b 2 1", "1 1a 1 0", "1 1b 2 1"])
    out = tmp_path / "pairs.txt"
    rc, _, err = run(["clicks", "mine", log, "--data", data, "-o", out, "--min-count", "5"], capsys)
    assert rc == 0, err
    assert "warning" in err
    assert "--min-count 5" in err
    assert "highest net count is 2" in err
    assert out.read_text().startswith("#")


def test_mine_and_dataset_of_a_log_without_clicks_warn(tmp_path, capsys):
    """Sessions with no click at all gave no pair (mine) or all-zero labels (dataset)
    without a word until training on them."""
    data = _letor(tmp_path)
    log = _log(tmp_path, ["1 1a 1 0", "1 1b 2 0", "2 2c 1 0"])
    rc, _, err = run(["clicks", "mine", log, "--data", data, "-o", tmp_path / "p.txt"], capsys)
    assert rc == 0, err
    assert "no click" in err
    rc, _, err = run(["clicks", "dataset", log, "--data", data, "-o", tmp_path / "c.txt"], capsys)
    assert rc == 0, err
    assert "no click" in err


def test_dataset_hint_gives_the_flag_as_train_takes_it(tmp_path, capsys):
    """``clicks dataset`` ended with "train with --unbiased", and ``ltrboost train
    OUT --unbiased`` fails ("expected one argument"): the flag takes a value."""
    data = _letor(tmp_path)
    log = _log(tmp_path, ["1 1a 1 0", "1 1b 2 1"])
    out = tmp_path / "c.txt"
    rc, _, err = run(["clicks", "dataset", log, "--data", data, "-o", out], capsys)
    assert rc == 0, err
    assert "--unbiased true" in err
    rc, _, err = run(["train", out, "--unbiased", "true", "-o", tmp_path / "m.json",
                      "--n-estimators", "1", "--quiet"], capsys)  # fmt: skip
    assert rc == 0, err


@pytest.mark.parametrize("command", ["mine", "dataset"])
@pytest.mark.parametrize(
    ("row", "needle"), [("9 1a 1 1", "query '9'"), ("1 2a 1 1", "document '2a'")]
)
def test_a_log_entry_not_in_the_data_names_the_data_file(tmp_path, capsys, command, row, needle):
    """A click log whose query (or document) the feature file lacks said "not in the
    data file", naming the log but not which data file (--data)."""
    data = _letor(tmp_path)
    log = _log(tmp_path, [row])
    out = tmp_path / "o.txt"
    rc, _, err = run(["clicks", command, log, "--data", data, "-o", out], capsys)
    one_line_error(rc, err, f"{log}:1:", needle, f"--data {data}")
    assert not out.exists()


def test_train_valid_wider_than_training_names_the_training_file(tmp_path, capsys):
    """`ltrboost train --valid` with a feature beyond the training file's width said
    "larger than n_features=3", a keyword train has no flag for (experiment's folds got
    the same fix)."""
    from ltrboost.cli import main

    tr = tmp_path / "tr.txt"
    tr.write_text(
        "1 qid:1 1:0.5 2:1 3:1\n0 qid:1 1:0.2 2:0.1 3:0\n2 qid:2 1:0.3 3:1\n0 qid:2 2:0.5\n"
    )
    va = tmp_path / "va.txt"
    va.write_text("1 qid:1 1:0.5 5:1\n0 qid:1 2:0.1\n")
    out = tmp_path / "m.json"
    args = ["train", str(tr), "--valid", str(va), "--n-estimators", "2", "-q", "--output", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"va.txt:1: feature index 5 is above the 3 features of the training data ({tr})" in err
    assert "n_features" not in err
    assert not out.exists()
