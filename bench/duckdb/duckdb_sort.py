"""DuckDB as a peer of `emsort bench sort`'s keys experiment.

    python3 duckdb_sort.py INPUT OUTPUT MEMORY_BYTES THREADS TEMP_DIR QUERY

sorts INPUT into OUTPUT with DuckDB, as `COPY (SELECT ... FROM
read_csv(INPUT, ...) ORDER BY ...) TO OUTPUT`, after `SET memory_limit`
(MEMORY_BYTES, in KiB), `SET threads` and `SET temp_directory`. QUERY
names the sort. On the CSV lines `id,category,amount,date` of
`emsort gen --format csv` (written back with HEADER false):

    k3n      ORDER BY amount                        (sort -t, -k3,3n)
    k2-k3nr  ORDER BY category, amount DESC         (sort -t, -k2,2 -k3,3nr)
    u        SELECT DISTINCT line ORDER BY line     (sort -u)
    k1n-u    SELECT DISTINCT ON (id) ORDER BY id    (sort -t, -k1,1n -u)
    plain    SELECT line ORDER BY line              (sort)

On the CSV export of `emsort gen --format csv-export` (a header
`id,name,city,amount,date,note`, quoted fields with commas, doubled
quotes and newlines; read with header=true and six typed columns,
written back with HEADER true):

    amount:n ORDER BY amount                        (emsort sort --csv --header -k amount:n)
    name     ORDER BY name                          (emsort sort --csv --header -k name)

On the JSON lines of `emsort gen --format jsonl` (read with
read_json(format='newline_delimited'), `ts` and `amount` as VARCHAR
since a few are strings or in exponent form, written back as JSON lines):

    .ts:n     ORDER BY TRY_CAST(ts AS DOUBLE)       (emsort sort --jsonl -k .ts:n)
    .amount:n ORDER BY TRY_CAST(amount AS DOUBLE)   (emsort sort --jsonl -k .amount:n)

The typed CSV sorts read four typed columns (BIGINT, VARCHAR,
DECIMAL(18,2), DATE); the whole-line sorts read each line as one VARCHAR.
DuckDB breaks ties and formats its output its own way, so the harness
checks only the records of its output. On success prints one line

    duckdb_sort: seconds=QUERY_SECONDS rows=ROWS version=VERSION

and exits 0; on failure (an out-of-memory error, say) prints the error on
standard error and exits 1.
"""

import sys
import time


def main(argv):
    if len(argv) != 7:
        sys.stderr.write(
            "usage: duckdb_sort.py INPUT OUTPUT MEMORY_BYTES THREADS TEMP_DIR QUERY\n"
        )
        return 2
    inp, out, memory, threads, temp, query = argv[1:]
    try:
        import duckdb
    except ImportError as e:
        sys.stderr.write(f"cannot import duckdb: {e}\n")
        return 1

    def lit(s):
        return "'" + s.replace("'", "''") + "'"

    typed = (
        f"read_csv({lit(inp)}, header=false, delim=',', quote='', escape='', "
        "columns={'id': 'BIGINT', 'category': 'VARCHAR', "
        "'amount': 'DECIMAL(18,2)', 'date': 'DATE'})"
    )
    lines = (
        f"read_csv({lit(inp)}, header=false, delim='\\t', quote='', escape='', "
        "columns={'line': 'VARCHAR'})"
    )
    export = (
        f"read_csv({lit(inp)}, header=true, delim=',', quote='\"', escape='\"', "
        "columns={'id': 'BIGINT', 'name': 'VARCHAR', 'city': 'VARCHAR', "
        "'amount': 'DECIMAL(18,2)', 'date': 'DATE', 'note': 'VARCHAR'})"
    )
    events = (
        f"read_json({lit(inp)}, format='newline_delimited', "
        "columns={'ts': 'VARCHAR', 'event': 'VARCHAR', 'user': 'JSON', "
        "'amount': 'VARCHAR', 'tags': 'VARCHAR[]', 'ok': 'BOOLEAN'})"
    )
    selects = {
        "amount:n": f"SELECT * FROM {export} ORDER BY amount",
        "name": f"SELECT * FROM {export} ORDER BY name",
        ".ts:n": f"SELECT * FROM {events} ORDER BY TRY_CAST(ts AS DOUBLE)",
        ".amount:n": f"SELECT * FROM {events} ORDER BY TRY_CAST(amount AS DOUBLE)",
        "k3n": f"SELECT * FROM {typed} ORDER BY amount",
        "k2-k3nr": f"SELECT * FROM {typed} ORDER BY category, amount DESC",
        "u": f"SELECT DISTINCT line FROM {lines} ORDER BY line",
        "k1n-u": f"SELECT DISTINCT ON (id) * FROM {typed} ORDER BY id",
        "plain": f"SELECT line FROM {lines} ORDER BY line",
    }
    if query not in selects:
        sys.stderr.write(f"unknown query '{query}' (expected {', '.join(selects)})\n")
        return 2
    try:
        con = duckdb.connect()
        con.execute(f"SET memory_limit='{int(memory) // 1024}KiB'")
        con.execute(f"SET threads={int(threads)}")
        con.execute(f"SET temp_directory={lit(temp)}")
        t = time.perf_counter()
        # One VARCHAR column written with a tab delimiter needs no quotes:
        # the lines come out as they went in.
        if query in ("u", "plain"):
            options = "HEADER false, DELIMITER '\\t'"
        elif query in ("amount:n", "name"):
            options = "HEADER true"
        elif query.startswith("."):
            options = "FORMAT json"
        else:
            options = "HEADER false"
        rows = con.execute(f"COPY ({selects[query]}) TO {lit(out)} ({options})").fetchone()[0]
        seconds = time.perf_counter() - t
        con.close()
    except Exception as e:  # DuckDB's errors: out of memory, I/O, parsing
        sys.stderr.write(f"{type(e).__name__}: {e}\n")
        return 1
    print(f"duckdb_sort: seconds={seconds:.6f} rows={rows} version={duckdb.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
