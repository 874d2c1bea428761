#!/usr/bin/env bash
# Installs every Debian package overlapsim needs to build, test and plot. Idempotent: packages already
# present are skipped, and apt is not touched at all when nothing is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libsimgrid-dev                          # simulated time and networking
  libjemalloc-dev                         # allocator: SimGrid allocates per flow (36 s -> 21 s at 1024 GPUs)
  libtorch-dev libgloo-dev libopenblas0-pthread   # real runs (validate/); gloo headers for c10d
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
  libboost-dev libboost-graph-dev         # critical-path analysis
  zlib1g-dev                              # gzip'd traces (profiler imports, output.trace_gzip)
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-matplotlib              # plots
  clang-format                            # the format gate (scripts/check-format.sh, a ctest)
  iproute2                                # emulated links for validate (ip netns, tc)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
else
  echo "install-deps: all packages present"
fi
