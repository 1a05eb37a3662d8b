"""Parquet interop check run by tests/frame_io.rs: reads the file tessera wrote and checks
its contents, then writes one with pyarrow (Snappy, two row groups) for tessera to read.

usage: parquet_interop.py TESSERA_FILE PYARROW_FILE
(also writes the hive-partitioned dataset PYARROW_FILE + "_hive")
"""
import sys

import pyarrow as pa
import pyarrow.parquet as pq

ours, theirs = sys.argv[1], sys.argv[2]
t = pq.read_table(ours)
assert t.num_rows == 1000, t.num_rows
assert t.column_names == ["id", "x", "s", "b", "t"], t.column_names
assert t.column("id").to_pylist() == list(range(1000))
x = t.column("x").to_pylist()
assert x[0] is None and x[1] == 1 / 8 - 3.3, x[:2]
s = t.column("s").to_pylist()
assert s[:4] == ["plain", "with, comma", 'say "hi"', None], s[:4]
assert t.column("b").to_pylist()[:3] == [True, False, False]
assert str(t.schema.field("t").type) == "timestamp[us]", t.schema.field("t").type
assert pq.ParquetFile(ours).metadata.num_row_groups == 4

ids = list(range(100))
table = pa.table({"id": ids, "name": [f"n{i}" for i in ids], "value": [i * 0.5 for i in ids]})
pq.write_table(table, theirs, row_group_size=50, compression="snappy")

# A hive-partitioned dataset beside it: THEIRS + "_hive/year=.../city=.../*.parquet".
cities = ["New York", "Paris", None, "Tokyo"]
hive = pa.table({
    "id": ids,
    "value": [i * 0.5 for i in ids],
    "year": [2020 + i % 3 for i in ids],
    "city": [cities[i % 4] for i in ids],
})
pq.write_to_dataset(hive, theirs + "_hive", partition_cols=["year", "city"])
print("ok")
