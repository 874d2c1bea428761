#!/usr/bin/env bash
# The sweeps behind the papers' curves: ACCO Fig. 3 (8 to 64 A100) and speedup vs bandwidth.
set -euo pipefail
cd "$(dirname "$0")/.."
build/overlapsim sweep scenarios/acco-fig3-llama2-7b.yaml --vary cluster.nodes=1,2,3,4,5,6,7,8 \
  --out out/acco-fig3-sweep "$@"
build/overlapsim sweep scenarios/bandwidth-sweep.yaml \
  --vary cluster.inter_node.bandwidth=10Mb/s,100Mb/s,1Gb/s,10Gb/s,100Gb/s "$@"
