"""The 22 TPC-H queries in Polars' lazy API, timed as the peer of `examples/tpch.rs`.

    python bench/tpch/polars_queries.py DATA [--sf 1] [--queries 1,2] [--repeat 3] [--out DIR]

One JSON line per query (best of `--repeat`, each run scanning the Parquet files again, as
tessera's does). Decimal columns are cast to float64 at the scan (Polars' decimal
arithmetic rounds each product to the column's scale, which DuckDB's and tessera's do not).
With `--out`, each answer as JSON lines in the form the DuckDB check reads, so
`bench/tpch/check_duckdb.py DATA DIR` checks this peer's answers too.
"""

import argparse
import datetime
import json
import os
import time

import polars as pl

DATA = "."


def t(name):
    """A table, its decimal columns as float64 (Polars' decimal arithmetic rounds each
    product to the column's scale, which DuckDB's does not)."""
    folder = os.path.join(DATA, name)
    lf = pl.scan_parquet(os.path.join(folder, "*.parquet") if os.path.isdir(folder)
                         else f"{folder}.parquet")
    return lf.with_columns(pl.col(pl.Decimal).cast(pl.Float64))


def d(s):
    return datetime.date.fromisoformat(s)


def rev():
    return pl.col("l_extendedprice") * (1 - pl.col("l_discount"))


def q1(sf):
    return (t("lineitem").filter(pl.col("l_shipdate") <= d("1998-09-02"))
            .group_by("l_returnflag", "l_linestatus")
            .agg(pl.sum("l_quantity").alias("sum_qty"),
                 pl.sum("l_extendedprice").alias("sum_base_price"),
                 rev().sum().alias("sum_disc_price"),
                 (rev() * (1 + pl.col("l_tax"))).sum().alias("sum_charge"),
                 pl.mean("l_quantity").alias("avg_qty"),
                 pl.mean("l_extendedprice").alias("avg_price"),
                 pl.mean("l_discount").alias("avg_disc"),
                 pl.len().alias("count_order"))
            .sort("l_returnflag", "l_linestatus"))


def europe_offers():
    region = t("region").filter(pl.col("r_name") == "EUROPE")
    nation = t("nation").join(region, left_on="n_regionkey", right_on="r_regionkey")
    supplier = t("supplier").join(nation, left_on="s_nationkey", right_on="n_nationkey")
    return t("partsupp").join(supplier, left_on="ps_suppkey", right_on="s_suppkey")


def q2(sf):
    offers = europe_offers()
    cheapest = offers.group_by("ps_partkey").agg(pl.min("ps_supplycost").alias("min_cost"))
    part = t("part").filter((pl.col("p_size") == 15) & pl.col("p_type").str.ends_with("BRASS"))
    return (part.join(offers, left_on="p_partkey", right_on="ps_partkey")
            .join(cheapest, left_on=["p_partkey", "ps_supplycost"],
                  right_on=["ps_partkey", "min_cost"])
            .select("s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address",
                    "s_phone", "s_comment")
            .sort(["s_acctbal", "n_name", "s_name", "p_partkey"],
                  descending=[True, False, False, False])
            .head(100))


def q3(sf):
    c = t("customer").filter(pl.col("c_mktsegment") == "BUILDING")
    o = t("orders").filter(pl.col("o_orderdate") < d("1995-03-15"))
    li = t("lineitem").filter(pl.col("l_shipdate") > d("1995-03-15"))
    return (c.join(o, left_on="c_custkey", right_on="o_custkey")
            .join(li, left_on="o_orderkey", right_on="l_orderkey")
            .group_by(pl.col("o_orderkey").alias("l_orderkey"), "o_orderdate", "o_shippriority")
            .agg(rev().sum().alias("revenue"))
            .sort(["revenue", "o_orderdate"], descending=[True, False])
            .head(10))


def q4(sf):
    o = t("orders").filter(pl.col("o_orderdate").is_between(d("1993-07-01"), d("1993-10-01"),
                                                            closed="left"))
    late = t("lineitem").filter(pl.col("l_commitdate") < pl.col("l_receiptdate"))
    return (o.join(late, left_on="o_orderkey", right_on="l_orderkey", how="semi")
            .group_by("o_orderpriority").agg(pl.len().alias("order_count"))
            .sort("o_orderpriority"))


def q5(sf):
    region = t("region").filter(pl.col("r_name") == "ASIA")
    nation = t("nation").join(region, left_on="n_regionkey", right_on="r_regionkey")
    o = t("orders").filter(pl.col("o_orderdate").is_between(d("1994-01-01"), d("1995-01-01"),
                                                            closed="left"))
    return (t("customer").join(o, left_on="c_custkey", right_on="o_custkey")
            .join(t("lineitem"), left_on="o_orderkey", right_on="l_orderkey")
            .join(t("supplier"), left_on=["l_suppkey", "c_nationkey"],
                  right_on=["s_suppkey", "s_nationkey"])
            .join(nation, left_on="c_nationkey", right_on="n_nationkey")
            .group_by("n_name").agg(rev().sum().alias("revenue"))
            .sort("revenue", descending=True))


def q6(sf):
    return (t("lineitem")
            .filter(pl.col("l_shipdate").is_between(d("1994-01-01"), d("1995-01-01"),
                                                    closed="left")
                    & pl.col("l_discount").is_between(0.05, 0.07)
                    & (pl.col("l_quantity") < 24))
            .select((pl.col("l_extendedprice") * pl.col("l_discount")).sum().alias("revenue")))


def nation_as(prefix):
    return t("nation").select(pl.col("n_nationkey").alias(f"{prefix}_nationkey"),
                              pl.col("n_name").alias(f"{prefix}_name"),
                              pl.col("n_regionkey").alias(f"{prefix}_regionkey"))


def q7(sf):
    li = t("lineitem").filter(pl.col("l_shipdate").is_between(d("1995-01-01"), d("1996-12-31")))
    pair = lambda a, b: (pl.col("n1_name") == a) & (pl.col("n2_name") == b)  # noqa: E731
    return (t("supplier").join(li, left_on="s_suppkey", right_on="l_suppkey")
            .join(t("orders"), left_on="l_orderkey", right_on="o_orderkey")
            .join(t("customer"), left_on="o_custkey", right_on="c_custkey")
            .join(nation_as("n1"), left_on="s_nationkey", right_on="n1_nationkey")
            .join(nation_as("n2"), left_on="c_nationkey", right_on="n2_nationkey")
            .filter(pair("FRANCE", "GERMANY") | pair("GERMANY", "FRANCE"))
            .group_by(pl.col("n1_name").alias("supp_nation"),
                      pl.col("n2_name").alias("cust_nation"),
                      pl.col("l_shipdate").dt.year().alias("l_year"))
            .agg(rev().sum().alias("revenue"))
            .sort("supp_nation", "cust_nation", "l_year"))


def q8(sf):
    america = nation_as("n1").join(t("region").filter(pl.col("r_name") == "AMERICA"),
                                   left_on="n1_regionkey", right_on="r_regionkey")
    part = t("part").filter(pl.col("p_type") == "ECONOMY ANODIZED STEEL")
    o = t("orders").filter(pl.col("o_orderdate").is_between(d("1995-01-01"), d("1996-12-31")))
    return (t("lineitem").join(part, left_on="l_partkey", right_on="p_partkey")
            .join(t("supplier"), left_on="l_suppkey", right_on="s_suppkey")
            .join(o, left_on="l_orderkey", right_on="o_orderkey")
            .join(t("customer"), left_on="o_custkey", right_on="c_custkey")
            .join(america, left_on="c_nationkey", right_on="n1_nationkey")
            .join(nation_as("n2"), left_on="s_nationkey", right_on="n2_nationkey")
            .group_by(pl.col("o_orderdate").dt.year().alias("o_year"))
            .agg((pl.when(pl.col("n2_name") == "BRAZIL").then(rev()).otherwise(0).sum()
                  / rev().sum()).alias("mkt_share"))
            .sort("o_year"))


def q9(sf):
    part = t("part").filter(pl.col("p_name").str.contains("green", literal=True))
    return (t("lineitem").join(part, left_on="l_partkey", right_on="p_partkey")
            .join(t("supplier"), left_on="l_suppkey", right_on="s_suppkey")
            .join(t("partsupp"), left_on=["l_suppkey", "l_partkey"],
                  right_on=["ps_suppkey", "ps_partkey"])
            .join(t("orders"), left_on="l_orderkey", right_on="o_orderkey")
            .join(t("nation"), left_on="s_nationkey", right_on="n_nationkey")
            .group_by(pl.col("n_name").alias("nation"),
                      pl.col("o_orderdate").dt.year().alias("o_year"))
            .agg((rev() - pl.col("ps_supplycost") * pl.col("l_quantity")).sum()
                 .alias("sum_profit"))
            .sort(["nation", "o_year"], descending=[False, True]))


def q10(sf):
    o = t("orders").filter(pl.col("o_orderdate").is_between(d("1993-10-01"), d("1994-01-01"),
                                                            closed="left"))
    li = t("lineitem").filter(pl.col("l_returnflag") == "R")
    return (t("customer").join(o, left_on="c_custkey", right_on="o_custkey")
            .join(li, left_on="o_orderkey", right_on="l_orderkey")
            .join(t("nation"), left_on="c_nationkey", right_on="n_nationkey")
            .group_by("c_custkey", "c_name", "c_acctbal", "c_phone", "n_name", "c_address",
                      "c_comment")
            .agg(rev().sum().alias("revenue"))
            .sort("revenue", descending=True)
            .head(20))


def q11(sf):
    germany = t("nation").filter(pl.col("n_name") == "GERMANY")
    stock = (t("partsupp").join(t("supplier"), left_on="ps_suppkey", right_on="s_suppkey")
             .join(germany, left_on="s_nationkey", right_on="n_nationkey")
             .with_columns((pl.col("ps_supplycost") * pl.col("ps_availqty")).alias("value")))
    threshold = stock.select(pl.sum("value") * (0.0001 / sf)).collect().item()
    return (stock.group_by("ps_partkey").agg(pl.sum("value"))
            .filter(pl.col("value") > threshold)
            .sort("value", descending=True))


def q12(sf):
    li = t("lineitem").filter(
        pl.col("l_shipmode").is_in(["MAIL", "SHIP"])
        & (pl.col("l_commitdate") < pl.col("l_receiptdate"))
        & (pl.col("l_shipdate") < pl.col("l_commitdate"))
        & pl.col("l_receiptdate").is_between(d("1994-01-01"), d("1995-01-01"), closed="left"))
    high = pl.col("o_orderpriority").is_in(["1-URGENT", "2-HIGH"])
    return (t("orders").join(li, left_on="o_orderkey", right_on="l_orderkey")
            .group_by("l_shipmode")
            .agg(pl.when(high).then(1).otherwise(0).sum().alias("high_line_count"),
                 pl.when(high).then(0).otherwise(1).sum().alias("low_line_count"))
            .sort("l_shipmode"))


def q13(sf):
    o = t("orders").filter(~pl.col("o_comment").str.contains("special.*requests"))
    return (t("customer").join(o, left_on="c_custkey", right_on="o_custkey", how="left")
            .group_by("c_custkey").agg(pl.col("o_orderkey").count().alias("c_count"))
            .group_by("c_count").agg(pl.len().alias("custdist"))
            .sort(["custdist", "c_count"], descending=[True, True]))


def q14(sf):
    li = t("lineitem").filter(pl.col("l_shipdate").is_between(d("1995-09-01"), d("1995-10-01"),
                                                              closed="left"))
    return (li.join(t("part"), left_on="l_partkey", right_on="p_partkey")
            .select((100.0 * pl.when(pl.col("p_type").str.starts_with("PROMO")).then(rev())
                     .otherwise(0).sum() / rev().sum()).alias("promo_revenue")))


def q15(sf):
    revenue0 = (t("lineitem")
                .filter(pl.col("l_shipdate").is_between(d("1996-01-01"), d("1996-04-01"),
                                                        closed="left"))
                .group_by("l_suppkey").agg(rev().sum().alias("total_revenue"))).collect()
    top = revenue0["total_revenue"].max()
    return (t("supplier").join(revenue0.lazy(), left_on="s_suppkey", right_on="l_suppkey")
            .filter(pl.col("total_revenue") == top)
            .select("s_suppkey", "s_name", "s_address", "s_phone", "total_revenue")
            .sort("s_suppkey"))


def q16(sf):
    part = t("part").filter((pl.col("p_brand") != "Brand#45")
                            & ~pl.col("p_type").str.starts_with("MEDIUM POLISHED")
                            & pl.col("p_size").is_in([49, 14, 23, 45, 19, 3, 36, 9]))
    complaints = t("supplier").filter(
        pl.col("s_comment").str.contains(".*Customer.*Complaints.*"))
    return (t("partsupp").join(part, left_on="ps_partkey", right_on="p_partkey")
            .join(complaints, left_on="ps_suppkey", right_on="s_suppkey", how="anti")
            .group_by("p_brand", "p_type", "p_size")
            .agg(pl.col("ps_suppkey").n_unique().alias("supplier_cnt"))
            .sort(["supplier_cnt", "p_brand", "p_type", "p_size"],
                  descending=[True, False, False, False]))


def q17(sf):
    part = t("part").filter((pl.col("p_brand") == "Brand#23") & (pl.col("p_container") == "MED BOX"))
    li = t("lineitem").join(part, left_on="l_partkey", right_on="p_partkey")
    avg = li.group_by("l_partkey").agg((0.2 * pl.mean("l_quantity")).alias("limit"))
    return (li.join(avg, on="l_partkey")
            .filter(pl.col("l_quantity") < pl.col("limit"))
            .select((pl.sum("l_extendedprice") / 7.0).alias("avg_yearly")))


def q18(sf):
    li = t("lineitem")
    large = (li.group_by("l_orderkey").agg(pl.sum("l_quantity").alias("q"))
             .filter(pl.col("q") > 300))
    return (t("orders").join(large, left_on="o_orderkey", right_on="l_orderkey", how="semi")
            .join(t("customer"), left_on="o_custkey", right_on="c_custkey")
            .join(li, left_on="o_orderkey", right_on="l_orderkey")
            .group_by(pl.col("c_name"), pl.col("o_custkey").alias("c_custkey"), "o_orderkey",
                      "o_orderdate", "o_totalprice")
            .agg(pl.sum("l_quantity").alias("sum(l_quantity)"))
            .sort(["o_totalprice", "o_orderdate"], descending=[True, False])
            .head(100))


def q19(sf):
    def arm(brand, containers, qty, size):
        return ((pl.col("p_brand") == brand) & pl.col("p_container").is_in(containers)
                & pl.col("l_quantity").is_between(qty, qty + 10)
                & pl.col("p_size").is_between(1, size)
                & pl.col("l_shipmode").is_in(["AIR", "AIR REG"])
                & (pl.col("l_shipinstruct") == "DELIVER IN PERSON"))
    return (t("lineitem").join(t("part"), left_on="l_partkey", right_on="p_partkey")
            .filter(arm("Brand#12", ["SM CASE", "SM BOX", "SM PACK", "SM PKG"], 1, 5)
                    | arm("Brand#23", ["MED BAG", "MED BOX", "MED PKG", "MED PACK"], 10, 10)
                    | arm("Brand#34", ["LG CASE", "LG BOX", "LG PACK", "LG PKG"], 20, 15))
            .select(rev().sum().alias("revenue")))


def q20(sf):
    forest = t("part").filter(pl.col("p_name").str.starts_with("forest"))
    shipped = (t("lineitem")
               .filter(pl.col("l_shipdate").is_between(d("1994-01-01"), d("1995-01-01"),
                                                       closed="left"))
               .group_by("l_partkey", "l_suppkey").agg(pl.sum("l_quantity").alias("shipped")))
    excess = (t("partsupp").join(forest, left_on="ps_partkey", right_on="p_partkey", how="semi")
              .join(shipped, left_on=["ps_partkey", "ps_suppkey"],
                    right_on=["l_partkey", "l_suppkey"])
              .filter(pl.col("ps_availqty") > 0.5 * pl.col("shipped")))
    canada = t("nation").filter(pl.col("n_name") == "CANADA")
    return (t("supplier").join(canada, left_on="s_nationkey", right_on="n_nationkey")
            .join(excess, left_on="s_suppkey", right_on="ps_suppkey", how="semi")
            .select("s_name", "s_address").sort("s_name"))


def q21(sf):
    li = t("lineitem")
    late = li.filter(pl.col("l_receiptdate") > pl.col("l_commitdate"))
    n_supp = li.group_by("l_orderkey").agg(pl.col("l_suppkey").n_unique().alias("n_supp"))
    n_late = late.group_by("l_orderkey").agg(pl.col("l_suppkey").n_unique().alias("n_late"))
    saudi = t("nation").filter(pl.col("n_name") == "SAUDI ARABIA")
    return (late.join(t("supplier"), left_on="l_suppkey", right_on="s_suppkey")
            .join(saudi, left_on="s_nationkey", right_on="n_nationkey")
            .join(t("orders").filter(pl.col("o_orderstatus") == "F"),
                  left_on="l_orderkey", right_on="o_orderkey")
            .join(n_supp, on="l_orderkey").join(n_late, on="l_orderkey")
            .filter((pl.col("n_supp") > 1) & (pl.col("n_late") == 1))
            .group_by("s_name").agg(pl.len().alias("numwait"))
            .sort(["numwait", "s_name"], descending=[True, False])
            .head(100))


def q22(sf):
    codes = ["13", "31", "23", "29", "30", "18", "17"]
    cust = (t("customer").with_columns(pl.col("c_phone").str.slice(0, 2).alias("cntrycode"))
            .filter(pl.col("cntrycode").is_in(codes)))
    average = cust.filter(pl.col("c_acctbal") > 0).select(pl.mean("c_acctbal")).collect().item()
    return (cust.filter(pl.col("c_acctbal") > average)
            .join(t("orders"), left_on="c_custkey", right_on="o_custkey", how="anti")
            .group_by("cntrycode")
            .agg(pl.len().alias("numcust"), pl.sum("c_acctbal").alias("totacctbal"))
            .sort("cntrycode"))


def plain(v):
    if isinstance(v, datetime.date):
        return v.isoformat()
    return float(v) if hasattr(v, "as_tuple") else v


def main():
    global DATA
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--queries", default=",".join(str(q) for q in range(1, 23)))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out")
    a = p.parse_args()
    DATA = a.data
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    for q in [int(x) for x in a.queries.split(",") if x.strip()]:
        best, df = None, None
        for _ in range(max(1, a.repeat)):
            start = time.perf_counter()
            df = globals()[f"q{q}"](a.sf).collect()
            secs = time.perf_counter() - start
            best = secs if best is None else min(best, secs)
        print(json.dumps({"engine": "polars-lazy", "query": q, "sf": a.sf,
                          "seconds": round(best, 4), "rows": df.height,
                          "polars": pl.__version__}), flush=True)
        if a.out:
            with open(os.path.join(a.out, f"q{q:02d}.jsonl"), "w") as f:
                for row in df.iter_rows(named=True):
                    f.write(json.dumps({k: plain(v) for k, v in row.items()}) + "\n")


if __name__ == "__main__":
    main()
