#!/bin/sh
# ward's demo: a model-style pandas task under supervision, then what the
# record holds. Run from the repository root (make demo).
set -eu
WARD=${WARD:-build/ward}
echo "== ward run examples/median.py (default profile)"
$WARD run --summary --input examples/sales.csv examples/median.py
echo
echo "== what the audit database recorded for that run"
$WARD show last --summary
