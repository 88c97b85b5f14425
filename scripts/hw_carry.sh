#!/usr/bin/env bash
# Run here (the build machine): builds the hardware runner with a static C++ runtime, static Protobuf and static
# cudart, and copies what the GPU machine needs into .carry/ (ignored by git): the dcpsim and hw_tests binaries
# (stripped) and the scripts they are driven by. The GPU machine has CUDA, NCCL (inside PyTorch's environment) and
# python3, but no Protobuf, CLI11, GoogleTest or network; these binaries need none of them there.
# With CARRY_SIMGRID=1 the runner is built with the simulator too, so that `dcpsim hw calibrate` fits and
# validates on the GPU machine in the same call (scripts/device/calibrate.sh): SimGrid's shared library and
# the ones it needs (Boost, ns-3, GSL; ~40 MB) go to .carry/bin/simgrid/, found through the binary's RPATH
# ($ORIGIN/simgrid: nothing else's library path changes). Without it `hw calibrate` measures there and the fit
# and validation run here (the same command on the archive it wrote).
#   [CARRY_SIMGRID=1] scripts/hw_carry.sh [build-dir]        (default build-hw)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-hw}
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
# FlashInfer's headers (pinned wheels, .deps/flashinfer): the runner's default attention. Its MLA unit builds
# for sm_90a, its decode unit for sm_90 and sm_100, everything else for 90 and 100 as usual.
scripts/fetch_flashinfer.sh
simgrid=OFF
rpath=("-DCMAKE_EXE_LINKER_FLAGS=" "-DCMAKE_BUILD_RPATH=")
if [ "${CARRY_SIMGRID:-0}" = 1 ]; then
  simgrid=ON
  # DT_RPATH (not RUNPATH): it also applies to what libsimgrid itself loads.
  rpath=("-DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags" "-DCMAKE_BUILD_RPATH=\$ORIGIN/simgrid")
fi
# The lent GPU machines are Hopper (H100, H200): sm_90 code only by default, which makes the carried runner
# smaller (9.6 MB as xz with the dcpsim binary, CUPTI, SQLite and zlib, 2026-12-06; sm_100 added ~3 MB) for the device's 64 MiB
# limit on tree and carry together (the tree is 44 MiB since its kernel tables are stored gzip-compressed);
# DCPSIM_CARRY_ARCHS="90 100" adds Blackwell's. Pack it with
#   cd .carry && tar cf - bin/dcpsim bin/libcupti.so.13 bin/libsqlite3.so.0 bin/libz.so.1 | xz -T2 -9e > dcpsim.txz
archs=${DCPSIM_CARRY_ARCHS:-90}
cmake -S . -B "$build" -G Ninja -DCMAKE_CUDA_ARCHITECTURES="${archs// /;}" -DDCPSIM_WITH_CUDA=ON -DDCPSIM_WITH_SIMGRID=$simgrid -DDCPSIM_STATIC_RUNTIME=ON \
  -DDCPSIM_WITH_FLASHINFER=ON -DDCPSIM_WERROR=ON -DDCPSIM_BUILD_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${rpath[@]}" >/dev/null
ninja -C "$build" -j "${DCPSIM_JOBS:-2}" dcpsim hw_tests
rm -rf .carry/bin && mkdir -p .carry/bin
strip -o .carry/bin/dcpsim "$build/analysis/dcpsim"
strip -o .carry/bin/hw_tests "$build/tests/hw/hw_tests"
# Shared libraries the binaries still need that a plain Ubuntu image may lack (NCCL is found there at run time).
# SimGrid's closure goes to its own folder, with the C++ runtime it was built against (the binaries carry
# theirs statically; PyTorch's scripts beside them must not pick up this one).
for lib in $(ldd .carry/bin/dcpsim .carry/bin/hw_tests | awk '/=> \//{print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libnccl.so*|ld-linux*) ;;
    libgcc_s*|libstdc++*) if [ $simgrid = ON ]; then mkdir -p .carry/bin/simgrid && cp -L "$lib" .carry/bin/simgrid/; fi ;;
    libsimgrid*|libboost*|libns3*|libgsl*|libgfortran*|libquadmath*) mkdir -p .carry/bin/simgrid && cp -L "$lib" .carry/bin/simgrid/ ;;
    *) cp -L "$lib" .carry/bin/ ;;
  esac
done
# CUPTI (the GPU timeline) is loaded with dlopen, so ldd does not list it: carry the toolkit's copy.
for cupti in "${CUDA_HOME:-/usr/local/cuda}"/extras/CUPTI/lib64/libcupti.so.13 "${CUDA_HOME:-/usr/local/cuda}"/lib64/libcupti.so.13; do
  if [ -e "$cupti" ]; then cp -L "$cupti" .carry/bin/ && break; fi
done
ls -la .carry/bin
du -sh .carry
