#!/usr/bin/env bash
# Makes the profile `dcpsim hw calibrate` wrote (scripts/device/calibrate.sh's archive) a built-in: the profile
# to models/profiles/NAME.json (its tables are listed by file name, which built-ins find embedded), the tables to
# models/tables/ (gzip-compressed), the sidecar to models/calibrated/NAME.calibration.json (tests/analysis checks
# that its hashes of the kernels and tables are the tree's), and the measured steps to
# traces/measured/NAME-calibrate/ (fit, pdl, holdout; the validation's report beside them). Run here, from the repository root, after the GPU call:
#   scripts/install_calibration.sh NAME calibrate-NAME.tgz
# The profile must have been fitted and validated (exit 0 of the command, or a resume here with SimGrid).
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?profile name, e.g. h100-sxm}
archive=${2:?calibrate-NAME.tgz}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar xzf "$archive" -C "$tmp"
[ -f "$tmp/$name.json" ] || { echo "install_calibration.sh: $archive holds no $name.json" >&2; exit 2; }
[ -f "$tmp/$name.calibration.json" ] || {
  echo "install_calibration.sh: $name is not fitted yet (no sidecar): run dcpsim hw calibrate --out $tmp/$name.json --base $name with SimGrid first" >&2
  exit 2
}
cp "$tmp/$name.json" "models/profiles/$name.json"
cp "$tmp/$name".calibration.json models/calibrated/
# Kernel tables are stored gzip-compressed (X.json.gz; every reader finds it as X.json, the profile lists X.json).
for t in "$tmp/$name"-*.json "$tmp/$name"-*.json.gz; do
  [ -f "$t" ] || continue
  base=$(basename "$t" .gz)
  if [ "${t%.gz}" != "$t" ]; then cp "$t" "models/tables/$base.gz"; else gzip -9nc "$t" > "models/tables/$base.gz"; fi
  rm -f "models/tables/$base"
done
dest=traces/measured/$name-calibrate
mkdir -p "$dest"
for set in fit pdl holdout; do
  mkdir -p "$dest/$set"
  find "$tmp/$name.calibrate/$set" -name '*.pb' -exec gzip -9nf {} + 2>/dev/null || true
  cp "$tmp/$name.calibrate/$set/"*.pb.gz "$dest/$set/" 2>/dev/null || true
done
cp "$tmp/$name.calibrate/"{device.json,plan.json,validation.md,log.txt} "$dest/" 2>/dev/null || true
echo "installed $name: models/profiles/$name.json, $(ls "$tmp/$name"-*.json | wc -l) tables, the sidecar, $dest/"
echo "rebuild (the built-ins are embedded), then: dcpsim profiles --show $name | diff - models/profiles/$name.json"
