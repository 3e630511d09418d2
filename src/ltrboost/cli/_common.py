"""What every command shares: the exit statuses, the checks of the inputs and outputs
named on the command line (made before any data is read), the readers of LETOR data
and model files as the commands use them, and the rewording of the library's errors
and warnings in the CLI's terms (a parameter named by its flag, ``--n-estimators``,
not its Python keyword)."""

from __future__ import annotations

import argparse
import errno
import os
import re
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from ltrboost.params import PARAM_NAMES, BoosterParams

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM
EXIT_HANGUP = 129  # 128 + SIGHUP (the terminal closed)
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a program the pipe's signal ended

# The problem of a closed stdout (``>&-``, pythonw: Python's is None), after "stdout: ".
STDOUT_CLOSED = "closed (nowhere to write the output)"


def _drop_unwritten(stream: Any) -> None:
    """After a write error on stdout (``> /dev/full``): write the text the failed write
    left in Python's buffer of ``stream`` to /dev/null, so that the interpreter's last
    flush has nothing to write and fails no more (it printed "Exception ignored in:
    <_io.TextIOWrapper name='<stdout>'> OSError" after the error line, and the exit
    status was 120).  The file descriptor is then put back: a Python caller's stdout
    still goes where it went.  The same after a reader of the pipe left (status 141),
    where the interpreter's last flush failed with BrokenPipeError."""
    try:
        fd = stream.fileno()
        saved = os.dup(fd)
    except (OSError, ValueError, AttributeError):  # closed, or no file (a StringIO)
        return
    try:
        inheritable = os.get_inheritable(fd)
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, fd, inheritable=inheritable)
        finally:
            os.close(null)
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
        os.dup2(saved, fd, inheritable=inheritable)
    except OSError:
        pass  # the write error is reported all the same
    finally:
        os.close(saved)


def _print_help_text(parser: argparse.ArgumentParser, text: str) -> None:
    """Print the text of ``--help`` or ``--version`` on stdout, flushed: a stdout that
    cannot take it (``> /dev/full``) is the one error line and status 2, a reader that
    left (``| head -1``) status 141, silently, as for a command's output.  argparse
    dropped the write's error (a long help was lost and the status was 0), or a short
    help failed at the interpreter's last flush: status 120 after "Exception ignored
    in: <_io.TextIOWrapper name='<stdout>'>".  A closed stdout (``>&-``, pythonw:
    Python's is None) is its error line and status 2, as for a command's output (the
    help went to stderr, status 0)."""
    stream = sys.stdout
    if stream is None:
        parser.exit(EXIT_BAD_INPUT, f"ltrboost: error: stdout: {STDOUT_CLOSED}\n")
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        _drop_unwritten(stream)
        raise SystemExit(EXIT_BROKEN_PIPE) from None
    except OSError as e:
        _drop_unwritten(stream)
        parser.exit(EXIT_BAD_INPUT, f"ltrboost: error: stdout: {e.strerror or e}\n")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _error_as_flags(e: Exception) -> str:
    """The message of ``e``; a :class:`~ltrboost.params.ParameterError` names the
    training parameters by their flags (an input error's location kept as it is), as
    does a :class:`~ltrboost._checks.NonFiniteTrainingError`'s list of likely causes
    (``learning_rate=1e+300`` was the Python keyword), and an
    :class:`~ltrboost.export.ExportError` by its ``cli_message`` (``--assume-no-missing``
    where Python reads ``assume_no_missing=True``)."""
    from ltrboost._checks import NonFiniteTrainingError
    from ltrboost.dataset import LTRInputError
    from ltrboost.export._trees import ExportError
    from ltrboost.params import ParameterError

    if isinstance(e, NonFiniteTrainingError):
        return _params_as_flags(str(e), bare=True)
    if isinstance(e, ExportError):
        return e.cli_message
    if not isinstance(e, ParameterError):
        return str(e)
    if isinstance(e, LTRInputError):  # the path is the user's, not a parameter
        problem = _params_as_flags(e.problem, bare=True)
        return str(LTRInputError(problem, e.path, e.line, row=e.row, pair=getattr(e, "pair", None)))
    return _params_as_flags(str(e), bare=True)


# Arguments that name files a command writes; and inputs a command may rewrite on
# purpose (train --resume M --output M extends the model M).
_OUTPUT_ARGS = ("output", "createmodel")
_REWRITABLE_INPUTS = ("resume",)


# The commands that take --gain (a label above 31 names it as the remedy).
_GAIN_COMMANDS = ("train", "cv", "eval")

# The commands whose --output may be '-' (stdout): the others write files or folders.
_STDOUT_COMMANDS = ("predict", "export")


def _write_all(raw: Any, data: bytes, write: Any = None) -> None:
    """Write all of ``data`` to the raw file ``raw`` (stdout under ``python -u``), whose
    ``write`` may take part of it (a short write: the reader of a pipe left, a signal,
    a disk that filled), until all is written or the error shows; a non-blocking file
    that is full is waited on, not spun on.  ``write``: the call that writes, when not
    ``raw.write`` (one that rewords its errors)."""
    write = raw.write if write is None else write
    view = memoryview(data)
    while view:
        n = write(view)
        if n is None:  # a non-blocking file that is full: wait, do not spin
            import select

            select.select([], [raw], [])
        view = view[n or 0 :]


def _refuse_stdout_output(args: argparse.Namespace) -> None:
    """Refuse the output ``-`` where it is no stdout: it wrote a file named ``-``."""
    if getattr(args, "output", None) != "-" or args.command in _STDOUT_COMMANDS:
        return
    command = " ".join(
        c for c in (args.command, getattr(args, "clicks_command", None)) if isinstance(c, str)
    )
    raise ValueError(
        f"output '-': '{command}' writes files, not stdout ('-' is stdout for predict "
        "and export only); give a file name"
    )


# The arguments that name a file (or a folder) a command reads, as the messages name them.
_INPUT_ARGS = {
    "train": "TRAIN",
    "valid": "--valid",
    "resume": "--resume",
    "pairs": "--pairs",
    "position": "--position",
    "model": "MODEL",
    "data": "DATA",
    "log": "LOG",
    "feature_names": "--feature-names",
    "folder": "FOLDER",
}


def _input_paths(args: argparse.Namespace):
    """``(name, label, path)`` for every file (or folder) the command reads, in the
    order of :data:`_INPUT_ARGS`; ``label`` as the messages name the argument."""
    clicks = getattr(args, "clicks_command", None)
    for name, label in _INPUT_ARGS.items():
        if (name, args.command) in (("folder", "generate"), ("model", "clicks")):
            continue  # generate's output folder; clicks simulate's click model (a choice)
        if name == "data" and clicks in ("mine", "dataset"):
            label = "--data"
        value = getattr(args, name, None)
        for path in value if isinstance(value, list) else [value]:
            if isinstance(path, str):
                yield name, label, path


def _refuse_stdin_input(args: argparse.Namespace) -> None:
    """Refuse the input ``-``: it read a file named ``-`` ("-: No such file or
    directory").  Standard input is not read: inputs are files, read by name (a
    ``.query``/``.position`` sidecar is looked up beside them); a pipe can be given as
    ``/dev/stdin``, which the readers take as a file read once."""
    for _name, label, path in _input_paths(args):
        if path != "-":
            continue
        raise ValueError(
            f"{label} '-': standard input is not read (inputs are files, read by name); "
            "give a file name (a pipe can be given as /dev/stdin)"
        )


# What the readers of these inputs say they could not read ("cannot read pairs file").
_INPUT_READ_AS = {
    "resume": "cannot read",
    "pairs": "cannot read pairs file",
    "position": "cannot read position file",
    "model": "cannot read",
    "log": "cannot read click log",
    "feature_names": "cannot read feature names",
}


def _folder_problem(name: str, path: str) -> str:
    """Why the folder ``path`` cannot be the input ``name``: 'Is a directory', or for a
    data file, what the reader says of convert's Parquet folder."""
    if name in ("train", "valid", "data"):
        from ltrboost.io.letor import _refuse_parquet_folder

        try:
            _refuse_parquet_folder(path)
        except IsADirectoryError as e:
            return e.strerror
    return os.strerror(errno.EISDIR)


def _check_inputs(args: argparse.Namespace, only: tuple[str, ...] | None = None) -> None:
    """Every input named on the command line exists and can be read, before any data
    is: a missing ``--valid``, ``--pairs`` or ``--position`` file (or the second file
    of ``eval``) was reported only once the training file (gigabytes, minutes) had
    been read and parsed.  Each command calls it after the checks of its flags alone
    (those come first, whatever the files) and before it reads its first input.  Only
    ``stat`` and ``access``: nothing is opened, so a FIFO or ``/dev/stdin`` (a pipe
    given by name) is taken as it is, not blocked on or consumed.  A flag's file is
    named with its flag (``--valid FILE: No such file or directory``), a positional
    one by its path, as the readers name it.  ``only``: these arguments alone."""
    import stat

    for name, label, path in _input_paths(args):
        if only is not None and name not in only:
            continue
        folder = name == "folder"  # experiment's folder of folds
        try:
            mode = os.stat(path).st_mode
        except (OSError, ValueError) as e:  # ValueError: a NUL in the path
            problem = getattr(e, "strerror", None) or str(e)
        else:
            if folder and not stat.S_ISDIR(mode):
                problem = os.strerror(errno.ENOTDIR)
            elif not folder and stat.S_ISDIR(mode):
                problem = _folder_problem(name, path)
            elif not os.access(path, os.R_OK | (os.X_OK if folder else 0)):
                problem = os.strerror(errno.EACCES)
            else:
                continue
        shown = f"{label} {path or repr(path)}" if label.startswith("--") else path or "''"
        what = _INPUT_READ_AS.get(name)  # as the reader's own error says it
        raise ValueError(f"{shown}: {what}: {problem}" if what else f"{shown}: {problem}")


def _refuse_output_over_input(args: argparse.Namespace) -> None:
    """Refuse an output file that is also one of the command's input files (the same
    file by device and inode: a link or another spelling included), or a data file's
    ``.query`` / ``.position`` sidecar: the atomic write would replace the input with
    the output (a typo away from losing the training data or the model)."""
    outputs = []
    for name in _OUTPUT_ARGS:
        value = getattr(args, name, None)
        if isinstance(value, str) and value not in ("", "-") and os.path.isfile(value):
            outputs.append((name, value))
    out = getattr(args, "output", None)
    if getattr(args, "checkpoint_every", None) is not None and isinstance(out, str):
        ck = checkpoint_path(out)  # written during training (a link is followed)
        _refuse_checkpoint_over_output(out, ck)
        if os.path.isfile(ck):
            outputs.append(("checkpoint", ck))
    if getattr(args, "clicks_command", None) == "dataset" and isinstance(out, str):
        if os.path.isfile(out + ".position"):  # written beside the LETOR output
            outputs.append(("position", out + ".position"))
    if not outputs:
        return
    inputs = []
    for name, value in vars(args).items():
        if name in _OUTPUT_ARGS:
            continue
        for v in value if isinstance(value, list | tuple) else [value]:
            if isinstance(v, str) and v:
                inputs += [(name, v), (name, v + ".query"), (name, v + ".position")]
    for out_name, out in outputs:
        for in_name, path in inputs:
            if in_name in _REWRITABLE_INPUTS and _may_rewrite(out_name, out, path):
                continue
            try:
                same = os.path.isfile(path) and os.path.samefile(out, path)
            except OSError:
                same = False
            if same:
                flag = {
                    "checkpoint": "--checkpoint-every's OUTPUT.checkpoint",
                    "position": "--output's OUTPUT.position",
                }.get(out_name, "--" + out_name.replace("_", "-"))
                if out_name == "output" and args.command == "convert":
                    flag = "OUT"  # convert's output is a positional argument
                raise ValueError(
                    f"{out}: {flag} names an input of this command ({in_name}: {path}); "
                    "writing it would replace that input; give another output path"
                )


def _may_rewrite(out_name: str, out: str, path: str) -> bool:
    """Whether the output ``out`` may replace the input ``path`` of a rewritable kind
    (``--resume``): ``--output`` may (it extends the model), and so may the checkpoint
    when ``--resume`` names the checkpoint (continuing a killed run); a checkpoint that
    is a link to another resumed model would replace a file the user did not name."""
    if out_name != "checkpoint" or not os.path.islink(out):
        return True
    return os.path.abspath(out) == os.path.abspath(path)


def _refuse_checkpoint_over_output(output: str, ck: str) -> None:
    """``OUTPUT.checkpoint`` that leads to the output itself (a link, or a dangling
    link to where the output will be): every checkpoint would replace the previous
    complete model at the output with a partial one, the one thing checkpoints to
    their own file exist to prevent."""
    if os.path.realpath(ck) == os.path.realpath(output):
        raise ValueError(
            f"{ck}: --checkpoint-every's OUTPUT.checkpoint is the same file as --output "
            f"{output} (a link to it); checkpoints would replace the output's previous "
            "model; remove the link or give another --output"
        )


def checkpoint_path(output: str) -> str:
    """Where ``--checkpoint-every`` writes: ``OUTPUT.checkpoint``, never the output."""
    return output + ".checkpoint"


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as one ``ltrboost: warning: ...`` line, like errors; the parameters a
    :class:`~ltrboost.params.ParameterWarning` names are spelled as their flags."""
    print(f"ltrboost: warning: {_warning_text(message, category)}", file=sys.stderr)


def _warning_text(message, category=None) -> str:
    """A warning's text as the CLI shows it (:func:`_show_warning`; also its error
    line when warnings are errors, ``python -W error``): a
    :class:`~ltrboost.params.ParameterWarning`'s parameters spelled as their flags,
    without the library's own ``ltrboost:`` prefix."""
    from ltrboost.params import ParameterWarning

    if category is None:
        category = type(message)
    if isinstance(category, type) and issubclass(category, ParameterWarning):
        message = _params_as_flags(str(message), bare=True)
    return str(message).removeprefix("ltrboost: ")  # the library's own prefix


def one_grade_queries(y, query_offsets) -> int:
    """How many queries of ``y`` (grouped by ``query_offsets``) hold documents of one
    grade only (:func:`ltrboost.dataset.one_grade_queries`)."""
    from ltrboost.dataset import one_grade_queries as one_grade

    return int(one_grade(y, query_offsets).sum())


def one_grade_warning(n_one: int, n_queries: int, where: str, noun: str) -> str | None:
    """The warning of ``ltrboost eval`` for a file, and of ``ltrboost cv`` for a fold's
    test queries, whose every query holds one grade (``n_one == n_queries``): each
    metric is then the same whatever the scores (NDCG 1.0), so the number says
    nothing of the model.  None otherwise: queries of one grade among others are
    common (22-33% of each MQ2008 file's queries), and are not warned of.  ``noun``: what a query is
    called there (``"query"``, ``"test query"``)."""
    if n_queries == 0 or n_one < n_queries:
        return None
    plural = noun[: -len("query")] + "queries"
    what = f"its only {noun} holds" if n_queries == 1 else f"all {n_queries} of its {plural} hold"
    return (
        f"{where}: {what} documents of one grade: no ranking changes their metrics, "
        "which are the same whatever the scores (NDCG 1.0); the numbers say nothing of "
        "the model"
    )


def _check_missing_tokens(args: argparse.Namespace) -> None:
    """``--missing-token`` values, checked as ``na_values`` are; the error names the
    flag, not the Python keyword."""
    tokens = getattr(args, "missing_token", None)
    if tokens:
        from ltrboost.io.letor import _check_na_values

        try:
            _check_na_values(tokens)
        except ValueError as e:
            raise ValueError(f"--missing-token {str(e).removeprefix('na_values entry ')}") from None


def resolve_missing(flag: str | None, model, model_path: str) -> str:
    """Missing-value convention: the model's, unless a flag contradicts it (error)."""
    recorded = getattr(model, "missing", None) if model is not None else None
    if flag is not None and recorded is not None and flag != recorded:
        raise ValueError(
            f"{model_path}: the model was trained with --missing {recorded}; "
            f"--missing {flag} would score its features differently (drop the flag)"
        )
    return flag or recorded or "zero"


def _width_guard_as_flag(e: Exception):
    """The reader's size guard (a feature index so high that the matrix would be huge)
    as an :class:`~ltrboost.dataset.LTRInputError` whose remedy is the flag
    ``--n-features N``, not Python's ``n_features=``; None for any other error."""
    wide = getattr(e, "width_guard", None)
    if wide is None or "If it is intended" not in e.problem:
        return None
    from ltrboost.dataset import LTRInputError

    problem = e.problem[: e.problem.index("If it is intended")]
    problem += f"If it is intended, give --n-features {wide}"
    return LTRInputError(problem, path=e.path, line=e.line)


def _load(
    path: str,
    *,
    missing: str = "zero",
    n_features: int | None = None,
    require_qid: bool = True,
    return_comments: bool = False,
    na_values: list[str] | None = None,
    letor_names: bool = False,
):
    from ltrboost.io.letor import load_svmlight

    data = load_svmlight(
        path,
        n_features=n_features,
        missing=missing,
        return_comments=return_comments,
        na_values=na_values,
    )
    return _with_dataset(data, path, require_qid, letor_names=letor_names)


def _with_dataset(data, path: str, require_queries: bool = True, *, letor_names: bool = False):
    """``(data, RankingDataset)`` of a LETOR file's ``data``.  ``letor_names``: name the
    columns by their LETOR ids (``f1 .. fN``, :attr:`LetorData.feature_names`), as
    ``train`` stores them in the model and ``convert`` names its Parquet columns."""
    from ltrboost.dataset import make_dataset
    from ltrboost.io.letor import require_qid

    _warn_unread_sidecars(path)
    if data.qid is None and not require_queries:
        return data, None
    require_qid(data, path)
    names = data.feature_names if letor_names else None
    ds = make_dataset(data.X, data.y, qid=data.qid, feature_names=names)
    ds.source = str(path)
    if data.lines is not None:  # label errors then name FILE:LINE
        ds.row_lines = data.lines if ds.order is None else data.lines[ds.order]
    return data, ds


def _warn_unread_sidecars(path: str) -> None:
    """Warn about a ``.weight`` or ``.init`` file beside the data ``path``: LightGBM
    reads these sidecars as it reads FILE.query; ltrboost reads only the .query one,
    and must not train or score without the others silently.  The warning says where
    the queries came from: ``qid:`` on the lines, FILE.query, or neither (it said
    "only query sizes from FILE.query" where the file has ``qid:`` and none was read)."""
    sidecars = [(".weight", "per-row weights"), (".init", "initial scores")]
    sidecars = [(s, what) for s, what in sidecars if os.path.isfile(f"{path}{s}")]
    if not sidecars:
        return
    from ltrboost.io.letor import first_line_has_qid  # loaded: the data was just read

    has_qid = first_line_has_qid(path)
    if has_qid:
        queries = f"the queries come from the qid: fields of {path}"
    elif has_qid is False and os.path.isfile(f"{path}.query"):
        queries = f"only query sizes from {path}.query"
    elif has_qid is False:
        queries = f"of LightGBM's sidecars ltrboost reads only {path}.query (query sizes)"
    else:  # not a regular file, or no data line near its start: say the rule
        queries = (
            f"of LightGBM's sidecars ltrboost reads only {path}.query (query sizes, for a "
            "file without qid:)"
        )
    for suffix, what in sidecars:
        sep = ", " if queries.startswith("only") else "; "
        warnings.warn(
            f"{path}{suffix} is not read: ltrboost takes no {what} from LightGBM's "
            f"{suffix} files{sep}{queries}"
            + (" (Python: Ranker.fit(..., sample_weight=...))" if suffix == ".weight" else ""),
            stacklevel=3,
        )


def _as_flags(msg: str) -> str | None:
    """``msg`` with the training parameters it names (``decay=2.0``,
    ``label_scale[1]=...``) spelled as their flags (``--decay=2.0``); None when it does
    not begin with one (not a parameter's error)."""
    import re

    names = "|".join(sorted(PARAM_NAMES, key=len, reverse=True))
    first = re.match(rf"({names})(?=[=\[]| entry | gives )", msg)  # label_scale's too
    if first is None:
        return None
    return _params_as_flags(_param_flag(first.group(1)) + msg[first.end() :])


def _param_flag(name: str) -> str:
    """The flag of training parameter ``name``: ``eval_metric`` is ``--metric``
    (``--eval-metric`` is a hidden, deprecated alias)."""
    return "--metric" if name == "eval_metric" else _flag(name)


def _params_as_flags(msg: str, bare: bool = False) -> str:
    """``msg`` with every ``name=`` / ``name[`` of a training parameter spelled as its
    flag (``decay=2.0`` -> ``--decay=2.0``).  ``bare``: the message follows
    :class:`~ltrboost.params.ParameterWarning`'s convention (a
    :class:`~ltrboost.params.ParameterError`'s), so a bare name with an underscore is
    the parameter too (``raise colsample_bytree`` -> ``raise --colsample-bytree``);
    one-word names stay (``objective``, ``gain`` are English words too).  A name that
    is part of a path, an identifier or a call (``/max_depth/``, ``max_bins.txt``,
    ``$LTRBOOST_MAX_BINS``, ``get_metric(``) is left as it is."""
    import re

    def flag(m: re.Match) -> str:
        return _param_flag(m.group(1) or m.group(2))

    names = "|".join(sorted(PARAM_NAMES, key=len, reverse=True))
    pattern = rf"(?<![\w.$/-])({names})(?=[=\[])"
    if bare:
        joined = sorted((n for n in PARAM_NAMES if "_" in n), key=len, reverse=True)
        pattern += rf"|(?<![\w.$/'\"-])({'|'.join(joined)})(?![\w/(-]|\.\w)"
    return re.sub(pattern, flag, msg)


def _validate_as_flags(params: BoosterParams) -> None:
    """``params.validate()``, then the objective's own checks of its parameters
    (:func:`~ltrboost.booster.make_objective`) and the metrics' (``--metric``, and
    ``--gain`` / ``--relevance-threshold`` as the metrics read them, whatever the
    objective) and the combinations the training refuses from the parameters alone
    (:func:`~ltrboost.booster.check_setup_parameters`), the error naming the flag:
    ``--n-estimators=0 must be >= 1`` or
    ``--decay=2.0 should be a number in (0, 1]`` where the Python API says
    ``n_estimators=0`` / ``decay=2.0`` (a CLI user has no ``n_estimators``).  All
    before any data is read: cv met a bad ``--gain`` of an objective that ignores it
    only at its metrics' first use, after reading the data.  ``--objective custom:NAME``
    (what the file of a model trained with a Python function records) is refused as
    such: a function cannot be given here."""
    if isinstance(params.objective, str) and params.objective.startswith("custom:"):
        fn = params.objective[len("custom:") :] or "fn"
        raise ValueError(
            f"--objective {params.objective}: 'custom:NAME' is how a model file records "
            "a custom objective, a Python function, which the command line cannot take; "
            f"train it from Python: Ranker(objective={fn}).fit(...) (docs/custom.md)"
        )
    try:
        params.validate()
        if isinstance(params.objective, str):  # the CLI's: a registered name
            from ltrboost.booster import check_metrics, check_setup_parameters, make_objective

            objective = make_objective(params)
            check_metrics(params, objective)
            # combinations (--split-criterion ole with --quantized-gradients, --unbiased
            # with another objective): they came after train's progress bar had started
            check_setup_parameters(params, objective)
    except ValueError as e:
        from ltrboost.params import ParameterError

        msg = _params_as_flags(str(e), bare=True) if isinstance(e, ParameterError) else None
        msg = msg or _as_flags(str(e)) or _metric_as_flag(e)
        if msg is None:
            raise
        raise ValueError(msg) from None


def _metric_as_flag(error: ValueError) -> str | None:
    """A metric list's error (``unknown metric 'ndcg@0' ...``, ``empty metric name in
    'ndcg@5,'``, which name no parameter) as ``--metric: ...``; None for any other
    error."""
    from ltrboost.metrics.registry import EMPTY_METRIC, NO_METRIC

    text = str(error)
    own = text.startswith(("unknown metric ", EMPTY_METRIC, NO_METRIC))
    return f"--metric: {text}" if own else None


def _labels_teach(params: BoosterParams, objective: Any) -> bool:
    """Whether a pair objective learns from the labels when no explicit pair is given:
    its label pairs, or QBRank's labelled part (a ``preference_weight`` below 1)."""
    return params.use_label_pairs is not False or (
        objective.name == "qbrank" and objective.params["preference_weight"] < 1
    )


def _refuse_pairs_alone(params: BoosterParams, objective: Any, remedy: str) -> None:
    """Refuse ``--use-label-pairs false`` for a pair objective that then has no pair to
    learn from (:func:`_labels_teach`); ``remedy``, the end of the message, says what
    the command takes instead."""
    if objective.uses_preference_pairs and not _labels_teach(params, objective):
        raise ValueError(
            f"--use-label-pairs false: {objective.name} then learns from explicit "
            f"preference pairs alone{remedy}"
        )


def _training_params(args: argparse.Namespace) -> BoosterParams:
    """The training parameters given as flags (``train``, ``cv``); the others at their
    defaults."""
    return BoosterParams(**{k: v for k, v in vars(args).items() if k in PARAM_NAMES})


def _progress_bar(
    params: BoosterParams, notice=None, file=None, mininterval: float = 0.1, initial: int = 0
):
    """A tqdm bar as a training callback (``callback.bar``); ``callback.close()`` ends
    it.  None, after a warning, when tqdm cannot be imported (:mod:`ltrboost._progress`).

    The metric is set before the bar advances, so every redraw shows the tree just
    finished.  When training stops early the bar is closed at 100% of the rounds
    actually run, with "early stop" in its text.  ``initial``: the rounds of a resumed
    model, done before the bar starts (it started at 0 and jumped to them at the first
    new round, counting them in its rate and ETA; a resumed model that had already
    stopped early, which gets no round, left it at 0%).
    """
    from ltrboost._progress import progress_bar

    bar = progress_bar(
        total=int(params.n_estimators),
        initial=initial,
        unit="tree",
        dynamic_ncols=True,
        file=sys.stderr if file is None else file,
        mininterval=mininterval,
    )
    if bar is None:
        return None
    if notice is not None:
        notice.attach_bar(bar)

    def callback(env) -> None:
        if notice is not None:
            # Compilation is reported by the notice: keep it out of the rate and ETA.
            compiling = notice.take_compile_seconds()
            bar.start_t += compiling
            bar.last_print_t += compiling
        if env.evaluation:
            name, res = next(iter(env.evaluation.items()))
            m, v = next(iter(res.items()))
            best = (
                f"{env.best_score:.4f}@{env.best_iteration}" if env.best_score is not None else "-"
            )
            bar.set_postfix_str(f"{name} {m}={v:.4f} best={best}", refresh=False)
        bar.update(env.iteration + 1 - bar.n)

    def close() -> None:
        if notice is not None:
            notice.attach_bar(None)
        # Stopped early (not by an error or Ctrl-C): end the bar at the rounds run.
        if 0 < bar.n < bar.total and sys.exc_info()[0] is None:
            bar.total = bar.n
            note = f"{bar.postfix or ''} early stop".strip()
            bar.set_postfix_str(note, refresh=False)
            bar.refresh()
        bar.close()

    callback.close = close  # type: ignore[attr-defined]
    callback.bar = bar  # type: ignore[attr-defined]
    return callback


def _load_for_iteration(args: argparse.Namespace):
    """``args.model`` loaded, and ``--iteration`` checked against its rounds: the
    model's range check named neither the flag nor the file ("iteration=9 must be
    between 0 and 3")."""
    from ltrboost.model import load_model

    _check_inputs(args)  # the data files too (eval's second one), before the model
    booster = load_model(args.model)
    it = args.iteration
    if it is not None and not 0 <= it <= booster.n_iterations:
        raise ValueError(
            f"--iteration {it}: {args.model} has {booster.n_iterations} rounds "
            f"(give 0..{booster.n_iterations})"
        )
    return booster


def _print_columns(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A table on stdout: columns left-aligned, two blanks apart, no trailing blanks
    after the last column (``eval``'s results, ``inspect``'s top features)."""
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    for line in (header, *rows):
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())


def _count(n: int, noun: str) -> str:
    """``1 round``, ``2 rounds``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
