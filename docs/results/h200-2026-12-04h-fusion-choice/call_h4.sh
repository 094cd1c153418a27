#!/usr/bin/env bash
# Call 4: the GPU tests call 3's suite did not reach in its time, and the fused tests again.
set -u
B="$PWD/device-carry/bin"; export DLR_SHARED_DIR="$PWD/device-carry/shared"; O="$OUT"
nvidia-smi -L | tee "$O/gpu.txt"
timeout 280 "$B/dlr_gpu_tests" --gtest_filter='Issue9Models/CudaEngineE2E.Fp32MatchesCpuAndFp16IsClose/yolov4_sam_mish_csp_reorg_bfm:Issue9Models/CudaEngineE2E.Fp32MatchesCpuAndFp16IsClose/Gaussian_yolov3_BDD:Issue9Models/CudaEngineE2E.Fp32MatchesCpuAndFp16IsClose/yolov3_tiny_prn:Modes/DeviceFaults.EverySiteOfOpenAndDetectFailsCleanly/preload_fp32:Modes/DeviceFaults.EverySiteOfOpenAndDetectFailsCleanly/stream_ring_fp16:Modes/DeviceFaults.EverySiteOfOpenAndDetectFailsCleanly/stream_slots_fp16:Axes/SlicedGpu.MatchesUnslicedAndStreamsBitIdenticalToItsPreload/filters:Axes/SlicedGpu.MatchesUnslicedAndStreamsBitIdenticalToItsPreload/channels:FusedConvTest.*:FusionGpu.PlansKept*' >"$O/tests.log" 2>&1
echo "rc=$? $(grep -E '^\[  (PASSED|FAILED)|SKIPPED \] [0-9]' "$O/tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED|^\[       OK|fusion auto with the cache|find_algorithms' "$O/tests.log" | head -30
