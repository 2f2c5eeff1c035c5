"""Polars as a peer of `emsort bench sort`'s keys experiment.

    POLARS_MAX_THREADS=T python3 polars_sort.py INPUT OUTPUT QUERY

sorts INPUT into OUTPUT with Polars' streaming engine (a lazy scan, a
sort, a sink: the query runs in batches rather than loading the input
first). Polars has no memory limit to set: the harness records the
process's peak RSS instead. QUERY names the sort:

    amount:n   pl.scan_csv(INPUT).sort("amount").sink_csv(OUTPUT)
               (emsort sort --csv --header -k amount:n)
    name       pl.scan_csv(INPUT).sort("name").sink_csv(OUTPUT)
               (emsort sort --csv --header -k name)
    .ts:n      pl.scan_ndjson(INPUT).sort(ts as a number).sink_ndjson(OUTPUT)
               (emsort sort --jsonl -k .ts:n)
    .amount:n  pl.scan_ndjson(INPUT).sort(amount as a number).sink_ndjson(OUTPUT)
               (emsort sort --jsonl -k .amount:n)

The CSV export (`emsort gen --format csv-export`) has a header and
quoted fields with commas, doubled quotes and newlines; its `amount` is
read as a float. In the JSON lines (`emsort gen --format jsonl`) a few
`ts` are strings and a few `amount` are null or in exponent form, so
both are read as strings and sorted as numbers cast from them (nulls
last). Polars breaks ties and formats its output its own way, so the
harness checks only the records of its output. On success prints one
line

    polars_sort: seconds=QUERY_SECONDS version=VERSION

and exits 0; on failure prints the error on standard error and exits 1.
"""

import sys
import time


def main(argv):
    if len(argv) != 4:
        sys.stderr.write("usage: polars_sort.py INPUT OUTPUT QUERY\n")
        return 2
    inp, out, query = argv[1:]
    try:
        import polars as pl
    except ImportError as e:
        sys.stderr.write(f"cannot import polars: {e}\n")
        return 1

    def export():
        return pl.scan_csv(inp, has_header=True, schema_overrides={"amount": pl.Float64})

    def events():
        schema = {"ts": pl.String, "amount": pl.String}
        return pl.scan_ndjson(inp, schema_overrides=schema, infer_schema_length=10000)

    def number(column):
        return pl.col(column).cast(pl.Float64, strict=False)

    queries = {
        "amount:n": lambda: export().sort("amount").sink_csv(out),
        "name": lambda: export().sort("name").sink_csv(out),
        ".ts:n": lambda: events().sort(number("ts"), nulls_last=True).sink_ndjson(out),
        ".amount:n": lambda: events().sort(number("amount"), nulls_last=True).sink_ndjson(out),
    }
    if query not in queries:
        sys.stderr.write(f"unknown query '{query}' (expected {', '.join(queries)})\n")
        return 2
    try:
        t = time.perf_counter()
        queries[query]()
        seconds = time.perf_counter() - t
    except Exception as e:  # Polars' errors: out of memory, parsing, I/O
        sys.stderr.write(f"{type(e).__name__}: {e}\n")
        return 1
    print(f"polars_sort: seconds={seconds:.6f} version={pl.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
