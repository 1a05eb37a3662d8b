"""The dataframe workload classes TPC-H does not stress, side by side: tessera, DuckDB,
Polars and pandas on the same Parquet tables, each query of each engine in a process of
its own (its peak RSS is that process's), every answer's digest checked against DuckDB's.

    python bench/frame_classes.py [--data DIR] [--engines tessera,duckdb,polars,pandas]
                                  [--queries gb6_10m,join_int_10m,...] [--repeat 3]
                                  [--tessera-bin PATH] [--timeout 600]

The classes (10M-row tables unless named otherwise):
- gb6_1m, gb6_10m: groupby on six integer keys with about as many groups as rows;
- gbstr, gbint: groupby on 100k distinct strings, and on the same groups as an integer;
- gbstr_scan: the string groupby straight from Parquet (keys dictionary-encoded there);
- join_int_10, join_int_10k, join_int_10m: inner joins with 10, 10k and 10M rows on an
  integer key (half the left rows match); _left and _outer variants; join_str_10k and
  join_str_10m on string keys;
- top2: the two largest values of each of 100k groups; corr: their correlation per group;
- the db-benchmark shapes, their table read from CSV (`dbgb.csv`: string keys id1, id2 of
  100 values and id3 of 100k, integer keys id4, id5 of 100 and id6 of 100k, v1 and v3):
  gb6mix_csv, a groupby on all six keys (nearly every row its own group) with the string
  keys as CSV gives them, gb6cat_csv the same with them cast to categoricals as the peers
  load them; gbstr_csv, a sum and mean by id3; join_csv_10m, an inner join of that table
  with another 10M-row one (`dbjoin.csv`, a string column each side) on an integer key.

Tables are written once under --data (default $TMPDIR/tessera-frame-classes, about
1.3 GB) by NumPy and pyarrow with a fixed seed, 16 row groups per large table (tessera's
partitions). Each engine reads the columns a query needs into memory before its clock
starts (except gbstr_scan); a timed run materialises the whole answer (DuckDB into a
temporary table). One JSON line per engine and query, then a Markdown table.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

QUERIES = [
    "gb6_1m", "gb6_10m", "gbstr", "gbint", "gbstr_scan",
    "join_int_10", "join_int_10k", "join_int_10m", "join_int_10k_left",
    "join_int_10m_left", "join_int_10m_outer", "join_str_10k", "join_str_10m",
    "top2", "corr", "gb6mix_csv", "gb6cat_csv", "gbstr_csv", "join_csv_10m",
]

# query -> (table, key, right table, how) for the joins.
JOINS = {
    "join_int_10": ("k10", "dim10", "inner"),
    "join_int_10k": ("k10k", "dim10k", "inner"),
    "join_int_10m": ("k10m", "dim10m", "inner"),
    "join_int_10k_left": ("k10k", "dim10k", "left"),
    "join_int_10m_left": ("k10m", "dim10m", "left"),
    "join_int_10m_outer": ("k10m", "dim10m", "outer"),
    "join_str_10k": ("s10k", "dim10k", "inner"),
    "join_str_10m": ("s10m", "dim10m", "inner"),
}
KEYS6 = ["k1", "k2", "k3", "k4", "k5", "k6"]
TABLES = ["keys6_1m", "keys6_10m", "strkeys", "fact", "dim10", "dim10k", "dim10m"]
# The CSV tables of the db-benchmark shapes, and their columns' types as each engine
# reads them (the keys' strings stay strings, except where cast to categoricals).
CSV_TABLES = ["dbgb", "dbjoin"]
DB_KEYS = ["id1", "id2", "id3", "id4", "id5", "id6"]
DB_STRINGS = ["id1", "id2", "id3"]


# ---------------------------------------------------------------- data
def write_tables(data):
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    os.makedirs(data, exist_ok=True)
    if all(os.path.exists(os.path.join(data, t + ".parquet")) for t in TABLES) and \
            all(os.path.exists(os.path.join(data, t + ".csv")) for t in CSV_TABLES):
        return
    rng = np.random.default_rng(20261128)

    def strings(prefix, ints, width):
        s = pc.utf8_lpad(pa.array(ints).cast(pa.string()), width, "0")
        return pc.binary_join_element_wise(prefix, s, "")

    def write(name, cols):
        path = os.path.join(data, name + ".parquet")
        if os.path.exists(path):
            return
        t = pa.table(cols)
        tmp = path + ".tmp"
        pq.write_table(t, tmp, row_group_size=max(1, -(-t.num_rows // 16)))
        os.replace(tmp, path)

    for name, n in (("keys6_1m", 1_000_000), ("keys6_10m", 10_000_000)):
        cols = {k: rng.integers(0, 100 if i < 3 else 10, n) for i, k in enumerate(KEYS6)}
        cols["v"] = rng.normal(size=n)
        write(name, cols)
    n = 10_000_000
    k = rng.integers(0, 100_000, n)
    v = rng.normal(size=n)
    write("strkeys", {
        "k": k,
        # distinct strings of uneven length, one per integer key
        "s": strings("key_", (k * 7919) % 1_000_003, 6),
        "v": v,
        "w": 0.5 * v + rng.normal(size=n),
    })
    k10, k10k, k10m = rng.integers(0, 20, n), rng.integers(0, 20_000, n), rng.integers(0, 20_000_000, n)
    write("fact", {
        "k10": k10, "k10k": k10k, "k10m": k10m,
        "s10k": strings("s", k10k, 5), "s10m": strings("s", k10m, 8),
        "x": rng.normal(size=n),
    })
    for name, m, width in (("dim10", 10, 2), ("dim10k", 10_000, 5), ("dim10m", 10_000_000, 8)):
        keys = rng.permutation(m) * 2
        key = {"dim10": "k10", "dim10k": "k10k", "dim10m": "k10m"}[name]
        cols = {key: keys}
        if name != "dim10":
            cols["s" + key[1:]] = strings("s", keys, width)
        cols["y"] = rng.normal(size=m)
        write(name, cols)
    write_csv_tables(np.random.default_rng(20261206), data, strings)


def write_csv_tables(rng, data, strings):
    """db-benchmark's groupby table G1_1e7_1e2 (10M rows, K = 100) and a 10M-row table
    to join it with, as CSV."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv

    def write(name, cols):
        path = os.path.join(data, name + ".csv")
        if os.path.exists(path):
            return
        tmp = path + ".tmp"
        pcsv.write_csv(pa.table(cols), tmp)
        os.replace(tmp, path)

    n, k = 10_000_000, 100
    write("dbgb", {
        "id1": strings("id", rng.integers(1, k + 1, n), 3),
        "id2": strings("id", rng.integers(1, k + 1, n), 3),
        "id3": strings("id", rng.integers(1, n // k + 1, n), 10),
        "id4": rng.integers(1, k + 1, n),
        "id5": rng.integers(1, k + 1, n),
        "id6": rng.integers(1, n // k + 1, n),
        "idj": rng.integers(0, 2 * n, n),
        "v1": rng.integers(1, 6, n),
        "v3": np.round(rng.uniform(0, 100, n), 6),
    })
    keys = rng.permutation(n) * 2
    write("dbjoin", {"idj": keys, "sj": strings("j", keys, 8), "v2": np.round(rng.normal(size=n), 6)})


def columns_of(query):
    """(table, columns) of each input a query reads."""
    if query in ("gb6mix_csv", "gb6cat_csv"):
        return [("dbgb", DB_KEYS + ["v1", "v3"])]
    if query.startswith("gb6"):
        return [("keys6_" + query.split("_")[1], KEYS6 + ["v"])]
    if query == "gbstr":
        return [("strkeys", ["s", "v"])]
    if query == "gbint":
        return [("strkeys", ["k", "v"])]
    if query == "top2":
        return [("strkeys", ["k", "v"])]
    if query == "corr":
        return [("strkeys", ["k", "v", "w"])]
    if query == "gbstr_csv":
        return [("dbgb", ["id3", "v1", "v3"])]
    if query == "join_csv_10m":
        return [("dbgb", DB_KEYS + ["idj", "v1", "v3"]), ("dbjoin", ["idj", "sj", "v2"])]
    key, dim, _ = JOINS[query]
    return [("fact", [key, "x"]), (dim, [key, "y"])]


# ---------------------------------------------------------------- engines (child side)
def digest_rows(rows, cols):
    cols = sorted(cols, key=lambda c: (c[0], c[1]))
    return {"rows": rows, "digest": [[n, float(s)] for n, s in cols]}


def inputs(read, data, query):
    """The path of a table, and the tables a query reads, read into memory by `read`
    (none for the scan query, whose timed run reads its file)."""
    path = lambda t: os.path.join(data, t + ".parquet")
    if query == "gbstr_scan":
        return path, {}
    return path, {t: read(path(t), columns=cols) for t, cols in columns_of(query)
                  if t not in CSV_TABLES}


def best_of(q, repeat):
    """The best seconds of `repeat` runs of `q`, and its last answer."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = q()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run_duckdb(data, query, repeat):
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = %d" % os.cpu_count())
    path = lambda t: os.path.join(data, t + ".parquet")
    if query != "gbstr_scan":
        for t, cols in columns_of(query):
            src = f"read_csv('{data}/{t}.csv')" if t in CSV_TABLES else f"read_parquet('{path(t)}')"
            con.execute(f"CREATE TABLE {t} AS SELECT {', '.join(cols)} FROM {src}")
    if query in ("gb6mix_csv", "gb6cat_csv"):
        # DuckDB's strings of at most 12 bytes are inline: VARCHAR is its fastest key.
        sql = f"SELECT {', '.join(DB_KEYS)}, sum(v3) AS v3, count(v1) AS n FROM dbgb GROUP BY ALL"
    elif query == "gbstr_csv":
        sql = "SELECT id3, sum(v1) AS v1, avg(v3) AS v3 FROM dbgb GROUP BY id3"
    elif query == "join_csv_10m":
        sql = "SELECT * FROM dbgb JOIN dbjoin USING (idj)"
    elif query.startswith("gb6"):
        t = "keys6_" + query.split("_")[1]
        sql = f"SELECT {', '.join(KEYS6)}, sum(v) AS v_sum, count(v) AS n FROM {t} GROUP BY ALL"
    elif query in ("gbstr", "gbint", "gbstr_scan"):
        key = "k" if query == "gbint" else "s"
        src = f"read_parquet('{path('strkeys')}')" if query == "gbstr_scan" else "strkeys"
        sql = f"SELECT {key}, sum(v) AS v_sum, avg(v) AS v_mean FROM {src} GROUP BY {key}"
    elif query == "top2":
        sql = ("SELECT k, v FROM (SELECT k, v, row_number() OVER (PARTITION BY k ORDER BY v DESC) "
               "AS rn FROM strkeys) WHERE rn <= 2")
    elif query == "corr":
        sql = "SELECT k, corr(v, w) AS c FROM strkeys GROUP BY k"
    else:
        key, dim, how = JOINS[query]
        kind = {"inner": "JOIN", "left": "LEFT JOIN", "outer": "FULL JOIN"}[how]
        sql = f"SELECT * FROM fact {kind} {dim} USING ({key})"
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        con.execute(f"CREATE OR REPLACE TEMP TABLE r AS {sql}")
        best = min(best, time.perf_counter() - t)
    names = [d[0] for d in con.execute("SELECT * FROM r LIMIT 0").description]
    types = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE r)").fetchall())
    parts = []
    for c in names:
        v = f'"{c}"'
        parts.append(f"count({v})")
        parts.append(f"sum(length({v}))" if types[c] == "VARCHAR" else f"sum({v}::DOUBLE)")
    row = con.execute(f"SELECT count(*), {', '.join(parts)} FROM r").fetchone()
    cols = [(row[1 + 2 * i], row[2 + 2 * i] or 0.0) for i in range(len(names))]
    return best, digest_rows(row[0], cols)


def run_polars(data, query, repeat):
    import polars as pl

    path, tables = inputs(pl.read_parquet, data, query)
    for t, cols in columns_of(query):
        if t in CSV_TABLES:
            tables[t] = pl.read_csv(os.path.join(data, t + ".csv"), columns=cols)
    if query == "gb6cat_csv":
        tables["dbgb"] = tables["dbgb"].with_columns(pl.col(DB_STRINGS).cast(pl.Categorical))
    if query in ("gb6mix_csv", "gb6cat_csv"):
        t = tables["dbgb"]
        q = lambda: t.lazy().group_by(DB_KEYS).agg(pl.col("v3").sum(), pl.col("v1").count().alias("n")).collect()
    elif query == "gbstr_csv":
        t = tables["dbgb"]
        q = lambda: t.lazy().group_by("id3").agg(pl.col("v1").sum(), pl.col("v3").mean()).collect()
    elif query == "join_csv_10m":
        x, y = tables["dbgb"], tables["dbjoin"]
        q = lambda: x.lazy().join(y.lazy(), on="idj", how="inner").collect()
    elif query.startswith("gb6"):
        t = tables["keys6_" + query.split("_")[1]]
        q = lambda: t.lazy().group_by(KEYS6).agg(pl.col("v").sum().alias("v_sum"),
                                                 pl.col("v").count().alias("n")).collect()
    elif query in ("gbstr", "gbint"):
        key = "k" if query == "gbint" else "s"
        t = tables["strkeys"]
        q = lambda: t.lazy().group_by(key).agg(pl.col("v").sum().alias("v_sum"),
                                               pl.col("v").mean().alias("v_mean")).collect()
    elif query == "gbstr_scan":
        q = lambda: pl.scan_parquet(path("strkeys")).group_by("s").agg(
            pl.col("v").sum().alias("v_sum"), pl.col("v").mean().alias("v_mean")).collect()
    elif query == "top2":
        t = tables["strkeys"]
        q = lambda: t.lazy().group_by("k").agg(pl.col("v").top_k(2)).explode("v").collect()
    elif query == "corr":
        t = tables["strkeys"]
        q = lambda: t.lazy().group_by("k").agg(pl.corr("v", "w").alias("c")).collect()
    else:
        key, dim, how = JOINS[query]
        f, d = tables["fact"], tables[dim]
        how = {"outer": "full"}.get(how, how)
        q = lambda: f.lazy().join(d.lazy(), on=key, how=how, coalesce=True).collect()
    best, out = best_of(q, repeat)
    cols = []
    for c in out.columns:
        s = out[c]
        if s.dtype == pl.Categorical:
            s = s.cast(pl.String)
        total = s.str.len_bytes().sum() if s.dtype == pl.String else s.cast(pl.Float64).sum()
        cols.append((s.len() - s.null_count(), total or 0.0))
    return best, digest_rows(out.height, cols)


def run_pandas(data, query, repeat):
    import pandas as pd

    path, tables = inputs(pd.read_parquet, data, query)
    for t, cols in columns_of(query):
        if t in CSV_TABLES:
            tables[t] = pd.read_csv(os.path.join(data, t + ".csv"), usecols=cols, engine="pyarrow")
    if query == "gb6cat_csv":
        tables["dbgb"] = tables["dbgb"].astype({c: "category" for c in DB_STRINGS})
    if query in ("gb6mix_csv", "gb6cat_csv"):
        t = tables["dbgb"]
        q = lambda: t.groupby(DB_KEYS, sort=False, observed=True).agg(
            v3=("v3", "sum"), n=("v1", "count")).reset_index()
    elif query == "gbstr_csv":
        t = tables["dbgb"]
        q = lambda: t.groupby("id3", sort=False).agg(v1=("v1", "sum"), v3=("v3", "mean")).reset_index()
    elif query == "join_csv_10m":
        x, y = tables["dbgb"], tables["dbjoin"]
        q = lambda: x.merge(y, on="idj", how="inner")
    elif query.startswith("gb6"):
        t = tables["keys6_" + query.split("_")[1]]
        q = lambda: t.groupby(KEYS6, sort=False).agg(v_sum=("v", "sum"), n=("v", "count")).reset_index()
    elif query in ("gbstr", "gbint", "gbstr_scan"):
        key = "k" if query == "gbint" else "s"
        src = (lambda: pd.read_parquet(path("strkeys"), columns=["s", "v"])) \
            if query == "gbstr_scan" else (lambda: tables["strkeys"])
        q = lambda: src().groupby(key, sort=False).agg(v_sum=("v", "sum"), v_mean=("v", "mean")).reset_index()
    elif query == "top2":
        t = tables["strkeys"]
        q = lambda: t.sort_values("v", ascending=False).groupby("k", sort=False).head(2)
    elif query == "corr":
        t = tables["strkeys"]
        q = lambda: t.groupby("k", sort=False)[["v", "w"]].corr().xs("v", level=1)["w"].reset_index()
    else:
        key, dim, how = JOINS[query]
        f, d = tables["fact"], tables[dim]
        q = lambda: f.merge(d, on=key, how=how)
    best, out = best_of(q, repeat)
    cols = []
    for c in out.columns:
        s = out[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            s = s.astype(str)
        if pd.api.types.is_numeric_dtype(s):
            total = float(s.astype("float64").sum())
        else:
            total = float(s.str.len().sum())
        cols.append((int(s.notna().sum()), total))
    return best, digest_rows(len(out), cols)


def child(engine, data, query, repeat):
    run = {"duckdb": run_duckdb, "polars": run_polars, "pandas": run_pandas}[engine]
    best, d = run(data, query, repeat)
    print(json.dumps({"engine": engine, "query": query, "seconds": round(best, 4), **d}))


# ---------------------------------------------------------------- parent
def run_child(cmd, timeout):
    """Runs one engine's query in a fresh process: its JSON line and its own peak RSS."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            os.wait4(p.pid, 0)
            return {"error": f"timed out after {timeout} s"}
        time.sleep(0.05)
    out, err = p.stdout.read(), p.stderr.read()
    p.returncode = os.waitstatus_to_exitcode(status)
    lines = [l for l in out.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        said = [l for l in err.splitlines() if "Error" in l or "error" in l or "panicked" in l]
        return {"error": (said or err.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    rec = json.loads(lines[-1])
    rec["peak_rss_mb"] = round(usage.ru_maxrss / 1024)  # KiB on Linux
    return rec


def agrees(a, b):
    if a["rows"] != b["rows"] or len(a["digest"]) != len(b["digest"]):
        return False
    for (n1, s1), (n2, s2) in zip(a["digest"], b["digest"]):
        if n1 != n2 or abs(s1 - s2) > 1e-6 * max(1.0, abs(s1), abs(s2)):
            return False
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "tessera-frame-classes"))
    p.add_argument("--engines", default="tessera,duckdb,polars,pandas")
    p.add_argument("--queries", default=",".join(QUERIES))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--tessera-bin", default=None)
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    queries = a.queries.split(",")
    for q in queries:
        if q not in QUERIES:
            sys.exit(f"unknown query {q!r}; the queries are {', '.join(QUERIES)}")
    if a.child == "tables":
        write_tables(a.data)
        return
    if a.child:
        child(a.child, a.data, queries[0], a.repeat)
        return
    engines = a.engines.split(",")
    t = time.perf_counter()
    # In a process of its own: the tables' arrays would otherwise count in the peak RSS
    # of every engine's process (forked from this one, whose high-water mark it inherits).
    subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "tables", "--data", a.data],
                   check=True)
    print(f"# tables in {a.data} ({time.perf_counter() - t:.1f} s)", file=sys.stderr)
    binary = a.tessera_bin
    if "tessera" in engines and binary is None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        subprocess.run(["cargo", "build", "--release", "--quiet", "--example", "frame_classes"],
                       cwd=root, check=True)
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
        binary = os.path.join(target, "release", "examples", "frame_classes")
    results = {}
    for q in queries:
        for e in engines:
            if e == "tessera":
                cmd = [binary, "--data", a.data, "--query", q, "--repeat", str(a.repeat)]
            else:
                cmd = [sys.executable, os.path.abspath(__file__), "--child", e, "--data", a.data,
                       "--queries", q, "--repeat", str(a.repeat)]
            rec = run_child(cmd, a.timeout)
            rec.update(engine=e, query=q)
            results[(e, q)] = rec
    for q in queries:
        ref = results.get(("duckdb", q))
        for e in engines:
            rec = results[(e, q)]
            if ref and "error" not in ref and "error" not in rec:
                rec["agrees_with_duckdb"] = agrees(rec, ref)
            print(json.dumps({k: v for k, v in rec.items() if k != "digest"}))
    peers = [e for e in engines if e != "tessera"]
    print("\n| query | " + " | ".join(engines) + " | tessera / fastest peer | tessera / DuckDB "
          "| peak RSS " + " / ".join(engines) + " (MB) | answers |")
    print("| --- " * (len(engines) + 5) + "|")
    for q in queries:
        recs = [results[(e, q)] for e in engines]
        cell = lambda r: r.get("error", "%.3f s" % r["seconds"]) if "seconds" in r else r.get("error")
        fastest = min((results[(e, q)]["seconds"] for e in peers if "seconds" in results[(e, q)]),
                      default=None)
        tess = results.get(("tessera", q), {})
        duck = results.get(("duckdb", q), {})
        ratio = "%.2fx" % (tess["seconds"] / fastest) if fastest and "seconds" in tess else "–"
        vs_duck = "%.2fx" % (tess["seconds"] / duck["seconds"]) \
            if "seconds" in tess and "seconds" in duck else "–"
        rss = " / ".join(str(r.get("peak_rss_mb", "–")) for r in recs)
        ok = all(r.get("agrees_with_duckdb", True) for r in recs if "error" not in r)
        print(f"| {q} | " + " | ".join(cell(r) for r in recs) + f" | {ratio} | {vs_duck} | {rss} | "
              + ("all agree" if ok else "DIFFER") + " |")
    if not all(r.get("agrees_with_duckdb", True) for r in results.values()):
        sys.exit("some answers differ from DuckDB's")


if __name__ == "__main__":
    main()
