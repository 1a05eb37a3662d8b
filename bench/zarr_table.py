"""The side-by-side table of bench/compare_zarr.sh and bench/compare_zarr_s3.sh, from the
JSON lines both engines printed (and, through S3, the server's CPU time per engine).

Usage: zarr_table.py FILE
"""

import json
import sys


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
    by = {}
    for r in rows:
        if "server_cpu_seconds" in r:
            print(f"while {r['during']} ran ({r['engine_wall_seconds']} s, every workload and repeat), "
                  f"the server used {r['server_cpu_seconds']} s of CPU")
        elif r["workload"] != "write":
            key = (r.get("malloc", "default"), r["workload"], r["codec"])
            by.setdefault(key, {})[r["engine"]] = r
    print(f"{'malloc':<8} {'workload':<12} {'codec':<6} {'tessera s':>10} {'dask s':>8} {'dask/tessera':>13} "
          f"{'tessera MiB':>12} {'dask MiB':>9} {'answers agree':>14}")
    for (m, w, c), e in sorted(by.items()):
        t, d = e.get("tessera"), e.get("dask")
        if not (t and d):
            continue
        agree = abs(t["answer"] - d["answer"]) <= 1e-9 * max(1.0, abs(d["answer"])) * 1e3
        print(f"{m:<8} {w:<12} {c:<6} {t['seconds']:>10.3f} {d['seconds']:>8.3f} {d['seconds'] / t['seconds']:>13.2f} "
              f"{t['peak_rss_bytes'] / 2**20:>12.0f} {d['peak_rss_bytes'] / 2**20:>9.0f} {str(agree):>14}")


if __name__ == "__main__":
    main()
