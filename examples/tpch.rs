//! The 22 TPC-H queries written with tessera's dataframe API, on the Parquet files
//! `tpchgen-cli` writes (decimals, dates as `date32`, strings as its writer stores them),
//! one JSON line of timing per query and, with `--out`, each answer as JSON lines for
//! `bench/tpch/check_duckdb.py` to compare with DuckDB on the same files.
//!
//! ```text
//! bench/tpch/generate.sh 1 /tmp/tpch-sf1            # tpchgen-cli, scale factor 1
//! cargo run --release --example tpch -- --data /tmp/tpch-sf1 [--sf 1] [--queries 1,6,22] [--repeat 3] [--out DIR] [--explain]
//! ```
//!
//! The queries follow the TPC-H specification's text with its validation parameters
//! (`BRASS`, `BUILDING`, `1995-03-15`, ...). Date arithmetic in the SQL (`date '1998-12-01'
//! - interval '90' day`) is written as the date it evaluates to; subqueries become joins,
//! semi and anti joins, or a scalar computed first (Q11, Q15, Q22), as a user of a
//! dataframe library writes them; a correlated subquery that aggregates (Q17, Q20, Q21)
//! aggregates only the rows of the outer query's keys, semi-joined first, as a
//! decorrelated plan does. Decimal columns stay exact decimals, as in DuckDB:
//! `l_extendedprice * (1 - l_discount)` is a decimal of scale 4 and its sum is exact;
//! arithmetic with a float literal (`0.2 * avg`) is Float64.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use tessera::frame::{
    col, lit, read_parquet, when, AggFunc, Computed, DataFrame, Expr, JoinStrategy, JoinType,
    Literal, Value,
};
use tessera::Result;

mod common;

/// The TPC-H tables under one directory.
struct Tables {
    dir: PathBuf,
}

impl Tables {
    /// `name` as `DIR/name.parquet`, or every Parquet file of `DIR/name/`.
    fn get(&self, name: &str) -> Result<DataFrame> {
        let folder = self.dir.join(name);
        let pattern = if folder.is_dir() {
            folder.join("*.parquet")
        } else {
            self.dir.join(format!("{name}.parquet"))
        };
        read_parquet(&pattern.to_string_lossy())
    }
}

/// An inner equi-join.
fn join(
    left: &DataFrame,
    right: &DataFrame,
    left_on: &[&str],
    right_on: &[&str],
) -> Result<DataFrame> {
    left.merge_on(
        right,
        left_on,
        right_on,
        JoinType::Inner,
        JoinStrategy::Auto,
    )
}

/// `from <= column < until` (dates as `YYYY-MM-DD`): the specification's
/// `>= date 'from' and < date 'from' + interval ...`.
fn during(column: &str, from: &str, until: &str) -> Expr {
    col(column).gt_eq(lit(from)).and(col(column).lt(lit(until)))
}

/// `l_extendedprice * (1 - l_discount)`.
fn revenue() -> Expr {
    col("l_extendedprice") * (lit(1) - col("l_discount"))
}

/// The value of a one-row result's column as f64.
fn scalar(frame: &DataFrame, column: &str) -> Result<f64> {
    let c = frame.compute()?;
    c.value(column, 0)?.as_f64().ok_or_else(|| {
        tessera::Error::invalid(
            "tpch",
            format!("{column} of a one-row result is not a number"),
        )
    })
}

/// The nations of the region `name`.
fn nations_in(t: &Tables, name: &str) -> Result<DataFrame> {
    let region = t.get("region")?.filter(col("r_name").eq(lit(name)))?;
    join(
        &t.get("nation")?,
        &region,
        &["n_regionkey"],
        &["r_regionkey"],
    )
}

/// `partsupp` with the suppliers of `nations` (a filtered nation table): the offers of
/// Q2 and Q11.
fn offers_of(t: &Tables, nations: &DataFrame) -> Result<DataFrame> {
    let suppliers = join(
        &t.get("supplier")?,
        nations,
        &["s_nationkey"],
        &["n_nationkey"],
    )?;
    join(
        &t.get("partsupp")?,
        &suppliers,
        &["ps_suppkey"],
        &["s_suppkey"],
    )
}

fn q1(t: &Tables) -> Result<DataFrame> {
    t.get("lineitem")?
        .filter(col("l_shipdate").lt_eq(lit("1998-09-02")))?
        .groupby(&["l_returnflag", "l_linestatus"])?
        .agg_exprs(&[
            (col("l_quantity"), AggFunc::Sum, "sum_qty"),
            (col("l_extendedprice"), AggFunc::Sum, "sum_base_price"),
            (revenue(), AggFunc::Sum, "sum_disc_price"),
            (
                revenue() * (lit(1) + col("l_tax")),
                AggFunc::Sum,
                "sum_charge",
            ),
            (col("l_quantity"), AggFunc::Mean, "avg_qty"),
            (col("l_extendedprice"), AggFunc::Mean, "avg_price"),
            (col("l_discount"), AggFunc::Mean, "avg_disc"),
            (col("l_orderkey"), AggFunc::Count, "count_order"),
        ])?
        .sort_values(&["l_returnflag", "l_linestatus"], &[true])?
        .done()
}

fn q2(t: &Tables) -> Result<DataFrame> {
    let europe = nations_in(t, "EUROPE")?;
    let parts = t
        .get("part")?
        .filter(col("p_size").eq(lit(15)).and(col("p_type").like("%BRASS")))?;
    // The subquery's minimum is correlated on the part: it is needed only for the parts
    // kept, and the European offers of those parts are all among `rows`. So the minimum
    // is taken over `rows` (kept in memory: about 0.4% of the offers), not over every
    // European offer (16 million at scale 100, 5.3 GB held).
    let rows = join(
        &parts,
        &offers_of(t, &europe)?,
        &["p_partkey"],
        &["ps_partkey"],
    )?
    .select(&[
        "p_partkey",
        "p_mfgr",
        "ps_supplycost",
        "s_acctbal",
        "s_name",
        "n_name",
        "s_address",
        "s_phone",
        "s_comment",
    ])?
    .persist()?;
    let cheapest = rows
        .groupby(&["p_partkey"])?
        .agg_exprs(&[(col("ps_supplycost"), AggFunc::Min, "min_cost")])?
        .rename(&[("p_partkey", "min_partkey")])?;
    join(
        &rows,
        &cheapest,
        &["p_partkey", "ps_supplycost"],
        &["min_partkey", "min_cost"],
    )?
    .select(&[
        "s_acctbal",
        "s_name",
        "n_name",
        "p_partkey",
        "p_mfgr",
        "s_address",
        "s_phone",
        "s_comment",
    ])?
    .sort_values(
        &["s_acctbal", "n_name", "s_name", "p_partkey"],
        &[false, true, true, true],
    )?
    .limit(100)
    .done()
}

fn q3(t: &Tables) -> Result<DataFrame> {
    let customers = t
        .get("customer")?
        .filter(col("c_mktsegment").eq(lit("BUILDING")))?;
    let orders = t
        .get("orders")?
        .filter(col("o_orderdate").lt(lit("1995-03-15")))?;
    let lines = t
        .get("lineitem")?
        .filter(col("l_shipdate").gt(lit("1995-03-15")))?;
    let co = join(&customers, &orders, &["c_custkey"], &["o_custkey"])?;
    join(&co, &lines, &["o_orderkey"], &["l_orderkey"])?
        .groupby(&["l_orderkey", "o_orderdate", "o_shippriority"])?
        .agg_exprs(&[(revenue(), AggFunc::Sum, "revenue")])?
        .sort_values(&["revenue", "o_orderdate"], &[false, true])?
        .limit(10)
        .done()
}

fn q4(t: &Tables) -> Result<DataFrame> {
    let orders = t
        .get("orders")?
        .filter(during("o_orderdate", "1993-07-01", "1993-10-01"))?;
    let late = t
        .get("lineitem")?
        .filter(col("l_commitdate").lt(col("l_receiptdate")))?;
    orders
        .semi_join(&late, &["o_orderkey"], &["l_orderkey"])?
        .groupby(&["o_orderpriority"])?
        .agg_exprs(&[(col("o_orderkey"), AggFunc::Count, "order_count")])?
        .sort_values(&["o_orderpriority"], &[true])?
        .done()
}

fn q5(t: &Tables) -> Result<DataFrame> {
    let asia = nations_in(t, "ASIA")?;
    let orders = t
        .get("orders")?
        .filter(during("o_orderdate", "1994-01-01", "1995-01-01"))?;
    // The region narrows the customers (to a fifth) before their orders meet the line
    // items, the order a cost-based optimizer picks: the line items then probe the
    // orders of Asian customers in 1994, not every order of 1994 (at scale 100, 4.5
    // million against 23 million).
    let customers = join(
        &t.get("customer")?,
        &asia,
        &["c_nationkey"],
        &["n_nationkey"],
    )?;
    let co = join(&customers, &orders, &["c_custkey"], &["o_custkey"])?;
    let col_ = join(&t.get("lineitem")?, &co, &["l_orderkey"], &["o_orderkey"])?;
    join(
        &col_,
        &t.get("supplier")?,
        &["l_suppkey", "c_nationkey"],
        &["s_suppkey", "s_nationkey"],
    )?
    .groupby(&["n_name"])?
    .agg_exprs(&[(revenue(), AggFunc::Sum, "revenue")])?
    .sort_values(&["revenue"], &[false])?
    .done()
}

fn q6(t: &Tables) -> Result<DataFrame> {
    t.get("lineitem")?
        .filter(
            during("l_shipdate", "1994-01-01", "1995-01-01")
                .and(col("l_discount").between(lit(0.05), lit(0.07)))
                .and(col("l_quantity").lt(lit(24.0))),
        )?
        .agg_exprs(&[(
            col("l_extendedprice") * col("l_discount"),
            AggFunc::Sum,
            "revenue",
        )])?
        .done()
}

/// The nation table with its columns renamed `prefix_...` (for a second copy in a join).
fn nation_as(t: &Tables, prefix: &str) -> Result<DataFrame> {
    let names = ["n_nationkey", "n_name", "n_regionkey", "n_comment"];
    let renamed: Vec<String> = names
        .iter()
        .map(|n| format!("{prefix}_{}", &n[2..]))
        .collect();
    let pairs: Vec<(&str, &str)> = names
        .iter()
        .zip(&renamed)
        .map(|(a, b)| (*a, b.as_str()))
        .collect();
    t.get("nation")?.rename(&pairs)
}

fn q7(t: &Tables) -> Result<DataFrame> {
    let lines = t
        .get("lineitem")?
        .filter(col("l_shipdate").between(lit("1995-01-01"), lit("1996-12-31")))?;
    let france_or_germany = |c: &str| col(c).eq(lit("FRANCE")).or(col(c).eq(lit("GERMANY")));
    // The two nations narrow the suppliers and the customers (each to 2 of 25) before
    // they meet the line items and the orders, as a cost-based optimizer orders these
    // joins: at scale 100 the line items of two years (180 million) then keep 14 million
    // rows before their orders are joined, and the orders 12 million.
    let suppliers = join(
        &t.get("supplier")?,
        &nation_as(t, "n1")?.filter(france_or_germany("n1_name"))?,
        &["s_nationkey"],
        &["n1_nationkey"],
    )?;
    let customers = join(
        &t.get("customer")?,
        &nation_as(t, "n2")?.filter(france_or_germany("n2_name"))?,
        &["c_nationkey"],
        &["n2_nationkey"],
    )?;
    let sl = join(&lines, &suppliers, &["l_suppkey"], &["s_suppkey"])?;
    let oc = join(
        &t.get("orders")?,
        &customers,
        &["o_custkey"],
        &["c_custkey"],
    )?;
    let both = join(&sl, &oc, &["l_orderkey"], &["o_orderkey"])?;
    let pair = |a: &str, b: &str| col("n1_name").eq(lit(a)).and(col("n2_name").eq(lit(b)));
    both.filter(pair("FRANCE", "GERMANY").or(pair("GERMANY", "FRANCE")))?
        .with_column("supp_nation", col("n1_name"))?
        .with_column("cust_nation", col("n2_name"))?
        .with_column("l_year", col("l_shipdate").year())?
        .groupby(&["supp_nation", "cust_nation", "l_year"])?
        .agg_exprs(&[(revenue(), AggFunc::Sum, "revenue")])?
        .sort_values(&["supp_nation", "cust_nation", "l_year"], &[true])?
        .done()
}

fn q8(t: &Tables) -> Result<DataFrame> {
    let america = join(
        &nation_as(t, "n1")?,
        &t.get("region")?.filter(col("r_name").eq(lit("AMERICA")))?,
        &["n1_regionkey"],
        &["r_regionkey"],
    )?;
    let parts = t
        .get("part")?
        .filter(col("p_type").eq(lit("ECONOMY ANODIZED STEEL")))?;
    let orders = t
        .get("orders")?
        .filter(col("o_orderdate").between(lit("1995-01-01"), lit("1996-12-31")))?;
    let lp = join(&t.get("lineitem")?, &parts, &["l_partkey"], &["p_partkey"])?;
    let lps = join(&lp, &t.get("supplier")?, &["l_suppkey"], &["s_suppkey"])?;
    let lpso = join(&lps, &orders, &["l_orderkey"], &["o_orderkey"])?;
    let lpsoc = join(&lpso, &t.get("customer")?, &["o_custkey"], &["c_custkey"])?;
    let in_america = join(&lpsoc, &america, &["c_nationkey"], &["n1_nationkey"])?;
    join(
        &in_america,
        &nation_as(t, "n2")?,
        &["s_nationkey"],
        &["n2_nationkey"],
    )?
    .with_column("o_year", col("o_orderdate").year())?
    .groupby(&["o_year"])?
    .agg_exprs(&[
        (
            when(col("n2_name").eq(lit("BRAZIL")))
                .then(revenue())
                .otherwise(lit(0.0)),
            AggFunc::Sum,
            "brazil",
        ),
        (revenue(), AggFunc::Sum, "total"),
    ])?
    .with_column("mkt_share", col("brazil") / col("total"))?
    .select(&["o_year", "mkt_share"])?
    .sort_values(&["o_year"], &[true])?
    .done()
}

fn q9(t: &Tables) -> Result<DataFrame> {
    let parts = t.get("part")?.filter(col("p_name").like("%green%"))?;
    // The green parts narrow the offers (to about 1 in 17) before the line items meet
    // them on both keys: the line items then probe a table of 4.7 million offers at
    // scale 100 and the part join comes with it, where joining the parts first left 35
    // million line items to join with all 80 million offers.
    let offers = join(&t.get("partsupp")?, &parts, &["ps_partkey"], &["p_partkey"])?;
    let lo = join(
        &t.get("lineitem")?,
        &offers,
        &["l_suppkey", "l_partkey"],
        &["ps_suppkey", "ps_partkey"],
    )?;
    let los = join(&lo, &t.get("supplier")?, &["l_suppkey"], &["s_suppkey"])?;
    let loso = join(&los, &t.get("orders")?, &["l_orderkey"], &["o_orderkey"])?;
    join(&loso, &t.get("nation")?, &["s_nationkey"], &["n_nationkey"])?
        .with_column("nation", col("n_name"))?
        .with_column("o_year", col("o_orderdate").year())?
        .groupby(&["nation", "o_year"])?
        .agg_exprs(&[(
            revenue() - col("ps_supplycost") * col("l_quantity"),
            AggFunc::Sum,
            "sum_profit",
        )])?
        .sort_values(&["nation", "o_year"], &[true, false])?
        .done()
}

fn q10(t: &Tables) -> Result<DataFrame> {
    let orders = t
        .get("orders")?
        .filter(during("o_orderdate", "1993-10-01", "1994-01-01"))?;
    let returned = t
        .get("lineitem")?
        .filter(col("l_returnflag").eq(lit("R")))?;
    // The revenue is summed per customer key before the customers' columns join it: the
    // other grouping columns are the customer's own, so the groups are the same, and
    // only the top 20 customers' names, addresses and comments are joined — not those
    // of every returned line (11 million at scale 100) to be grouped on as strings.
    let lines = join(&returned, &orders, &["l_orderkey"], &["o_orderkey"])?;
    let top = lines
        .groupby(&["o_custkey"])?
        .agg_exprs(&[(revenue(), AggFunc::Sum, "revenue")])?
        .sort_values(&["revenue"], &[false])?
        .limit(20);
    let customers = join(&top, &t.get("customer")?, &["o_custkey"], &["c_custkey"])?;
    join(
        &customers,
        &t.get("nation")?,
        &["c_nationkey"],
        &["n_nationkey"],
    )?
    .select(&[
        "c_custkey",
        "c_name",
        "revenue",
        "c_acctbal",
        "n_name",
        "c_address",
        "c_phone",
        "c_comment",
    ])?
    .sort_values(&["revenue"], &[false])?
    .done()
}

fn q11(t: &Tables, sf: f64) -> Result<DataFrame> {
    let germany = t.get("nation")?.filter(col("n_name").eq(lit("GERMANY")))?;
    let stock = offers_of(t, &germany)?
        .select_exprs(vec![
            ("ps_partkey".to_string(), col("ps_partkey")),
            (
                "value".to_string(),
                col("ps_supplycost") * col("ps_availqty"),
            ),
        ])?
        .persist()?;
    let threshold = scalar(
        &stock.agg_exprs(&[(col("value"), AggFunc::Sum, "total")])?,
        "total",
    )? * (0.0001 / sf);
    stock
        .groupby(&["ps_partkey"])?
        .agg_exprs(&[(col("value"), AggFunc::Sum, "value")])?
        .filter(col("value").gt(lit(threshold)))?
        .sort_values(&["value"], &[false])?
        .done()
}

fn q12(t: &Tables) -> Result<DataFrame> {
    let lines = t.get("lineitem")?.filter(
        col("l_shipmode")
            .is_in(["MAIL", "SHIP"])
            .and(col("l_commitdate").lt(col("l_receiptdate")))
            .and(col("l_shipdate").lt(col("l_commitdate")))
            .and(col("l_receiptdate").gt_eq(lit("1994-01-01")))
            .and(col("l_receiptdate").lt(lit("1995-01-01"))),
    )?;
    let high = || col("o_orderpriority").is_in(["1-URGENT", "2-HIGH"]);
    join(&t.get("orders")?, &lines, &["o_orderkey"], &["l_orderkey"])?
        .groupby(&["l_shipmode"])?
        .agg_exprs(&[
            (
                when(high()).then(lit(1i64)).otherwise(lit(0i64)),
                AggFunc::Sum,
                "high_line_count",
            ),
            (
                when(high()).then(lit(0i64)).otherwise(lit(1i64)),
                AggFunc::Sum,
                "low_line_count",
            ),
        ])?
        .sort_values(&["l_shipmode"], &[true])?
        .done()
}

fn q13(t: &Tables) -> Result<DataFrame> {
    let orders = t
        .get("orders")?
        .filter(!col("o_comment").like("%special%requests%"))?;
    t.get("customer")?
        .merge_on(
            &orders,
            &["c_custkey"],
            &["o_custkey"],
            JoinType::Left,
            JoinStrategy::Auto,
        )?
        .groupby(&["c_custkey"])?
        .agg_exprs(&[(col("o_orderkey"), AggFunc::Count, "c_count")])?
        .groupby(&["c_count"])?
        .agg_exprs(&[(col("c_custkey"), AggFunc::Count, "custdist")])?
        .sort_values(&["custdist", "c_count"], &[false, false])?
        .done()
}

fn q14(t: &Tables) -> Result<DataFrame> {
    let lines = t
        .get("lineitem")?
        .filter(during("l_shipdate", "1995-09-01", "1995-10-01"))?;
    join(&lines, &t.get("part")?, &["l_partkey"], &["p_partkey"])?
        .agg_exprs(&[
            (
                when(col("p_type").like("PROMO%"))
                    .then(revenue())
                    .otherwise(lit(0.0)),
                AggFunc::Sum,
                "promo",
            ),
            (revenue(), AggFunc::Sum, "total"),
        ])?
        .select_exprs(vec![(
            "promo_revenue".to_string(),
            lit(100.0) * col("promo") / col("total"),
        )])?
        .done()
}

fn q15(t: &Tables) -> Result<DataFrame> {
    let revenue0 = t
        .get("lineitem")?
        .filter(during("l_shipdate", "1996-01-01", "1996-04-01"))?
        .groupby(&["l_suppkey"])?
        .agg_exprs(&[(revenue(), AggFunc::Sum, "total_revenue")])?
        .persist()?;
    let top = scalar(
        &revenue0.agg_exprs(&[(col("total_revenue"), AggFunc::Max, "top")])?,
        "top",
    )?;
    join(
        &t.get("supplier")?,
        &revenue0,
        &["s_suppkey"],
        &["l_suppkey"],
    )?
    .filter(col("total_revenue").eq(lit(top)))?
    .select(&[
        "s_suppkey",
        "s_name",
        "s_address",
        "s_phone",
        "total_revenue",
    ])?
    .sort_values(&["s_suppkey"], &[true])?
    .done()
}

fn q16(t: &Tables) -> Result<DataFrame> {
    let parts = t.get("part")?.filter(
        col("p_brand")
            .not_eq(lit("Brand#45"))
            .and(!col("p_type").like("MEDIUM POLISHED%"))
            .and(col("p_size").is_in([49i64, 14, 23, 45, 19, 3, 36, 9])),
    )?;
    let complaints = t
        .get("supplier")?
        .filter(col("s_comment").like("%Customer%Complaints%"))?;
    join(&t.get("partsupp")?, &parts, &["ps_partkey"], &["p_partkey"])?
        .anti_join(&complaints, &["ps_suppkey"], &["s_suppkey"])?
        .groupby(&["p_brand", "p_type", "p_size"])?
        .agg_exprs(&[(col("ps_suppkey"), AggFunc::NUnique, "supplier_cnt")])?
        .sort_values(
            &["supplier_cnt", "p_brand", "p_type", "p_size"],
            &[false, true, true, true],
        )?
        .done()
}

fn q17(t: &Tables) -> Result<DataFrame> {
    let parts = t.get("part")?.filter(
        col("p_brand")
            .eq(lit("Brand#23"))
            .and(col("p_container").eq(lit("MED BOX"))),
    )?;
    let lines = join(&t.get("lineitem")?, &parts, &["l_partkey"], &["p_partkey"])?
        .select(&["l_partkey", "l_quantity", "l_extendedprice"])?
        .persist()?;
    let average = lines
        .groupby(&["l_partkey"])?
        .agg_exprs(&[(col("l_quantity"), AggFunc::Mean, "avg_quantity")])?
        .rename(&[("l_partkey", "avg_partkey")])?;
    join(&lines, &average, &["l_partkey"], &["avg_partkey"])?
        .filter(col("l_quantity").lt(lit(0.2) * col("avg_quantity")))?
        .agg_exprs(&[
            (col("l_extendedprice"), AggFunc::Sum, "total"),
            (col("l_extendedprice"), AggFunc::Count, "n"),
        ])?
        // SQL's sum of no rows is NULL (a frame's sum of nothing is 0, as in pandas and
        // Polars): small scale factors select no line.
        .select_exprs(vec![(
            "avg_yearly".to_string(),
            when(col("n").eq(lit(0i64)))
                .then(Expr::Literal(Literal::Null))
                .otherwise(col("total") / lit(7.0)),
        )])?
        .done()
}

fn q18(t: &Tables) -> Result<DataFrame> {
    let lines = t.get("lineitem")?;
    let large = lines
        .groupby(&["l_orderkey"])?
        .agg_exprs(&[(col("l_quantity"), AggFunc::Sum, "quantity")])?
        .filter(col("quantity").gt(lit(300.0)))?;
    let orders = t
        .get("orders")?
        .semi_join(&large, &["o_orderkey"], &["l_orderkey"])?;
    let co = join(&t.get("customer")?, &orders, &["c_custkey"], &["o_custkey"])?;
    join(&co, &lines, &["o_orderkey"], &["l_orderkey"])?
        .groupby(&[
            "c_name",
            "c_custkey",
            "o_orderkey",
            "o_orderdate",
            "o_totalprice",
        ])?
        .agg_exprs(&[(col("l_quantity"), AggFunc::Sum, "sum(l_quantity)")])?
        .sort_values(&["o_totalprice", "o_orderdate"], &[false, true])?
        .limit(100)
        .done()
}

fn q19(t: &Tables) -> Result<DataFrame> {
    let arm = |brand: &str, containers: [&str; 4], qty: f64, size: i64| {
        col("p_brand")
            .eq(lit(brand))
            .and(col("p_container").is_in(containers))
            .and(col("l_quantity").between(lit(qty), lit(qty + 10.0)))
            .and(col("p_size").between(lit(1i64), lit(size)))
            .and(col("l_shipmode").is_in(["AIR", "AIR REG"]))
            .and(col("l_shipinstruct").eq(lit("DELIVER IN PERSON")))
    };
    join(
        &t.get("lineitem")?,
        &t.get("part")?,
        &["l_partkey"],
        &["p_partkey"],
    )?
    .filter(
        arm(
            "Brand#12",
            ["SM CASE", "SM BOX", "SM PACK", "SM PKG"],
            1.0,
            5,
        )
        .or(arm(
            "Brand#23",
            ["MED BAG", "MED BOX", "MED PKG", "MED PACK"],
            10.0,
            10,
        ))
        .or(arm(
            "Brand#34",
            ["LG CASE", "LG BOX", "LG PACK", "LG PKG"],
            20.0,
            15,
        )),
    )?
    .agg_exprs(&[(revenue(), AggFunc::Sum, "revenue")])?
    .done()
}

fn q20(t: &Tables) -> Result<DataFrame> {
    let forest = t.get("part")?.filter(col("p_name").like("forest%"))?;
    let offers = t
        .get("partsupp")?
        .semi_join(&forest, &["ps_partkey"], &["p_partkey"])?
        .persist()?;
    // The subquery is correlated on the offer's part and supplier: only the lines of
    // those pairs are summed.
    let shipped = t
        .get("lineitem")?
        .filter(during("l_shipdate", "1994-01-01", "1995-01-01"))?
        .semi_join(
            &offers,
            &["l_partkey", "l_suppkey"],
            &["ps_partkey", "ps_suppkey"],
        )?
        .groupby(&["l_partkey", "l_suppkey"])?
        .agg_exprs(&[(col("l_quantity"), AggFunc::Sum, "shipped")])?;
    let excess = join(
        &offers,
        &shipped,
        &["ps_partkey", "ps_suppkey"],
        &["l_partkey", "l_suppkey"],
    )?
    .filter(col("ps_availqty").gt(lit(0.5) * col("shipped")))?;
    let canada = t.get("nation")?.filter(col("n_name").eq(lit("CANADA")))?;
    join(
        &t.get("supplier")?,
        &canada,
        &["s_nationkey"],
        &["n_nationkey"],
    )?
    .semi_join(&excess, &["s_suppkey"], &["ps_suppkey"])?
    .select(&["s_name", "s_address"])?
    .sort_values(&["s_name"], &[true])?
    .done()
}

fn q21(t: &Tables) -> Result<DataFrame> {
    let lines = t.get("lineitem")?;
    // Read twice rather than persisted: 380 million late lines at scale 100 (6 GB) would
    // be written to the spill directory and read back, where the scan reads 4 columns.
    let late = lines
        .filter(col("l_receiptdate").gt(col("l_commitdate")))?
        .select(&["l_orderkey", "l_suppkey"])?;
    let saudi = t
        .get("nation")?
        .filter(col("n_name").eq(lit("SAUDI ARABIA")))?;
    let sn = join(
        &t.get("supplier")?,
        &saudi,
        &["s_nationkey"],
        &["n_nationkey"],
    )?;
    let failed = t.get("orders")?.filter(col("o_orderstatus").eq(lit("F")))?;
    let l1 = join(&late, &sn, &["l_suppkey"], &["s_suppkey"])?;
    let l1 = join(&l1, &failed, &["l_orderkey"], &["o_orderkey"])?
        .select(&["l_orderkey", "s_name"])?
        .persist()?;
    // EXISTS another supplier on the order, NOT EXISTS another late one: the order has
    // at least two suppliers, and its late lines all come from this one. Both subqueries
    // are correlated on the order, so only the lines of l1's orders are grouped.
    let suppliers = lines
        .semi_join(&l1, &["l_orderkey"], &["l_orderkey"])?
        .groupby(&["l_orderkey"])?
        .agg_exprs(&[(col("l_suppkey"), AggFunc::NUnique, "n_supp")])?
        .rename(&[("l_orderkey", "ns_orderkey")])?;
    let late_suppliers = late
        .semi_join(&l1, &["l_orderkey"], &["l_orderkey"])?
        .groupby(&["l_orderkey"])?
        .agg_exprs(&[(col("l_suppkey"), AggFunc::NUnique, "n_late")])?
        .rename(&[("l_orderkey", "nl_orderkey")])?;
    let l1 = join(&l1, &suppliers, &["l_orderkey"], &["ns_orderkey"])?;
    join(&l1, &late_suppliers, &["l_orderkey"], &["nl_orderkey"])?
        .filter(col("n_supp").gt(lit(1i64)).and(col("n_late").eq(lit(1i64))))?
        .groupby(&["s_name"])?
        .agg_exprs(&[(col("l_orderkey"), AggFunc::Count, "numwait")])?
        .sort_values(&["numwait", "s_name"], &[false, true])?
        .limit(100)
        .done()
}

fn q22(t: &Tables) -> Result<DataFrame> {
    let codes = ["13", "31", "23", "29", "30", "18", "17"];
    let customers = t
        .get("customer")?
        .with_column("cntrycode", col("c_phone").substring(0, Some(2)))?
        .filter(col("cntrycode").is_in(codes))?
        .select(&["c_custkey", "c_acctbal", "cntrycode"])?
        .persist()?;
    let average = scalar(
        &customers
            .filter(col("c_acctbal").gt(lit(0.0)))?
            .agg_exprs(&[(col("c_acctbal"), AggFunc::Mean, "average")])?,
        "average",
    )?;
    customers
        .filter(col("c_acctbal").gt(lit(average)))?
        .anti_join(&t.get("orders")?, &["c_custkey"], &["o_custkey"])?
        .groupby(&["cntrycode"])?
        .agg_exprs(&[
            (col("c_custkey"), AggFunc::Count, "numcust"),
            (col("c_acctbal"), AggFunc::Sum, "totacctbal"),
        ])?
        .sort_values(&["cntrycode"], &[true])?
        .done()
}

/// A query's final frame, as `Ok`: each query ends in `.done()`, so that `plan` hands back
/// the lazy frame (explained with `--explain`) and `run` computes it.
trait Done {
    fn done(self) -> Result<DataFrame>;
}

impl Done for DataFrame {
    fn done(self) -> Result<DataFrame> {
        Ok(self)
    }
}

/// Query `q`'s answer; with `explain`, its plan on stderr first (which steps the backend
/// runs another way, for a backend with fallbacks).
fn run(t: &Tables, q: usize, sf: f64, explain: bool) -> Result<Computed> {
    let frame = plan(t, q, sf)?;
    if explain {
        eprintln!("q{q}: {}", frame.explain()?);
    }
    frame.compute()
}

/// Query `q` as a lazy frame (Q11, Q15 and Q22 compute their scalar first, as a user's
/// program does).
fn plan(t: &Tables, q: usize, sf: f64) -> Result<DataFrame> {
    match q {
        1 => q1(t),
        2 => q2(t),
        3 => q3(t),
        4 => q4(t),
        5 => q5(t),
        6 => q6(t),
        7 => q7(t),
        8 => q8(t),
        9 => q9(t),
        10 => q10(t),
        11 => q11(t, sf),
        12 => q12(t),
        13 => q13(t),
        14 => q14(t),
        15 => q15(t),
        16 => q16(t),
        17 => q17(t),
        18 => q18(t),
        19 => q19(t),
        20 => q20(t),
        21 => q21(t),
        22 => q22(t),
        _ => Err(tessera::Error::invalid(
            "tpch",
            format!("query {q}: TPC-H has queries 1 to 22"),
        )),
    }
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `YYYY-MM-DD` of days since 1970-01-01 (the proleptic Gregorian calendar).
fn iso_date(days: i32) -> String {
    // Howard Hinnant's civil_from_days.
    let z = i64::from(days) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn json_value(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) if f.is_finite() => format!("{f:?}"),
        Value::Float(_) => "null".to_string(),
        Value::Str(s) => json_str(s),
        Value::Date(d) => json_str(&iso_date(*d)),
        Value::TimestampMicros(us) => us.to_string(),
        // The exact digits, a JSON number.
        Value::Decimal { .. } => v.to_string(),
    }
}

/// The answer as JSON lines, one object per row, keyed by column name.
fn write_answer(path: &Path, c: &Computed) -> Result<()> {
    let io =
        |e: std::io::Error| tessera::Error::invalid("tpch", format!("{}: {e}", path.display()));
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    let names: Vec<String> = c.schema.fields().iter().map(|f| f.name().clone()).collect();
    for row in 0..c.num_rows() {
        let fields = names
            .iter()
            .map(|n| Ok(format!("{}:{}", json_str(n), json_value(&c.value(n, row)?))))
            .collect::<Result<Vec<_>>>()?;
        writeln!(f, "{{{}}}", fields.join(",")).map_err(io)?;
    }
    f.flush().map_err(io)
}

fn main() -> std::process::ExitCode {
    let mut data = None;
    let mut out: Option<PathBuf> = None;
    let mut sf = 1.0;
    let mut repeat = 1;
    let mut explain = false;
    let mut queries: Vec<usize> = (1..=22).collect();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--explain" {
            explain = true;
            continue;
        }
        let value = args.next();
        match (a.as_str(), value) {
            ("--data", Some(v)) => data = Some(PathBuf::from(v)),
            ("--out", Some(v)) => out = Some(PathBuf::from(v)),
            ("--sf", Some(v)) => sf = v.parse().unwrap_or(sf),
            ("--repeat", Some(v)) => repeat = v.parse().unwrap_or(repeat),
            ("--queries", Some(v)) => {
                queries = v.split(',').filter_map(|q| q.trim().parse().ok()).collect()
            }
            (flag, _) => {
                eprintln!("error: unknown or incomplete argument {flag}\nusage: tpch --data DIR [--sf F] [--queries 1,2] [--repeat N] [--out DIR] [--explain]");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    let Some(dir) = data else {
        eprintln!("error: --data DIR is required (bench/tpch/generate.sh writes the tables)");
        return std::process::ExitCode::FAILURE;
    };
    if let Some(o) = &out
        && let Err(e) = std::fs::create_dir_all(o)
    {
        eprintln!("error: {}: {e}", o.display());
        return std::process::ExitCode::FAILURE;
    }
    let tables = Tables { dir };
    let mut failed = false;
    for q in queries {
        let mut best = f64::INFINITY;
        let mut answer = None;
        for rep in 0..repeat.max(1) {
            let t = Instant::now();
            match run(&tables, q, sf, explain && rep == 0) {
                Ok(c) => {
                    best = best.min(t.elapsed().as_secs_f64());
                    answer = Some(c);
                }
                Err(e) => {
                    eprintln!("error: q{q}: {e}");
                    failed = true;
                    break;
                }
            }
        }
        let Some(c) = answer else { continue };
        if let Some(o) = &out
            && let Err(e) = write_answer(&o.join(format!("q{q:02}.jsonl")), &c)
        {
            eprintln!("error: q{q}: {e}");
            failed = true;
        }
        println!(
            "{{\"engine\":\"tessera\",\"query\":{q},\"sf\":{sf},\"seconds\":{best:.4},\"rows\":{},\"peak_rss_mb\":{:.0}}}",
            c.num_rows(),
            common::peak_rss_mb()
        );
    }
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
