"""Tests of the command line: ``ltrboost generate | train | predict | eval``.

Everything runs through ``cli.main([...])`` inside ``tmp_path`` (fast, and an uncaught
exception fails the test with its traceback), plus one real ``python -m ltrboost``
subprocess.  Bad input must exit with status 2 and print exactly one line,
``ltrboost: error: FILE[:LINE]: problem``, on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from ltrboost import load_model, load_svmlight
from ltrboost.booster import BoosterParams
from ltrboost.cli import build_parser, main
from ltrboost.metrics import evaluate

# Small enough for a few hundred milliseconds per training run.
N_QUERIES = 30
DOCS_PER_QUERY = 12
N_FEATURES = 8
TRAIN_FLAGS = ["-q", "--min-samples-leaf", "5", "--max-leaf-nodes", "8"]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``main(argv)`` with captured output; returns (exit status, stdout, stderr)."""
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line_error(rc: int, err: str, *needles: str) -> str:
    """Exit status 2 and a single ``ltrboost: error:`` line containing ``needles``."""
    assert rc == 2, err
    assert "Traceback" not in err
    lines = err.strip().split("\n")
    assert len(lines) == 1, f"expected one line on stderr, got {lines!r}"
    line = lines[0]
    assert line.startswith("ltrboost: error: "), line
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ltrboost generate`` output (train/vali/test), shared by the module."""
    folder = tmp_path_factory.mktemp("cli") / "data"
    rc = main(
        [
            "generate",
            str(folder),
            "--n-queries",
            str(N_QUERIES),
            "--docs-per-query",
            str(DOCS_PER_QUERY),
            "--n-features",
            str(N_FEATURES),
            "--random-state",
            "0",
        ]
    )
    assert rc == 0
    return folder


@pytest.fixture(scope="module")
def model_path(data_dir: Path) -> Path:
    """A model trained on ``data_dir`` with validation and early stopping."""
    path = data_dir.parent / "m.json"
    rc = main(
        [
            "train",
            str(data_dir / "train.txt"),
            "--valid",
            str(data_dir / "vali.txt"),
            "--metric",
            "ndcg@10",
            "--early-stopping-rounds",
            "3",
            "--n-estimators",
            "10",
            "--output",
            str(path),
            *TRAIN_FLAGS,
        ]
    )
    assert rc == 0
    return path


def _train_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["train"]


# ----------------------------------------------------------------------- generate
def test_generate_writes_three_letor_files(data_dir: Path) -> None:
    qids = {}
    for name in ("train.txt", "vali.txt", "test.txt"):
        data = load_svmlight(data_dir / name)
        assert data.X.shape[1] == N_FEATURES
        assert data.qid is not None
        assert np.all(np.diff(data.qid) >= 0)  # contiguous queries
        qids[name] = set(data.qid.tolist())
    assert len(qids["train.txt"]) == N_QUERIES
    # the three parts hold disjoint queries
    assert not qids["train.txt"] & qids["vali.txt"]
    assert not qids["train.txt"] & qids["test.txt"]
    assert not qids["vali.txt"] & qids["test.txt"]


# -------------------------------------------------------------------------- train
def test_train_with_validation_and_early_stopping(
    data_dir: Path, model_path: Path, tmp_path: Path, capsys
) -> None:
    booster = load_model(model_path)
    assert booster.objective == "lambdamart"
    assert booster.n_features == N_FEATURES
    assert 1 <= booster.n_iterations <= 10
    assert booster.best_iteration is not None
    assert 1 <= booster.best_iteration <= booster.n_iterations
    history = booster.evals_result["valid"]["ndcg@10"]
    assert len(history) == booster.n_iterations
    assert booster.best_iteration == int(np.argmax(history)) + 1

    # the summary line names the file and the best iteration
    out = tmp_path / "again.json"
    rc, _, err = run(
        [
            "train",
            data_dir / "train.txt",
            "--valid",
            data_dir / "vali.txt",
            "--metric",
            "ndcg@10",
            "--early-stopping-rounds",
            "3",
            "--n-estimators",
            "10",
            "--output",
            out,
            *TRAIN_FLAGS,
        ],
        capsys,
    )
    assert rc == 0
    assert f"wrote {out}" in err
    assert "best iteration" in err
    # same data and flags: the same file, byte for byte
    assert out.read_bytes() == model_path.read_bytes()


def test_train_flags_reach_the_model(data_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "m.json"
    rc, _, _ = run(
        [
            "train",
            data_dir / "train.txt",
            "-q",
            "--objective",
            "mcrank",
            "--n-estimators",
            "3",
            "--learning-rate",
            "0.25",
            "--max-leaf-nodes",
            "4",
            "--min-samples-leaf",
            "3",
            "--split-criterion",
            "se",
            "--growth",
            "depth_first",
            "--max-depth",
            "2",
            "--output",
            out,
        ],
        capsys,
    )
    assert rc == 0
    booster = load_model(out)
    assert booster.objective == "mcrank"
    assert booster.n_outputs > 1
    assert booster.n_iterations == 3
    p = booster.params
    assert p["learning_rate"] == 0.25
    assert p["max_leaf_nodes"] == 4
    assert p["split_criterion"] == "se"
    assert p["growth"] == "depth_first"
    assert p["max_depth"] == 2
    assert max(int(t["depth"].max()) for t in booster.trees) <= 2


def _sample_value(annotation: str) -> tuple[str, object]:
    """A command-line value for a field of this type, and what it should parse to."""
    ann = annotation.replace(" ", "")
    base = ann.split("|")[0]
    if base == "int":
        return "7", 7
    if base == "float":
        return "0.25", 0.25
    if base == "bool":
        return "false", False
    if base == "str":
        return "ndcg@5", "ndcg@5"
    return "[1, 2.5]", [1, 2.5]  # Any: JSON


def test_every_booster_param_is_a_kebab_case_flag(capsys) -> None:
    parser = _train_parser()
    option_dest = {opt: action.dest for action in parser._actions for opt in action.option_strings}
    status = main(["train", "--help"])
    assert status == 0
    help_text = capsys.readouterr().out
    for f in fields(BoosterParams):
        flag = "--" + f.name.replace("_", "-")
        assert option_dest.get(flag) == f.name, flag
        if f.name == "eval_metric":  # spelled --metric; --eval-metric a hidden alias
            assert option_dest["--metric"] == "eval_metric"
            assert flag not in help_text
        else:
            assert flag in help_text, flag

        # the flag parses to the field's type; "none" gives None for optional fields
        text, expected = _sample_value(str(f.type))
        ns = parser.parse_args(["data.txt", flag, text])
        assert getattr(ns, f.name) == expected, (flag, getattr(ns, f.name))
        if "None" in str(f.type):
            ns = parser.parse_args(["data.txt", flag, "none"])
            assert getattr(ns, f.name) is None, flag

    # a flag not given is not set, so BoosterParams keeps its own default
    ns = parser.parse_args(["data.txt"])
    names = {f.name for f in fields(BoosterParams)}
    given = {k: v for k, v in vars(ns).items() if k in names}
    assert BoosterParams(**given) == BoosterParams(eval_metric=ns.eval_metric)


def test_bool_flag_rejects_garbage(capsys) -> None:
    status = main(["train", "x.txt", "--lambda-normalization", "maybe"])
    assert status == 2
    assert "lambda-normalization" in capsys.readouterr().err


def test_checkpoint_every_2_leaves_a_valid_model(
    data_dir: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ltrboost.io.model_json as model_json

    original = model_json.save_model
    saved: list[tuple[str, int]] = []

    def recording_save(booster, path, **kw) -> None:
        original(booster, path, **kw)
        # valid after every write, and identical to a fresh serialization
        assert Path(path).read_text() == "".join(model_json.model_json_chunks(booster))
        saved.append((Path(path).name, load_model(path).n_iterations))

    monkeypatch.setattr(model_json, "save_model", recording_save)
    out = tmp_path / "m.json"
    rc, _, _ = run(
        [
            "train",
            data_dir / "train.txt",
            "--n-estimators",
            "7",
            "--checkpoint-every",
            "2",
            "--output",
            out,
            *TRAIN_FLAGS,
        ],
        capsys,
    )
    assert rc == 0
    # three checkpoints to their own file, then the final model to the output
    ck = "m.json.checkpoint"
    assert saved == [(ck, 2), (ck, 4), (ck, 6), ("m.json", 7)]
    assert load_model(out).n_iterations == 7
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "m.json"]
    assert leftovers == []  # the checkpoint is removed once the output is written


def test_resume_continues_training(data_dir: Path, tmp_path: Path, capsys) -> None:
    part = tmp_path / "part.json"
    full = tmp_path / "full.json"
    rc, _, _ = run(
        [
            "train",
            data_dir / "train.txt",
            "--n-estimators",
            "4",
            "-o",
            part,
            *TRAIN_FLAGS,
        ],
        capsys,
    )
    assert rc == 0
    rc, _, err = run(
        [
            "train",
            data_dir / "train.txt",
            "--n-estimators",
            "9",
            "--resume",
            part,
            "-o",
            full,
            *TRAIN_FLAGS,
        ],
        capsys,
    )
    assert rc == 0, err
    first = load_model(part)
    resumed = load_model(full)
    assert resumed.n_iterations == 9
    for a, b in zip(first.trees, resumed.trees[:4], strict=True):
        assert a.tobytes() == b.tobytes()


# ------------------------------------------------------------------------ predict
def test_predict_one_score_per_data_line_in_input_order(
    data_dir: Path, model_path: Path, tmp_path: Path, capsys
) -> None:
    lines = (data_dir / "test.txt").read_text().splitlines()
    rng = np.random.default_rng(0)
    shuffled = [lines[i] for i in rng.permutation(len(lines))]  # qids interleaved
    # comments and blank lines are not data lines
    text = "# a comment line\n" + "\n".join(shuffled[:5]) + "\n\n" + "\n".join(shuffled[5:])
    data_file = tmp_path / "shuffled.txt"
    data_file.write_text(text + "\n")
    expected = load_model(model_path).predict(load_svmlight(data_file).X)

    rc, out, err = run(["predict", model_path, data_file], capsys)
    assert rc == 0, err
    scores = np.array([float(s) for s in out.split()])
    assert scores.shape == (len(lines),)
    np.testing.assert_array_equal(scores, expected)

    # to a file, with --iteration
    score_file = tmp_path / "scores.txt"
    rc, out, _ = run(
        ["predict", model_path, data_file, "--iteration", "1", "-o", score_file],
        capsys,
    )
    assert rc == 0
    assert out == ""
    from_file = np.array([float(s) for s in score_file.read_text().splitlines()])
    expected_1 = load_model(model_path).predict(load_svmlight(data_file).X, iteration=1)
    np.testing.assert_array_equal(from_file, expected_1)


def test_predict_does_not_need_qid_nor_all_features(
    data_dir: Path, model_path: Path, tmp_path: Path, capsys
) -> None:
    # no qid:, and the last feature never present: padded to the model's width
    lines = (data_dir / "test.txt").read_text().splitlines()
    stripped = []
    for line in lines:
        tokens = [
            t
            for t in line.split()
            if not t.startswith("qid:") and not t.startswith(f"{N_FEATURES}:")
        ]
        stripped.append(" ".join(tokens))
    data_file = tmp_path / "plain.txt"
    data_file.write_text("\n".join(stripped) + "\n")
    X = load_svmlight(data_file, n_features=N_FEATURES).X
    rc, out, err = run(["predict", model_path, data_file], capsys)
    assert rc == 0, err
    scores = np.array([float(s) for s in out.split()])
    np.testing.assert_array_equal(scores, load_model(model_path).predict(X))


# --------------------------------------------------------------------------- eval
def test_eval_table_and_json(data_dir: Path, model_path: Path, capsys) -> None:
    test_file = str(data_dir / "test.txt")
    vali_file = str(data_dir / "vali.txt")
    rc, out, _ = run(["eval", model_path, test_file, vali_file, "--metric", "ndcg@10,map"], capsys)
    assert rc == 0
    table = out.strip().splitlines()
    assert len(table) == 3
    assert table[0].split() == ["data", "ndcg@10", "map", "queries"]
    assert table[1].split()[0] == test_file
    assert table[2].split()[0] == vali_file

    rc, out, _ = run(
        ["eval", model_path, test_file, "--metric", "ndcg@10,err@5,mrr", "--json"],
        capsys,
    )
    assert rc == 0
    result = json.loads(out)
    assert set(result) == {test_file}
    row = result[test_file]
    assert set(row) == {"ndcg@10", "err@5", "mrr", "n_queries"}
    data = load_svmlight(test_file)
    from ltrboost import make_dataset

    ds = make_dataset(data.X, data.y, qid=data.qid)
    scores = load_model(model_path).predict(ds.X)
    expected = evaluate(scores, ds.y, ds.query_offsets, metrics=["ndcg@10", "err@5", "mrr"])
    for m in ("ndcg@10", "err@5", "mrr"):
        assert row[m] == pytest.approx(expected[m], rel=1e-12)
        assert 0.0 <= row[m] <= 1.0
    assert row["n_queries"] == ds.n_queries
    # the table shows the same numbers, rounded
    rc, out, _ = run(["eval", model_path, test_file, "--metric", "ndcg@10"], capsys)
    assert float(out.splitlines()[1].split()[1]) == pytest.approx(row["ndcg@10"], abs=5e-5)


# ---------------------------------------------------------------------- bad input
@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


BAD_DATA = {
    # name: (file content, text that must appear in the message)
    "empty.txt": ("", "empty.txt:1:"),
    "comments_only.txt": ("# nothing\n\n", "comments_only.txt:"),
    "label_not_a_number.txt": (
        "1 qid:1 1:0.5\nabc qid:1 1:0.3\n",
        "label_not_a_number.txt:2:",
    ),
    "missing_qid.txt": (
        "1 qid:1 1:0.5\n2 qid:1 1:0.1\n0 1:0.3\n",
        "missing_qid.txt:3:",
    ),
    "malformed_token.txt": (
        "1 qid:1 1:0.5\n0 qid:1 1:0.3 2-0.4\n",
        "malformed_token.txt:2:",
    ),
    "value_not_a_number.txt": (
        "1 qid:1 1:0.5 2:0.1\n0 qid:1 1:0.3 2:abc\n",
        "value_not_a_number.txt:2:",
    ),
    "zero_index.txt": ("1 qid:1 0:0.5\n", "zero_index.txt:1:"),
    "infinite_value.txt": ("1 qid:1 1:0.5\n0 qid:1 1:inf\n", "infinite_value.txt:2:"),
    "qid_not_integer.txt": ("1 qid:x 1:0.5\n", "qid_not_integer.txt:1:"),
    "repeated_index.txt": ("1 qid:1 1:0.5 1:0.3\n", "repeated_index.txt:1:"),
    "not_utf8.txt": (b"1 qid:1 1:0.5\n0 qid:1 1:0.3 # caf\xe9\n", "not_utf8.txt:2:"),
}


@pytest.mark.parametrize("name", sorted(BAD_DATA))
def test_train_bad_data_file(name: str, in_tmp: Path, capsys) -> None:
    content, needle = BAD_DATA[name]
    if isinstance(content, bytes):
        Path(name).write_bytes(content)
    else:
        Path(name).write_text(content)
    rc, _, err = run(["train", name, "-q", "--n-estimators", "2"], capsys)
    assert_one_line_error(rc, err, needle)
    assert not Path("model.json").exists()


def test_train_nonexistent_file(in_tmp: Path, capsys) -> None:
    rc, _, err = run(["train", "no_such_file.txt", "-q"], capsys)
    assert_one_line_error(rc, err, "no_such_file.txt")


def test_train_bad_validation_file(data_dir: Path, in_tmp: Path, capsys) -> None:
    Path("vali.txt").write_text("1 qid:1 1:0.5\n0 qid:1 1:oops\n")
    rc, _, err = run(["train", data_dir / "train.txt", "--valid", "vali.txt", "-q"], capsys)
    assert_one_line_error(rc, err, "vali.txt:2:")


def test_train_no_qid_anywhere(in_tmp: Path, capsys) -> None:
    Path("plain.txt").write_text("1 1:0.5\n0 1:0.3\n")
    rc, _, err = run(["train", "plain.txt", "-q"], capsys)
    assert_one_line_error(rc, err, "plain.txt", "qid")


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--n-estimators", "0"),
        ("--max-leaf-nodes", "1"),
        ("--learning-rate", "-0.1"),
        ("--subsample", "1.5"),
        ("--split-criterion", "gini"),
        ("--growth", "random"),
        ("--objective", "nope"),
        ("--pair-method", "bogus"),
        ("--metric", "ndcg@x"),
        ("--checkpoint-every", "-1"),
    ],
)
def test_train_bad_parameter_quiet(
    flag: str, value: str, data_dir: Path, in_tmp: Path, capsys
) -> None:
    argv = ["train", data_dir / "train.txt", "-q", flag, value]
    if flag == "--metric":
        argv += ["--valid", data_dir / "vali.txt"]
    rc, _, err = run(argv, capsys)
    name = flag.lstrip("-").replace("-", "_")
    if flag == "--metric":
        name = "metric"
    if flag == "--checkpoint-every":
        name = "checkpoint-every"
    line = assert_one_line_error(rc, err)
    assert name in line or f"{flag}=" in line, line  # the parameters' checks name the flag
    assert not Path("model.json").exists()


@pytest.mark.parametrize(("flag", "value"), [("--objective", "nope"), ("--pair-method", "bogus")])
def test_train_bad_parameter_with_progress_bar(
    flag: str, value: str, data_dir: Path, in_tmp: Path, capsys
) -> None:
    rc, _, err = run(["train", data_dir / "train.txt", flag, value], capsys)
    assert_one_line_error(rc, err, f"{flag}=")  # the flag, not the Python name


def test_checkpoint_every_zero_is_refused(data_dir: Path, in_tmp: Path, capsys) -> None:
    rc, _, err = run(
        [
            "train",
            data_dir / "train.txt",
            "-q",
            "--n-estimators",
            "2",
            "--checkpoint-every",
            "0",
        ],
        capsys,
    )
    assert_one_line_error(rc, err, "checkpoint-every")


def test_train_output_directory_missing(data_dir: Path, in_tmp: Path, capsys) -> None:
    rc, _, err = run(
        [
            "train",
            data_dir / "train.txt",
            "-q",
            "--n-estimators",
            "2",
            "-o",
            "nodir/m.json",
        ],
        capsys,
    )
    assert_one_line_error(rc, err, "nodir")
    assert "m.json" in err
    assert ".tmp" not in err  # the user's path, not the temporary file's
    assert not Path("nodir").exists()


def test_predict_feature_beyond_model(model_path: Path, in_tmp: Path, capsys) -> None:
    Path("wide.txt").write_text(f"1 qid:1 1:0.5\n0 qid:1 1:0.3 {N_FEATURES + 1}:0.4\n")
    rc, out, err = run(["predict", model_path, "wide.txt"], capsys)
    assert_one_line_error(rc, err, "wide.txt:2:", str(N_FEATURES + 1))
    assert out == ""
    rc, _, err = run(["eval", model_path, "wide.txt"], capsys)
    assert_one_line_error(rc, err, "wide.txt:2:")


@pytest.mark.parametrize("command", ["predict", "eval"])
@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("truncated.json", '{"format": "ltrboost-model", "trees": ['),
        ("not_a_model.json", '{"hello": 1}'),
        ("binary.json", b"\x00\xff\xfe" * 50),
        ("wrong_version.json", '{"format": "ltrboost-model", "format_version": 99}'),
    ],
)
def test_corrupt_model_file(
    command: str, name: str, content, data_dir: Path, in_tmp: Path, capsys
) -> None:
    if isinstance(content, bytes):
        Path(name).write_bytes(content)
    else:
        Path(name).write_text(content)
    rc, out, err = run([command, name, data_dir / "test.txt"], capsys)
    assert_one_line_error(rc, err, name)
    assert out == ""


def test_corrupt_model_given_to_resume(data_dir: Path, in_tmp: Path, capsys) -> None:
    Path("bad.json").write_text("{")
    rc, _, err = run(["train", data_dir / "train.txt", "-q", "--resume", "bad.json"], capsys)
    assert_one_line_error(rc, err, "bad.json")


def test_model_with_inconsistent_tree(
    model_path: Path, data_dir: Path, in_tmp: Path, capsys
) -> None:
    d = json.loads(model_path.read_text())
    d["trees"][0]["left"][0] = 0  # the root becomes its own child: a cycle
    Path("cycle.json").write_text(json.dumps(d))
    rc, _, err = run(["predict", "cycle.json", data_dir / "test.txt"], capsys)
    assert_one_line_error(rc, err, "cycle.json", "tree 0")


def test_nonexistent_model_and_data(model_path: Path, data_dir: Path, in_tmp: Path, capsys) -> None:
    rc, _, err = run(["predict", "missing.json", data_dir / "test.txt"], capsys)
    assert_one_line_error(rc, err, "missing.json")
    rc, _, err = run(["predict", model_path, "missing.txt"], capsys)
    assert_one_line_error(rc, err, "missing.txt")
    rc, _, err = run(["eval", model_path, "missing.txt"], capsys)
    assert_one_line_error(rc, err, "missing.txt")


def test_predict_iteration_out_of_range(model_path: Path, data_dir: Path, capsys) -> None:
    rc, out, err = run(["predict", model_path, data_dir / "test.txt", "--iteration", "999"], capsys)
    assert_one_line_error(rc, err, "--iteration 999")
    assert out == ""


def test_resume_with_another_objective(
    model_path: Path, data_dir: Path, in_tmp: Path, capsys
) -> None:
    argv = ["train", data_dir / "train.txt", "-q", "--resume", model_path]
    rc, _, err = run([*argv, "--objective", "ranknet"], capsys)
    assert_one_line_error(rc, err, "objective")
    assert not Path("model.json").exists()


def test_eval_bad_metric(model_path: Path, data_dir: Path, capsys) -> None:
    rc, _, err = run(["eval", model_path, data_dir / "test.txt", "--metric", "ndgc@10"], capsys)
    assert_one_line_error(rc, err, "ndgc@10")


# ------------------------------------------------------------- a real subprocess
def test_python_m_ltrboost_bad_input_subprocess(tmp_path: Path) -> None:
    """The real entry point, as a shell user sees it: status 2, one line, no traceback.

    (Successful ``python -m ltrboost train`` runs are exercised by the kill, Ctrl-C and
    cross-process determinism tests in ``test_robustness.py``.)
    """
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.2\nx qid:2 1:0.1\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ltrboost",
            "train",
            str(bad),
            "-o",
            str(tmp_path / "m.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.stdout == ""
    assert_one_line_error(proc.returncode, proc.stderr, f"{bad}:3:", "label")
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--n-estimators", "0"], "--n-estimators=0 must be >= 1"),
        (["--subsample", "2"], "--subsample=2.0 must be in (0, 1]"),
        (["--random-state", "-1"], "--random-state=-1 must be >= 0"),
        (["--min-samples-leaf", "0"], "--min-samples-leaf=0 must be >= 1"),
    ],
)
def test_parameter_errors_name_the_flag(argv, needle, data_dir: Path, in_tmp: Path, capsys):
    """The parameters' checks said ``n_estimators=0 must be >= 1`` on the command line,
    a name the CLI user never typed (found again and again by the adversarial passes)."""
    rc, _, err = run(["train", data_dir / "train.txt", "-q", *argv], capsys)
    assert_one_line_error(rc, err, needle)
    rc, _, err = run(["cv", data_dir / "train.txt", *argv], capsys)
    assert_one_line_error(rc, err, needle)
