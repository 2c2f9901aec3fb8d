#!/usr/bin/env python3
"""Writes the small data files of tests/objectives/test_data_files.cpp (run from anywhere):

    python3 tests/objectives/data_files/make_fixtures.py

One 6 × 3 data set of full rank, X[i, j] = (i + 1)^(j + 1) / 8 − 2 and y alternating 1, 0 (w_true =
(1, −1, 0.5)), in every format objective.generator = "file" reads, and one malformed file of
each kind. The values are exact binary fractions so that every format carries them exactly.
"""
import os

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
X = np.array([[(i + 1) ** (j + 1) / 8 - 2 for j in range(3)] for i in range(6)])
y = np.array([1.0, 0.0] * 3)
w = np.array([1.0, -1.0, 0.5])


def p(name):
    return os.path.join(HERE, name)


np.savez(p("good.npz"), X=X, y=y, w_true=w)
np.save(p("good_X.npy"), X)
np.save(p("good_y.npy"), y.astype(np.int64))              # integer labels
np.save(p("good_X_fortran_f32.npy"), np.asfortranarray(X.astype(np.float32)))
with h5py.File(p("good.h5"), "w") as f:
    f["X"], f["y"], f["w_true"] = X, y.astype(np.int32), w
with open(p("good.csv"), "w") as f:
    f.write("a,label,b,c\n")                              # the label column in the middle
    for i in range(6):
        f.write("%r,%d,%r,%r\n" % (float(X[i, 0]), 2 * y[i] - 1, float(X[i, 1]), float(X[i, 2])))  # ±1 labels
with open(p("good_bom.csv"), "w", encoding="utf-8-sig") as f:  # Excel's "CSV UTF-8": a byte-order mark first
    f.write("label,a,b,c\n")                              # the label column first, where the mark sits
    for i in range(6):
        f.write("%d,%r,%r,%r\n" % (2 * y[i] - 1, float(X[i, 0]), float(X[i, 1]), float(X[i, 2])))
np.savez(p("bad_huge.npz"), X=X * 1e200, y=y)           # finite, but their squares overflow
with open(p("good.libsvm"), "w") as f:
    for i in range(6):
        f.write("%d %s\n" % (y[i], " ".join("%d:%r" % (j + 1, float(X[i, j])) for j in range(3))))

# malformed, one per format (and the shared checks)
with open(p("good_X.npy"), "rb") as f:
    raw = f.read()
with open(p("bad_truncated.npy"), "wb") as f:
    f.write(raw[:-8])
np.savez_compressed(p("bad_compressed.npz"), X=X, y=y)
with h5py.File(p("bad_no_y.h5"), "w") as f:
    f["X"] = X
with open(p("bad_field.csv"), "w") as f:
    f.write("a,y\n1.0,1\n2.0,oops\n")
np.save(p("bad_short_y.npy"), y[:5])
np.savez(p("bad_labels.npz"), X=X, y=np.arange(6.0))       # fine for least squares only
with open(p("bad.libsvm"), "w") as f:
    f.write("1 1:0.5 2:1\n0 3:1 2:2\n")                    # indices must increase
