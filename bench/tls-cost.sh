#!/usr/bin/env bash
# The throughput cost of mutual TLS: the benchmark on conf/ as it is (plaintext), then on a copy of
# conf/ with TLS switched on in every server and in the client (keystores from conf/tls/make-certs.sh),
# same workload, one after the other; prints both summary lines and the TLS/plaintext ratio.
# Usage: bench/tls-cost.sh [extra kv-benchmark options]   (default: 60 s warm-up, 30 s measured)
# Reports go to out/tls-cost/{plaintext,tls}/.
set -euo pipefail
cd "$(dirname "$0")/.."
jar=kv-benchmark/target/kv-benchmark.jar
[ -f "$jar" ] || mvn -q -B -DskipTests package
warmup=(--warmup 60)
for a in "$@"; do case "$a" in --warmup|--warmup=*) warmup=() ;; esac; done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
conf/tls/make-certs.sh -d "$work/tls" >/dev/null
mkdir -p "$work/conf"
for f in server-1 server-2 server-3 client; do
  # tls: is the last section of each file: replace it
  sed '/^tls:/,$d' "conf/$f.yaml" >"$work/conf/$f.yaml"
  name=$f; [ "$f" = client ] || name=node${f#server-}
  printf 'tls:\n  enabled: true\n  keystore: %s\n  keystorePassword: changeit\n  keystoreType: PKCS12\n' \
    "$work/tls/$name.p12" >>"$work/conf/$f.yaml"
done

declare -A rate
for mode in plaintext tls; do
  dir=out/tls-cost/$mode
  mkdir -p "$dir"
  confdir=conf; [ "$mode" = tls ] && confdir=$work/conf
  java -jar "$jar" --conf-dir "$confdir" --out "$dir" --client-id "$mode" "${warmup[@]}" "$@" \
    >"$dir/report.txt" 2>"$dir/progress.txt" || { echo "$mode: FAILED, see $dir/progress.txt"; exit 1; }
  total=$(grep -m1 -E '^total ' "$dir/report.txt")
  rate[$mode]=$(awk '{print $9}' <<<"$total")
  printf '%-10s ops/s %10s  p50 %s ms  p99 %s ms\n' "$mode" "${rate[$mode]}" "$(awk '{print $2}' <<<"$total")" \
    "$(awk '{print $4}' <<<"$total")"
done
awk -v a="${rate[tls]//,/}" -v b="${rate[plaintext]//,/}" 'BEGIN { printf "TLS / plaintext throughput: %.2f\n", a / b }'
