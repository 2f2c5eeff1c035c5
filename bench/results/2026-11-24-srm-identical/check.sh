cd target/srmcheck   # run from the repository root; needs target/emsort-before (commit 6d299d7) and in.rec
for m in 15M 24M; do for meth in dsm srm; do for who in before after; do
  exe=../release/emsort; [ $who = before ] && exe=../emsort-before
  nice -n 10 $exe sort -q -f rec:104:0:8 -S $m --block-size 256K --method $meth --disks d0,d1,d2,d3,d4,d5 --stats $who-$meth-$m.json in.rec -o out-$who.rec || echo FAIL $who $meth $m
done
python3 - "$meth" "$m" <<'PY'
import json,sys
meth,m=sys.argv[1],sys.argv[2]
a=json.load(open(f"before-{meth}-{m}.json")); b=json.load(open(f"after-{meth}-{m}.json"))
skip={"merge_seconds","merge_rate"}
pa={k:v for k,v in a["parallel_disks"].items() if k not in skip}; pb={k:v for k,v in b["parallel_disks"].items() if k not in skip}
same=pa==pb and all(a[k]==b[k] for k in ["runs","passes","merge_levels","merges","merge_order","input_bytes","output_bytes"]) and a["run_formation"]["bytes_written"]==b["run_formation"]["bytes_written"] and a["merge"]["bytes_read"]==b["merge"]["bytes_read"] and a["merge"]["bytes_written"]==b["merge"]["bytes_written"]
print(meth,m,"identical" if same else "DIFFER", "U=%s R=%s reads=%s nu=%s flushes=%s fc_mem=%s"%(pb["runs"],pb["merge_orders"],pb["parallel_reads"],[round(x,4) for x in pb["nu"]],pb["flushes"],pb["forecast_in_memory"]))
if not same:
  for k in pa:
    if pa[k]!=pb[k]: print("  ",k,pa[k],pb[k])
  for k in ["runs","passes","merge_levels","merges","merge_order","input_bytes","output_bytes"]:
    if a[k]!=b[k]: print("  ",k,a[k],b[k])
  print("  rf",a["run_formation"],b["run_formation"]); print("  merge",a["merge"],b["merge"])
PY
cmp out-before.rec out-after.rec >/dev/null && echo "  outputs byte-identical" || echo "  outputs differ (equal keys may order differently)"
done; done
