"""Outside review of the I/O and API changes of 2026-11-27 (seventh adversarial pass).

Atomic outputs follow a symbolic link to the file it points to (``os.path.realpath``),
which the kernel never sees as following a link: Linux's ``fs.protected_symlinks`` (on
by default in most distributions), which makes ``open()`` refuse a link in a
world-writable sticky folder (``/tmp``) planted by another user, did not apply.  A link
``/tmp/model.json -> ~victim/.bashrc`` made ``ltrboost train -o /tmp/model.json``, run
by the victim (or root), replace ``.bashrc`` with the model.  Such a link is now refused
before anything is written, whatever the sysctl says, by the kernel's own rule: a link
in a world-writable sticky folder is followed only when it is ours or the folder
owner's.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ltrboost import make_dataset, train
from ltrboost.io._atomic import atomic_write, check_output

ROOT = Path(__file__).resolve().parents[1]


def _other_uid() -> int:
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("needs a root test process (a link owned by another user)")
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return 65534


@pytest.fixture
def planted(tmp_path):
    """(sticky world-writable folder, the victim's file, a link to it there owned by
    another user)."""
    uid = _other_uid()
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    home = tmp_path / "home"
    home.mkdir()
    victim = home / "precious.txt"
    victim.write_text("precious\n")
    link = sticky / "model.json"
    link.symlink_to(victim)
    os.lchown(link, uid, -1)
    return sticky, victim, link


def _refused(call, path) -> str:
    with pytest.raises(PermissionError) as err:
        call()
    assert err.value.filename == str(path)
    return str(err.value)


def test_another_users_link_in_a_sticky_folder_is_not_followed(planted):
    """Old: the victim's file became the model."""
    sticky, victim, link = planted
    msg = _refused(lambda: check_output(str(link)), link)
    assert "link of another user" in msg, msg
    assert "sticky" in msg, msg
    msg = _refused(lambda: atomic_write(str(link), "model\n"), link)
    assert victim.read_text() == "precious\n"
    assert sorted(os.listdir(sticky)) == ["model.json"]
    assert os.path.islink(link)


def test_another_users_link_to_a_folder_in_a_sticky_folder_is_not_followed(planted):
    """The link may be a folder on the output's way (``-o /tmp/out/model.json``)."""
    sticky, victim, _ = planted
    out = sticky / "out"
    out.symlink_to(victim.parent)
    os.lchown(out, _other_uid(), -1)
    target = out / "precious.txt"
    _refused(lambda: check_output(str(target)), target)
    _refused(lambda: atomic_write(str(target), "model\n"), target)
    assert victim.read_text() == "precious\n"
    # a second hop: our own link to theirs
    ours = victim.parent / "mine"
    ours.symlink_to(sticky / "model.json")
    _refused(lambda: atomic_write(str(ours), "model\n"), ours)
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("who", ["ours", "folder owner's"])
def test_links_the_kernel_follows_still_are(planted, who):
    """No false positive: our own link, or the folder owner's, in a sticky folder."""
    sticky, victim, link = planted
    uid = _other_uid()
    if who == "ours":
        os.lchown(link, os.geteuid(), -1)
    else:
        os.chown(sticky, uid, -1)
    atomic_write(str(link), "model\n")
    assert victim.read_text() == "model\n"
    assert os.path.islink(link)


def test_another_users_link_in_a_folder_without_the_sticky_bit_is_followed(planted):
    sticky, victim, link = planted
    sticky.chmod(0o777)
    atomic_write(str(link), "model\n")
    assert victim.read_text() == "model\n"


def test_cli_refuses_the_planted_link_in_one_line(planted, tmp_path):
    _, victim, link = planted
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(float)
    booster = train(
        {"n_estimators": 2, "min_samples_leaf": 2},
        make_dataset(X, y, qid=np.repeat(np.arange(4), 10)),
    )
    model = tmp_path / "m.json"
    booster.save_model(model)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run(
        [sys.executable, "-m", "ltrboost.cli", "export", str(model), "--format", "lightgbm",
         "-o", str(link)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("ltrboost: error: "), proc.stderr
    assert str(link) in lines[0], lines[0]
    assert "link of another user" in lines[0], lines[0]
    assert victim.read_text() == "precious\n"


PI_SCRIPT = """
import numpy as np, pandas as pd
from sklearn.inspection import permutation_importance
from ltrboost.sklearn import Ranker
rng = np.random.default_rng(0)
qid = np.repeat(np.arange(20), 8)
X = pd.DataFrame({"a": rng.normal(size=160), "b": rng.normal(size=160), "qid": qid})
y = np.clip(np.round(X.a + rng.normal(size=160) * 0.5), 0, 3)
r = Ranker(n_estimators=3, min_samples_leaf=2).fit(X, y)
permutation_importance(r, X, y, n_repeats=2, random_state=0, n_jobs=2)
"""


def test_permutation_importance_with_n_jobs_warns_once_at_the_callers_line(tmp_path):
    """Old: besides the caller's warning (the baseline score, in this process), each of
    joblib's worker processes printed it again, pointing at ``joblib/parallel.py``."""
    pytest.importorskip("sklearn")
    pytest.importorskip("pandas")
    script = tmp_path / "pi.py"
    script.write_text(PI_SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "permutes X's 'qid' column" in ln]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{script}:10: UserWarning"), lines[0]
