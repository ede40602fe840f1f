#!/usr/bin/env bash
# Runs every Go fuzz target for N seconds each (default 5), one at a time,
# each package's targets from one instrumented test binary built once
# (`go test -c -fuzz`: a `go test -fuzz` per target relinks the package's
# binary every time). Stops at the first target that fails; the failing
# input is then in that package's testdata/fuzz/<Target>/ (a regression
# test until it is fixed or removed). The generated corpus is kept where
# `go test -fuzz` keeps it ($GOCACHE/fuzz/<import path>/<Target>), so
# runs go on from each other.
#
#   scripts/fuzz.sh [seconds]
#   scripts/fuzz.sh check     # only check that the list below is whole
#
# CI runs `check`: the seed corpora run as tests in `go test ./...`, and
# fuzzing itself is a developer's step before landing a change to a
# parser (README, "Proof").
#
# FUZZ_KEEP_GOING=1 runs every target even after a failure and lists the
# failed ones at the end (still exiting 1).
# FUZZ_MINIMIZE (default 1s) bounds how long a new input is minimized;
# Go's default of 60s makes short runs spend their time minimizing and
# report 0 execs/sec (golang/go#51484).
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-5}"
case "$secs" in
check) ;;
'' | *[!0-9]*)
  echo "usage: $0 [seconds per target | check]" >&2
  exit 2
  ;;
esac
minimize="${FUZZ_MINIMIZE:-1s}"

# package target: every fuzz target in the repository, listed explicitly.
targets=(
  "./internal/recent FuzzAppendJSON"
  "./internal/h1server FuzzParse"
  "./internal/h1server FuzzRequestURI"
  "./internal/proxy FuzzParseFields"
  "./internal/proxy FuzzHandler"
  "./internal/messages FuzzDecode"
  "./internal/messages/chat FuzzDecodeTranslate"
  "./internal/messages/chat FuzzAnswerEvents"
  "./internal/messages/chat FuzzTranslateForm"
  "./internal/messages/api FuzzMessages"
  "./internal/gemini/api FuzzDecode"
  "./internal/responses FuzzDecode"
  "./internal/responses/api FuzzDecodeMessage"
  "./internal/jsoncheck FuzzCheck"
  "./internal/jsonscan FuzzScan"
  "./internal/affinity FuzzOpening"
  "./internal/tracing FuzzSpans"
  "./internal/h1 FuzzAnswer"
  "./internal/h1 FuzzReadAnswer"
  "./internal/h1 FuzzChunked"
  "./internal/openaiwire FuzzChunkEncoding"
  "./internal/sse FuzzReader"
  "./internal/relay FuzzRescueSplice"
  "./internal/provider FuzzRetryAfter"
  "./internal/provider FuzzParseCount"
  "./internal/provider FuzzAppendBodyCapped"
  "./internal/provider/openai FuzzClassifyError"
  "./internal/provider/openai FuzzParseRateLimit"
  "./internal/provider/openai FuzzStream"
  "./internal/provider/openai FuzzEventStream"
  "./internal/provider/anthropic FuzzClassifyError"
  "./internal/provider/anthropic FuzzParseRateLimit"
  "./internal/provider/anthropic FuzzStream"
  "./internal/provider/anthropic FuzzConvertMessage"
  "./internal/provider/gemini FuzzClassifyError"
  "./internal/provider/gemini FuzzStream"
  "./internal/provider/gemini FuzzTranslateCompletion"
  "./internal/provider/gemini FuzzReadsAsGjson"
  "./internal/provider/vertex FuzzClassifyError"
  "./internal/provider/bedrock FuzzClassifyError"
  "./internal/provider/bedrock FuzzStream"
  "./internal/responses/chat FuzzTurn"
  "./internal/responses/chat FuzzEvents"
  "./internal/responses/native FuzzPrepare"
  "./internal/responses/native FuzzProviderAnswer"
)

# A target added to a package but not to the list above is an error, so
# the list stays whole.
listed=$(printf '%s\n' "${targets[@]}" | sort)
found=$(grep -rE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . |
  sed -E 's#^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*).*#./\1 \2#' | sort)
if [ "$listed" != "$found" ]; then
  echo "fuzz targets in the code differ from the list in $0:" >&2
  diff <(echo "$listed") <(echo "$found") >&2 || true
  exit 1
fi

if [ "$secs" = check ]; then
  echo "== the ${#targets[@]} fuzz targets are all listed"
  exit 0
fi

bins=$(mktemp -d)
trap 'rm -rf "$bins"' EXIT
fuzzcache="$(go env GOCACHE)/fuzz"

# build_package builds pkg's fuzz-instrumented test binary once, and
# notes its import path beside it (the fuzz cache's directory); it prints
# the binary's path.
build_package() {
  local pkg=$1 bin
  bin="$bins/$(echo "$pkg" | tr '/.' '__').test"
  if [ ! -x "$bin" ]; then
    go test -c -fuzz=. -o "$bin" "$pkg" >&2
    go list "$pkg" >"$bin.importpath"
  fi
  echo "$bin"
}

# run_target fuzzes one target, in its package's directory (where a
# failing input is written). Go's coordinator sometimes fails a run
# with "context deadline exceeded" at the end of -fuzztime when a worker is
# slow to stop, without any failing input; such a run is tried again, up to
# three times in all (on a loaded 2-core CI machine three of 45 targets
# timed out so in one run, each passing on its second try).
# A real failure writes its input to testdata/fuzz and is never retried.
run_target() {
  local pkg=$1 name=$2 out bin importpath
  bin=$(build_package "$pkg")
  importpath=$(<"$bin.importpath")
  for try in 1 2 3; do
    if out=$(cd "$pkg" && "$bin" -test.run XXX -test.fuzz "^${name}\$" -test.fuzztime "${secs}s" \
      -test.fuzzminimizetime "$minimize" -test.fuzzcachedir "$fuzzcache/$importpath" -test.timeout 10m 2>&1); then
      printf '%s\n' "$out" | tail -n 2
      return 0
    fi
    printf '%s\n' "$out" | grep -v '^fuzz: elapsed' || true
    if [ "$try" -lt 3 ] && grep -q 'context deadline exceeded' <<<"$out" &&
      ! grep -q 'Failing input written to' <<<"$out"; then
      echo "== $name: the fuzz coordinator timed out without a failing input; trying again"
      continue
    fi
    return 1
  done
  return 1
}

failed=()
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  echo "== $name ($pkg, ${secs}s)"
  if ! run_target "$pkg" "$name"; then
    [ "${FUZZ_KEEP_GOING:-}" = 1 ] || exit 1
    failed+=("$name ($pkg)")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  printf '== failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "== all ${#targets[@]} fuzz targets passed (${secs}s each)"
