"""The README's Python quick start runs as written: the seed headline at its own size,
and the taxi groupby on a CSV of the columns it reads (written here to a temporary file
that takes the place of the one the Rust example writes)."""

import pathlib
import re

import numpy as np
import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def snippets():
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_the_readme_has_both_quick_starts():
    s = snippets()
    assert len(s) == 2
    assert "normal(10.0, 1.0" in s[0] and "read_csv" in s[1]
    assert all(len(code.strip().splitlines()) <= 10 for code in s), "each quick start is ten lines at most"


def test_the_headline_quick_start_runs(capsys):
    exec(compile(snippets()[0], "README.md", "exec"), {})
    out = capsys.readouterr().out
    value = float(out.strip().splitlines()[-2])
    assert abs(value / (11 * 10_000 * 10_000) - 1) < 1e-3
    assert "'cpu'" in out


def test_the_taxi_quick_start_runs(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    n = 20_000
    pd.DataFrame(
        {
            "pickup_datetime": pd.Timestamp("2015-01-01") + pd.to_timedelta(rng.integers(0, 86_400 * 30, n), unit="s"),
            "passenger_count": rng.integers(1, 7, n),
            "trip_distance": rng.gamma(2.0, 1.5, n).round(2),
            "fare_amount": rng.gamma(2.0, 6.0, n).round(2),
            "tip_amount": np.where(rng.random(n) < 0.4, 0.0, rng.random(n) * 4).round(2),
        }
    ).to_csv(tmp_path / "taxi.csv", index=False)
    code = snippets()[1].replace("/tmp/tessera-taxi-100000.csv", str(tmp_path / "taxi.csv"))
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "trip_distance" in out and "tip_fraction" in out
    assert "[24 rows x 2 columns]" in out  # the table of the 24 hours
