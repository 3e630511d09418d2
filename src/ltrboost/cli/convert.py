"""``ltrboost convert``: LETOR/svmlight to query-partitioned Parquet for Dask."""

from __future__ import annotations

import argparse
import sys

from ltrboost.cli._common import _check_inputs, _count, _width_guard_as_flag


def cmd_convert(args: argparse.Namespace) -> int:
    """LETOR -> query-partitioned Parquet (format: :mod:`ltrboost.io.parquet`)."""
    from ltrboost.io.letor import width_error_as
    from ltrboost.io.parquet import letor_to_parquet, require_pyarrow

    if args.n_features is not None and args.n_features < 0:  # named as the flag
        raise ValueError(f"--n-features={args.n_features} must be >= 0")
    if args.rows_per_file < 1:
        raise ValueError(f"--rows-per-file={args.rows_per_file} must be >= 1")
    try:  # a plain install has no pyarrow: the one-line error, not a traceback
        require_pyarrow()
    except ImportError as e:
        raise ValueError(str(e)) from None
    from ltrboost.dataset import LTRInputError

    _check_inputs(args)
    try:
        files = letor_to_parquet(
            args.data,
            args.output,
            rows_per_file=args.rows_per_file,
            missing=args.missing,
            na_values=args.missing_token,
            n_features=args.n_features,
        )
    except LTRInputError as e:  # the reader's remedies in convert's flags, not Python's
        guard = _width_guard_as_flag(e)
        if guard is not None:
            raise guard from None
        n = args.n_features
        reworded = None if n is None else width_error_as(e, n, f"is larger than --n-features={n}")
        if reworded is None:
            raise
        raise reworded from None
    print(f"wrote {_count(len(files), 'Parquet file')} to {args.output}", file=sys.stderr)
    return 0
