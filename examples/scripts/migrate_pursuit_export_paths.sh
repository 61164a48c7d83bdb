#!/bin/sh
# Copy the timing sidecars of Pursuit exports made before the flattened layout,
#   gridworlds/pursuit/{scenario}/algorithms/{algo}  ->  gridworlds/pursuit/{scenario}/{algo}
# once, to where the loader reads them (it never falls back to the old layout).
# Copies, never moves; a destination that already has sidecars keeps its stages and
# gains the ones it lacks; running it again changes nothing.
#
# Run from inside exports/:   ../scripts/migrate_pursuit_export_paths.sh [--dry-run]
# Uses the stagetimer on PATH, else $PYTHON -m stagetimer (PYTHON defaults to python3).
set -eu

FROM='gridworlds/pursuit/{scenario}/algorithms/{algo}'
TO='gridworlds/pursuit/{scenario}/{algo}'

if [ ! -d gridworlds/pursuit ]; then
    echo "$0: no gridworlds/pursuit here; run this from inside exports/" >&2
    exit 1
fi
if command -v stagetimer >/dev/null 2>&1; then
    exec stagetimer migrate --root . --from "$FROM" --to "$TO" "$@"
fi
exec "${PYTHON:-python3}" -m stagetimer migrate --root . --from "$FROM" --to "$TO" "$@"
