#!/usr/bin/env python3
"""Writes the damaged data and run files of tests/bad_inputs/cases.tsv (the `data_*` and
`resume_*` rows): one file per problem the data-file fuzzers found (tests/fuzz/
test_fuzz_data_files.cpp, issue 34), each the smallest way to show it. Run from anywhere:

    python3 tests/bad_inputs/data/make_cases.py [--stale build/stale]

--stale is needed for huge_slot.h5.partial only (a real run's .partial, interrupted and then
edited with h5py); without it that file is left as it is.
"""
import argparse
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "objectives", "data_files")


def p(name):
    return os.path.join(HERE, name)


def patch_dims(path, old_dims, new_first):
    """The old format (h5py's default) stores a dataspace's dimensions, then its maximum
    dimensions, as 8-byte little-endian integers without a checksum: the first dimension of
    `old_dims` becomes `new_first` in both."""
    with open(path, "rb") as f:
        raw = f.read()
    pattern = b"".join(struct.pack("<Q", d) for d in old_dims)
    at = raw.find(pattern + pattern)
    assert at >= 0, f"{path}: dims {old_dims} not found"
    for start in (at, at + len(pattern)):
        raw = raw[:start] + struct.pack("<Q", new_first) + raw[start + 8:]
    with open(path, "wb") as f:
        f.write(raw)


def npy_shape_overflow():
    """a .npy whose shape (2^32, 2^32) is 2^64 values: the product wrapped round to 0 (UB in
    int64), the file's 144 bytes passed for its data, and the 2^32 × 2^32 matrix built from
    the shape threw std::bad_alloc ("out of memory … please report the config")"""
    with open(os.path.join(FIXTURES, "good_X.npy"), "rb") as f:
        raw = f.read()
    header_len = struct.unpack("<H", raw[8:10])[0]
    header = raw[10:10 + header_len].decode("latin1").replace("(6, 3)", "(4294967296, 4294967296)")
    header = header.rstrip("\n").rstrip(" ")
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(p("shape_overflow.npy"), "wb") as f:
        f.write(raw[:8] + struct.pack("<H", len(header)) + header.encode("latin1") + raw[10 + header_len:])
    shutil.copyfile(os.path.join(FIXTURES, "good_y.npy"), p("y.npy"))


def npz_zip64_offset():
    """an .npz whose member's local-header offset is 0xFFFFFFFF with the zip64 extra field
    giving 2^64 - 1: `local + 30 > size` wrapped round, and std::string::compare threw
    out_of_range (exit 3, "internal error")"""
    X = np.arange(6.0).reshape(3, 2)
    buf = tempfile.mktemp(suffix=".npz")
    np.savez(buf, X=X, y=np.arange(3.0))
    with open(buf, "rb") as f:
        raw = bytearray(f.read())
    os.remove(buf)
    cd = raw.find(b"PK\x01\x02")
    name_len, extra_len = struct.unpack("<HH", raw[cd + 28:cd + 32])
    # the first member's offset → 0xFFFFFFFF, and a zip64 extra field with the real offset's
    # replacement 2^64 - 1 (grown by 12 bytes: id, length, 8 bytes)
    raw[cd + 42:cd + 46] = struct.pack("<I", 0xFFFFFFFF)
    extra = struct.pack("<HHQ", 1, 8, 2 ** 64 - 1)
    at = cd + 46 + name_len + extra_len
    raw[cd + 30:cd + 32] = struct.pack("<H", extra_len + len(extra))
    raw[at:at] = extra
    eocd = raw.rfind(b"PK\x05\x06")
    size = struct.unpack("<I", raw[eocd + 12:eocd + 16])[0]
    raw[eocd + 12:eocd + 16] = struct.pack("<I", size + len(extra))
    with open(p("zip64_offset.npz"), "wb") as f:
        f.write(raw)


def h5_huge_shapes():
    """HDF5 files (h5py's old format) whose X, or /delays, declares 2^31 - 1 rows over the
    few bytes it stores: the reader allocated what the shape said (48 GiB) before reading"""
    X = np.array([[(i + 1) ** (j + 1) / 8 - 2 for j in range(3)] for i in range(6)])
    with h5py.File(p("huge_shape.h5"), "w") as f:
        f["X"], f["y"] = X, np.array([1.0, 0.0] * 3)
    patch_dims(p("huge_shape.h5"), (6, 3), 2 ** 31 - 1)
    with h5py.File(p("delays_huge_shape.h5"), "w") as f:
        f["delays"] = (np.arange(48).reshape(12, 4) % 3).astype(np.int64)
    patch_dims(p("delays_huge_shape.h5"), (12, 4), 2 ** 31 - 1)


def huge_slot(stale):
    """a run's .partial whose checkpoint slot and the index naming its length say 2^40 bytes:
    --resume allocated them (std::bad_alloc, "please report the config")"""
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "c.toml")
        with open(cfg, "w") as f:
            f.write('backend = "cpu"\n[objective]\nname = "quadratic"\ngenerator = "random"\ndim = 4\n'
                    'samples = 8\nbatch_size = 2\nstages = 2\n[method]\nname = "rpd"\nlr = 0.01\n'
                    'updates = 100000000\n[delay]\nname = "zero"\n[log]\nevery = 100000000\n'
                    'iterates_every = 100000000\ndelays = false\nflush_seconds = 0.02\nprogress = false\n')
        out = os.path.join(tmp, "huge_slot.h5")
        proc = subprocess.Popen([stale, "run", cfg, "--out", out, "--quiet"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        while not os.path.exists(out + ".partial"):
            time.sleep(0.01)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        proc.wait()
        # copied object by object into a fresh file (what the run's flushes left dead is not
        # kept), the checkpoint's valid slot alone and in small chunks (the run's are 64 KiB),
        # then declared 2^40 bytes long, as the index that names its length says
        with h5py.File(out + ".partial", "r") as src, h5py.File(p("huge_slot.h5.partial"), "w", libver="latest") as f:
            for name in src:
                if name != "checkpoint":
                    src.copy(src[name], f, name)
            for k, v in src.attrs.items():
                f.attrs[k] = v
            index = src["checkpoint/index"][()]
            name = f"checkpoint/state_{index[1]}"
            f.create_dataset(name, data=src[name][:index[2]], maxshape=(None,), chunks=(256,))
            f[name].resize((2 ** 40,))
            index[2] = 2 ** 40
            f["checkpoint/index"] = index


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stale")
    a = ap.parse_args()
    npy_shape_overflow()
    npz_zip64_offset()
    h5_huge_shapes()
    if a.stale:
        huge_slot(os.path.abspath(a.stale))


if __name__ == "__main__":
    main()
