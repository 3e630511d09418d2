"""Merge ``bench_clicks.py`` result files and print the IPW-label tables of
``docs/experiments/clicks/ipw_labels/README.md``.

    PYTHONPATH=src:. python bench/clicks_ipw_summary.py OUT_DIR RESULTS.json [RESULTS.json ...]

Writes ``OUT_DIR/results.json`` (the runs of every file, in order, with each file's
settings) plus ``table.md`` / ``ndcg_vs_log_size.png`` (``bench_clicks.write_report``), and
prints, per score (``ndcg@10``, ``shown@10``): the mean of every method over seeds, the
paired differences (mean ± 95% t half-width over seeds), the share of the gap from
``raw clicks`` to ``ceiling shown`` / ``ceiling`` closed (per seed, then averaged; the
pooled share in brackets), and the NDCG@10 of the aggregated labels themselves on the
shown training documents.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bench.bench_clicks import _ci, write_report

METHODS = [
    "logger", "raw clicks", "debiased", "oracle ipw", "ctr labels", "ipw labels oracle",
    "ipw labels est", "ceiling shown", "ceiling",
]  # fmt: skip
DIFFS = [
    ("ipw labels oracle", "raw clicks"),
    ("ipw labels oracle", "ctr labels"),
    ("ipw labels oracle", "oracle ipw"),
    ("ctr labels", "raw clicks"),
    ("ipw labels est", "raw clicks"),
    ("oracle ipw", "raw clicks"),
    ("debiased", "raw clicks"),
    ("ceiling shown", "raw clicks"),
]
SHARES = [
    ("ipw labels oracle", "ceiling shown"),
    ("ipw labels oracle", "ceiling"),
    ("ctr labels", "ceiling shown"),
    ("oracle ipw", "ceiling shown"),
    ("debiased", "ceiling shown"),
]
LABELS = ["logger", "ctr labels", "ipw labels oracle", "ipw labels est"]


def _cells(sel: list[dict], key: str) -> list[str]:
    out = []
    for a, b in DIFFS:
        d = [r[a][key] - r[b][key] for r in sel if key in r.get(a, {}) and key in r.get(b, {})]
        out.append(_ci(d) if d else "—")
    for a, c in SHARES:
        ok = [r for r in sel if all(key in r.get(m, {}) for m in (a, c, "raw clicks"))]
        num = [r[a][key] - r["raw clicks"][key] for r in ok]
        den = [r[c][key] - r["raw clicks"][key] for r in ok]
        if not ok or np.mean(den) <= 0:
            out.append("—")
        elif min(den) <= 0:
            out.append(f"({100 * np.mean(num) / np.mean(den):.0f}%)")
        else:
            share = [100 * x / y for x, y in zip(num, den, strict=True)]
            pooled = 100 * np.mean(num) / np.mean(den)
            out.append(_ci(share, "{:.0f}%") + f" ({pooled:.0f}%)")
    return out


def summary(runs: list[dict]) -> str:
    cells = sorted({(r["click_model"], r["sessions"]) for r in runs})
    lines = []
    for key in ("ndcg@10", "shown@10"):
        ms = [m for m in METHODS if any(m in r and key in r[m] for r in runs)]
        if not ms:  # MQ2008 runs score all documents only (no shown@10)
            continue
        lines += [f"#### {key}: mean over seeds", ""]
        lines += ["| click model | impressions | " + " | ".join(ms) + " |"]
        lines += ["|---|---:|" + "---:|" * len(ms)]
        for cm, n in cells:
            sel = [r for r in runs if (r["click_model"], r["sessions"]) == (cm, n)]
            row = []
            for m in ms:
                v = [r[m][key] for r in sel if m in r]
                row.append(f"{np.mean(v):.4f}" if v else "—")
            lines.append(f"| {cm} | {n} | " + " | ".join(row) + " |")
        head = [f"{a} - {b}" for a, b in DIFFS] + [f"{a}: gap to {c} closed" for a, c in SHARES]
        lines += ["", f"#### {key}: paired differences and gap closed (± 95% t over seeds)", ""]
        lines += ["| click model | impressions | " + " | ".join(head) + " |"]
        lines += ["|---|---:|" + "---:|" * len(head)]
        for cm, n in cells:
            sel = [r for r in runs if (r["click_model"], r["sessions"]) == (cm, n)]
            lines.append(f"| {cm} | {n} | " + " | ".join(_cells(sel, key)) + " |")
        lines.append("")
    lines += ["#### NDCG@10 of the labels on the shown training documents (mean over seeds)", ""]
    lines += ["| click model | impressions | " + " | ".join(LABELS) + " |"]
    lines += ["|---|---:|" + "---:|" * len(LABELS)]
    for cm, n in cells:
        sel = [r["_labels"] for r in runs if (r["click_model"], r["sessions"]) == (cm, n)]
        sel = [s for s in sel if "logger" in s]
        row = []
        for m in LABELS:
            v = [s[m]["train_ndcg@10"] for s in sel if m in s]
            row.append(f"{np.mean(v):.4f}" if v else "—")
        lines.append(f"| {cm} | {n} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    # argparse: `--help` used to be taken for OUT_DIR (./--help/results.json, table.md)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", metavar="OUT_DIR", help="folder for results.json, table.md")
    ap.add_argument(
        "results", metavar="RESULTS.json", nargs="+", help="bench_clicks.py result files"
    )
    args = ap.parse_args(argv)
    out_dir = Path(args.out_dir)
    merged: dict = {"settings": None, "merged_from": [], "runs": []}
    for f in args.results:  # every file read before anything is written
        try:
            res = json.loads(Path(f).read_text())
            settings, runs = res["settings"], res["runs"]
            if not isinstance(runs, list):
                raise ValueError("its runs are not a list")
        except (OSError, ValueError, KeyError, TypeError) as e:
            what = f"no {e}" if isinstance(e, KeyError) else str(e)
            ap.error(f"{f}: not a bench_clicks.py results.json ({what})")
        merged["settings"] = merged["settings"] or settings
        merged["merged_from"].append({"settings": settings, "wall_s": res.get("wall_s")})
        merged["runs"] += runs
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(merged, indent=1))
    write_report(merged, out_dir)
    print(summary(merged["runs"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
