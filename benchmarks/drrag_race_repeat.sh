#!/usr/bin/env bash
# Issue 24 "done when": the DR-RAG bench command that crashed in 3 of 6 runs (a race in the disk
# embedding cache) run N times in a row, each on a FRESH copy of a base cache folder, so the
# QDC query texts DR-RAG embeds concurrently are new to the cache on every run.
#
#   bash benchmarks/drrag_race_repeat.sh BASE_CACHE_DIR WORK_DIR [N] [extra bench args...]
#
# BASE_CACHE_DIR holds the corpus/question vectors (e.g. a copy of a harness cache); it is
# only read. Prints one line per run and "OK k/N"; exits non-zero if any run failed.
set -u
base=${1:?base cache folder}; work=${2:?work folder}; n=${3:-10}; shift 3 || shift $#
py=${PYTHON:-python}
ok=0
for i in $(seq 1 "$n"); do
  run="$work/run-$i"; rm -rf "$run"; mkdir -p "$run"
  cp -a "$base" "$run/cache"
  start=$(date +%s)
  "$py" -m diverse_core.cli bench --datasets hotpotqa:paragraphs 2wiki_sampled:paragraphs \
      --methods cosine "drrag@mode=cfs@k1=2@fill=true" --k 4 \
      --cache-dir "$run/cache" --out "$run/out" --no-plots --no-progress "$@" >"$run/log" 2>&1
  rc=$?
  new=$(grep -o '[0-9]* new texts' "$run/log" | head -1)
  echo "run $i: exit $rc, $(( $(date +%s) - start )) s, ${new:-?}$(grep -c Traceback "$run/log" | sed 's/^0$//;s/^[1-9].*/, TRACEBACK/')"
  [ "$rc" -eq 0 ] && ok=$((ok + 1))
  rm -rf "$run/cache"
done
echo "OK $ok/$n"
[ "$ok" -eq "$n" ]
