"""The examples in the docstrings run and print what they say (`help(ts.ones)` shows
them), and every public name has a docstring."""

import doctest

import numpy as np
import pytest

import tessera as ts


def run_examples(obj, name):
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(obj, name, globs={"ts": ts, "np": np})
    examples = sum(len(t.examples) for t in tests)
    for t in tests:
        runner.run(t)
    return examples, runner.failures


@pytest.mark.parametrize("name", ["ones", "from_array"])
def test_function_examples_run(name):
    examples, failures = run_examples(getattr(ts, name), name)
    assert examples > 0, f"ts.{name} has no example"
    assert failures == 0


def test_the_package_example_runs():
    examples, failures = run_examples(ts, "tessera")
    assert examples > 0 and failures == 0


def test_every_public_name_has_a_docstring():
    missing = [n for n in ts.__all__ if not (getattr(ts, n).__doc__ or "").strip() and n != "__version__"]
    assert not missing, f"no docstring: {missing}"
    for cls in (ts.Array, ts.DataFrame, ts.GroupBy, ts.Expr, ts.ComputedFrame):
        bare = [m for m in dir(cls) if not m.startswith("_") and not (getattr(cls, m).__doc__ or "").strip()]
        assert not bare, f"{cls.__name__} methods without docstrings: {bare}"


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scan_examples_run(name):
    examples, failures = run_examples(getattr(ts, name), name)
    assert examples > 0 and failures == 0


def test_the_protocol_modules_examples_run_and_their_names_are_documented():
    from tessera import _numpy_functions

    for module in (ts.array_api, _numpy_functions):
        examples, failures = run_examples(module, module.__name__)
        assert examples > 0 and failures == 0, module.__name__
    missing = [
        n
        for n in ts.array_api.__all__
        if callable(getattr(ts.array_api, n)) and not isinstance(getattr(ts.array_api, n), np.dtype)
        and not (getattr(ts.array_api, n).__doc__ or "").strip()
    ]
    assert not missing, f"namespace functions without docstrings: {missing}"


def test_the_dtype_error_example_runs():
    examples, failures = run_examples(ts.exceptions.DTypeError, "DTypeError")
    assert examples > 0 and failures == 0


EXAMPLES = [
    ("tessera._store", None), ("tessera._store", "store"), ("tessera._setitem", None),
    ("tessera", "broadcast_to"), ("tessera", "broadcast_arrays"),
    ("tessera.array", None), ("tessera.array", "map_blocks"), ("tessera.array", "map_overlap"),
    ("tessera.array", "reduction"), ("tessera._generator", None),
    ("tessera._generator", "Generator"), ("tessera._generator", "default_rng"),
    ("tessera._blockwise", None), ("tessera._blockwise", "blockwise"),
    ("tessera._blockwise", "apply_gufunc"), ("tessera._numpy_compositions", None),
    ("tessera.dataframe", None), ("tessera.dataframe._frame", "DataFrame"),
    ("tessera.dataframe._series", "Series"), ("tessera.dataframe._scalar", "Scalar"),
    ("tessera.dataframe._index", "Index"), ("tessera.dataframe._indexing", "LocIndexer"),
    ("tessera.dataframe._accessors", "StringMethods"),
    ("tessera.dataframe._accessors", "DatetimeMethods"), ("tessera.dataframe._window", "Rolling"),
    ("tessera.dataframe._window", "Expanding"),
    ("tessera.dataframe._resample", "Resampler"),
    ("tessera.dataframe._groupby", "DataFrameGroupBy"), ("tessera.dataframe._query", "parse"),
    ("tessera.dataframe._io", "from_pandas"), ("tessera.dataframe._ddof", "rescaled_value"),
]


@pytest.mark.parametrize("module,name", EXAMPLES, ids=lambda v: v or "module")
def test_the_python_modules_examples_run(module, name):
    import importlib

    obj = importlib.import_module(module)
    obj = getattr(obj, name) if name else obj
    examples, failures = run_examples(obj, name or module)
    assert examples > 0 and failures == 0


def test_the_dask_namespace_names_are_documented():
    import tessera.array as da

    bare = [n for n in da.__all__ if callable(getattr(da, n)) and not isinstance(getattr(da, n), type)
            and not (getattr(da, n).__doc__ or "").strip()]
    assert not bare, f"tessera.array names without docstrings: {bare}"


def test_the_dataframe_module_methods_are_documented():
    import tessera.dataframe as dd
    from tessera.dataframe._accessors import DatetimeMethods, StringMethods
    from tessera.dataframe._resample import Resampler
    from tessera.dataframe._window import WindowAggregates
    from tessera.dataframe._windows_of import WindowMethods

    classes = [dd.DataFrame, dd.Series, dd.Scalar, dd.Index, dd.DataFrameGroupBy, dd.SeriesGroupBy,
               dd.Rolling, dd.Expanding, Resampler, StringMethods, DatetimeMethods,
               WindowAggregates, WindowMethods]
    bare = [f"{c.__name__}.{n}" for c in classes for n, v in vars(c).items()
            if not n.startswith("_") and (callable(v) or isinstance(v, property)) and not (v.__doc__ or "").strip()]
    bare += [n for n in dd.__all__ if not (getattr(dd, n).__doc__ or "").strip()]
    assert not bare, f"tessera.dataframe names without docstrings: {bare}"
