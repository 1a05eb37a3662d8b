"""Configuration like dask.config, backends with their availability, and errors as typed
exceptions subclassing the builtins Python code catches."""

import os

import numpy as np
import pytest

import tessera as ts


def test_config_set_is_a_context_manager_and_get_reads_it():
    assert ts.config.get("scheduler") == "threads"
    with ts.config.set({"scheduler": "single-threaded"}, num_threads=2):
        assert ts.config.get("scheduler") == "single-threaded"
        assert ts.config.get("num-threads") == "2"
        assert "override" in ts.config.source("scheduler")
        assert int(ts.arange(100, chunks=7).sum().compute()) == 4950
    assert ts.config.get("scheduler") == "threads"
    assert ts.config.get("no.such.key", default="x") == "x"


def test_config_set_without_with_lasts_until_refresh():
    ts.config.set(array__backend="sparse")
    try:
        assert ts.ones(3).backend == "sparse"
    finally:
        ts.config.refresh()
    assert ts.ones(3).backend == "cpu"


def test_bad_config_is_a_config_error_naming_the_valid_keys():
    with pytest.raises(ts.ConfigError, match="scheduler") as e:
        ts.config.set(shceduler="threads")
    assert isinstance(e.value, ValueError) and isinstance(e.value, ts.TesseraError)
    with pytest.raises(ts.ConfigError):
        ts.config.set(scheduler="quantum")
    keys = {k["key"]: k for k in ts.config.keys()}
    assert keys["array.backend"]["env"] == "TESSERA_ARRAY_BACKEND"


def test_backends_list_availability_and_reasons():
    b = {(x["name"], x["kind"]): x for x in ts.backends()}
    assert b[("cpu", "array")]["available"] and b[("cpu", "dataframe")]["available"]
    assert b[("sparse", "array")]["available"]
    cuda = b[("cuda", "array")]
    assert cuda["available"] or cuda["reason"], "an unavailable backend says why"


def test_an_unavailable_or_unknown_backend_is_a_typed_error():
    with pytest.raises(ts.BackendUnavailableError, match="registered"):
        ts.ones(3, backend="nope")
    cuda = next(x for x in ts.backends() if x["name"] == "cuda")
    if not cuda["available"]:
        with pytest.raises(ts.BackendUnavailableError, match="unavailable"):
            ts.ones(3, backend="cuda")


def test_shape_and_dtype_errors_are_value_errors_with_the_engines_message():
    with pytest.raises(ts.InvalidArgumentError, match="shape") as e:
        (ts.ones((3, 4)) + ts.ones((5,))).compute()
    assert isinstance(e.value, ValueError)
    with pytest.raises(TypeError, match="not one tessera computes with"):
        ts.from_array(np.array(["a", "b"]))


def test_a_plan_over_the_memory_limit_is_a_memory_error():
    with ts.config.set({"memory-limit": "1 MiB"}):
        with pytest.raises(ts.MemoryLimitError, match="memory-limit") as e:
            ts.ones((2000, 2000), chunks=1000).compute()
    assert isinstance(e.value, MemoryError)


def test_a_file_changed_under_a_plan_is_an_os_error(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n3,4\n")
    df = ts.read_csv(str(p))
    p.write_text("a,b\n1,2\n3,4\n5,6\n")
    os.utime(p, (1, 1))
    with pytest.raises(ts.FileChangedError, match="changed since it was planned") as e:
        df.compute()
    assert isinstance(e.value, OSError)


def test_a_missing_file_is_a_storage_error():
    with pytest.raises(OSError):
        ts.read_parquet("/nonexistent/tessera/x.parquet").compute()


def test_help_reads_well():
    assert "Dask chunk spec" in ts.ones.__doc__ or "ones" in ts.ones.__doc__
    assert ts.ones.__text_signature__ is not None
    assert "GIL" in ts.Array.compute.__doc__


def test_progress_is_reported_on_stderr_as_in_rust():
    import subprocess
    import sys

    code = "import tessera as ts; print(int(ts.ones((400, 400), chunks=20).sum().compute()))"
    env = dict(os.environ, TESSERA_PROGRESS="always")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "160000"
    assert "tessera progress: compute:" in r.stderr and "tasks" in r.stderr
    quiet = subprocess.run(
        [sys.executable, "-c", code], env=dict(os.environ, TESSERA_PROGRESS="never"), capture_output=True, text=True, timeout=120
    )
    assert "tessera progress" not in quiet.stderr
