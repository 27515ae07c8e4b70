#!/usr/bin/env bash
# Packs what bench/gpu.sh needs on a GPU machine that cannot install packages or reach the
# network (the lent device machines here): binaries built on this machine with the CUDA
# backend (sm_90), the shared libraries they load that such a machine may lack, and the
# small models of the shared data. Everything lands in .gpu/ (ignored by git), which the
# device call carries; there `HSD_GPU_PREBUILT=.gpu bench/gpu.sh` runs it without building.
#
#   bench/gpu_pack.sh [BUILD_DIR]     # default build (configured with HSD_CUDA=AUTO/ON)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
SHARED=${HSD_SHARED:-../shared}
bins=(hsd hsd_gpu_bench hsd_ar_compare test_cuda_fallback test_model_llama2c)
cmake --build "$BUILD" -j "$(nproc)" --target hsd_cli hsd_gpu_bench hsd_ar_compare \
    test_cuda_fallback test_model_llama2c >/dev/null ||
    { echo "gpu_pack: build failed, or $BUILD was not configured with the CUDA backend" >&2; exit 2; }
rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib .gpu/shared/models
for b in "${bins[@]}"; do cp "$BUILD/$b" .gpu/bin/; done
# a previous build's CLI beside it (HSD_GPU_OLD=path/to/hsd): bench/gpu.sh times both on the
# device, same file, same run
[ -n "${HSD_GPU_OLD:-}" ] && cp "$HSD_GPU_OLD" .gpu/bin/hsd_old
# every library the binaries load, except the C runtime and the driver's own
for lib in $(ldd "${bins[@]/#/$BUILD/}" | awk '/=> \// { print $3 }' | sort -u); do
    case "$(basename "$lib")" in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libcuda.so*) ;;
        *) cp -L "$lib" .gpu/lib/ ;;
    esac
done
tar cJf .gpu/lib.tar.xz -C .gpu lib && rm -rf .gpu/lib
for d in stories260K babyllama-tok105; do cp -r "$SHARED/models/$d" .gpu/shared/models/; done
cp "$SHARED/models/reference_outputs.json" .gpu/shared/models/
git rev-parse --short HEAD > .gpu/commit
git diff --quiet HEAD || echo "+uncommitted" >> .gpu/commit
du -sh .gpu
