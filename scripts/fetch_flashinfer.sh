#!/usr/bin/env bash
# Unpacks the headers of the pinned FlashInfer and CCCL wheels into .deps/ (CMake's DCPSIM_FLASHINFER_DIR default):
#   .deps/flashinfer/include   flashinfer/data/include    (FlashInfer)
#   .deps/flashinfer/cutlass   flashinfer/data/cutlass/include, tools/util/include (CUTLASS, as FlashInfer ships it)
#   .deps/flashinfer/cccl      nvidia/cu13/include/cccl   (cuda::fast_mod_div and the rest of a newer CCCL)
# Idempotent: skipped when .deps/flashinfer/VERSION names the pinned versions. Exits 1 with one line when pip cannot
# fetch the wheels (no network): the build then goes on without FlashInfer.
#   scripts/fetch_flashinfer.sh [dest]      (default .deps/flashinfer; wheel cache .deps/wheels)
set -euo pipefail
cd "$(dirname "$0")/.."
flashinfer_version=0.7.2.post1
cccl_version=13.3.5.0.6
dest=${1:-.deps/flashinfer}
cache=.deps/wheels
stamp="flashinfer-python==$flashinfer_version nvidia-cuda-cccl==$cccl_version"
if [ -f "$dest/VERSION" ] && [ "$(cat "$dest/VERSION")" = "$stamp" ]; then
  echo "FlashInfer headers: $stamp already in $dest"
  exit 0
fi
mkdir -p "$cache"
for spec in "flashinfer-python==$flashinfer_version" "nvidia-cuda-cccl==$cccl_version"; do
  if ! python3 -m pip download --quiet --retries 1 --timeout 30 --no-deps --only-binary=:all: "$spec" -d "$cache" >"$cache/pip.log" 2>&1; then
    echo "FlashInfer headers: pip could not fetch $spec (no registry?); building without FlashInfer ($cache/pip.log)"
    exit 1
  fi
done
rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
python3 - "$cache" "$dest.tmp" "$flashinfer_version" "$cccl_version" <<'PY'
import glob, os, sys, zipfile
cache, out, fi_ver, cccl_ver = sys.argv[1:]
def unpack(wheel, prefixes):
    n = 0
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.endswith("/"):
                continue
            for src, dst in prefixes:
                if name.startswith(src):
                    path = os.path.join(out, dst, name[len(src):])
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "wb") as f:
                        f.write(z.read(name))
                    n += 1
                    break
    return n
def one(pattern):
    found = glob.glob(os.path.join(cache, pattern))
    if len(found) != 1:
        sys.exit(f"FlashInfer headers: expected one wheel {pattern} in {cache}, found {len(found)}")
    return found[0]
n = unpack(one(f"flashinfer_python-{fi_ver}-*.whl"),
           [("flashinfer/data/include/", "include/"),
            ("flashinfer/data/cutlass/include/", "cutlass/include/"),
            ("flashinfer/data/cutlass/tools/util/include/", "cutlass/tools/util/include/")])
m = unpack(one(f"nvidia_cuda_cccl-{cccl_ver}-*.whl"), [("nvidia/cu13/include/cccl/", "cccl/")])
print(f"FlashInfer headers: {n} FlashInfer/CUTLASS and {m} CCCL headers")
PY
echo "$stamp" >"$dest.tmp/VERSION"
rm -rf "$dest" && mv "$dest.tmp" "$dest"
echo "FlashInfer headers: $stamp unpacked into $dest"
