"""Backends loaded from shared libraries, from Python: the example plugins that
`cargo test --workspace` builds (`target/debug/libtessera_plugin_example*.so`) load with
`ts.load_plugin`, are listed by `ts.backends()`, and compute the same answers as `cpu`."""

import pathlib

import numpy as np
import pytest

import tessera as ts

TARGET = pathlib.Path(__file__).resolve().parents[2] / "target"


def library(stem):
    for profile in ("debug", "release"):
        p = TARGET / profile / f"lib{stem}.so"
        if p.exists():
            return str(p)
    pytest.skip(f"{stem} is not built (cargo build -p {stem.replace('_', '-')} builds it)")


def test_an_array_plugin_loads_and_computes_as_cpu():
    name = ts.load_plugin(library("tessera_plugin_example"))
    assert name == "loops"
    assert any(b["name"] == "loops" and b["available"] for b in ts.backends())
    a = np.arange(30.0).reshape(5, 6)
    ours = (ts.from_array(a, chunks=2, backend="loops") * 2 + 1).sum(axis=0).compute()
    np.testing.assert_allclose(ours, (a * 2 + 1).sum(axis=0))


def test_a_dataframe_plugin_loads_and_computes_as_cpu():
    pa = pytest.importorskip("pyarrow")
    name = ts.load_plugin(library("tessera_plugin_example_frames"))
    assert name == "arrow-frames"
    t = pa.table({"k": [1, 2, 1, 2], "x": [1.0, 2.0, 3.0, 4.0]})
    got = ts.from_arrow(t, backend="arrow-frames").groupby("k").agg({"x": "sum"}).sort_values("k").compute()
    assert got.to_arrow().column("x").to_pylist() == [4.0, 6.0]


def test_a_missing_library_is_a_plugin_error():
    with pytest.raises(ts.PluginError):
        ts.load_plugin("/nonexistent/libnothing.so")
