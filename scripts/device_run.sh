#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, with device-carry/ carried
# (made by scripts/device_prepare.sh). Phases, any subset, in order:
#   info tests sanitize sanitize_modes probe bench int8 stream slices axes axes_more axes_auto regress residency curve calib soak storage ttfd models ring upload
#   startup plugin
# Logs and JSON go to $OUT; a short summary is printed last. STREAM_PRECISIONS
# (default "fp16 fp32") limits the stream phase (each precision takes ~4-6 minutes).
set -u
B="$PWD/device-carry/bin"
export DLR_SHARED_DIR="$PWD/device-carry/shared"
OUT="${OUT:-/tmp/dlrun-out}"
mkdir -p "$OUT"
M="$DLR_SHARED_DIR/models"
PROFILE="$OUT/h100_profile.json"
[ -f "$PWD/device-carry/h100_profile.json" ] && PROFILE="$PWD/device-carry/h100_profile.json"
summary="$OUT/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

for phase in "$@"; do
  case "$phase" in
    info)
      nvidia-smi -L | tee -a "$summary"
      compute-sanitizer --version | head -1 | tee -a "$summary"
      ;;
    tests)
      timeout 420 "$B/dlr_gpu_tests" --gtest_filter='-GpuBench.*' >"$OUT/gpu_tests.log" 2>&1
      note "gpu tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED  \] [0-9]+ test' "$OUT/gpu_tests.log" | tr '\n' ' ')"
      grep -E '^\[  FAILED  \]|rel err vs CPU|detections|injected faults' "$OUT/gpu_tests.log" | head -40 | tee -a "$summary"
      # The public API's runtime on the GPU (the rest of the public tests run on the CPU in CI).
      timeout 120 "$B/dlr_public_tests" --gtest_filter='PublicRuntime.*' >"$OUT/public_tests.log" 2>&1
      note "public runtime tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED  \] [0-9]+ test|SKIPPED \]' "$OUT/public_tests.log" | tr '\n' ' ')"
      ;;
    sanitize)
      export DLR_TEST_SMALL_MODELS=1
      for tool in memcheck racecheck synccheck; do
        filter='*CudaEngineE2E.*fastest*:StreamMode.*:MultiSession.*'
        [ "$tool" = memcheck ] || filter='StreamMode.*:MultiSession.*'
        limit=100; [ "$tool" = racecheck ] && limit=360
        timeout $limit compute-sanitizer --tool "$tool" --error-exitcode 9 "$B/dlr_gpu_tests" --gtest_filter="$filter" \
          >"$OUT/sanitize_$tool.log" 2>&1
        note "compute-sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|^\[  PASSED|^\[  FAILED' "$OUT/sanitize_$tool.log" | tr '\n' ' ')"
      done
      unset DLR_TEST_SMALL_MODELS
      ;;
    sanitize_modes)
      export DLR_FULL_EXIT=1  # the sanitizers see the whole teardown (tools/common/process_exit.h)
      # compute-sanitizer memcheck, synccheck and racecheck over one dlrun process per
      # streaming mode (yolo-fastest @320 fp16 on dog.ppm; several models: yolo-fastest
      # and yolov4-tiny @160 on one runtime's shared ring; *_ahead: yolov4-tiny @160 from
      # storage on three frames, the later two read ahead). Each run's ERROR SUMMARY and
      # whether it finished in SANITIZE_LIMIT seconds (default 150) go to the summary.
      # arena: a ring plan from host memory that stages blobs in the activation arena's
      # idle bytes (yolo-fastest streams through slots, which never stage): the first of
      # ARENA_CANDIDATES (cfg@size:budget) whose plan, opened once without a tool, stages;
      # that open keeps the kernel times and copy profile in the cache, so the sanitized
      # opens plan the same, and each sanitized run's own --print-plan is grepped for it.
      # int8_*: the same modes with int8 weights (run when named in SANITIZE_MODES).
      fw="$DLR_SHARED_DIR/weights/yolo-fastest-1.1"
      "$B/dlgen" "$M/yolov4-tiny.cfg" /tmp/tiny.weights >/dev/null
      base=(--device cuda --precision fp16 --summary always)
      img="$DLR_SHARED_DIR/images/dog.ppm"
      # The smallest of these runtime budgets that holds both models (so they stream).
      rb=""
      for b in 6MiB 8MiB 12MiB 16MiB 24MiB 32MiB; do
        if "$B/dlrun" --model "$fw.cfg:$fw.weights@160" --model "$M/yolov4-tiny.cfg:/tmp/tiny.weights@160" \
            --runtime-budget $b "$DLR_SHARED_DIR/images/dog.ppm" "${base[@]}" >"$OUT/sanmode_budget.log" 2>&1; then
          rb=$b; break
        fi
      done
      note "sanitize: several models at --runtime-budget ${rb:-none}: $(tail -1 "$OUT/sanmode_budget.log")"
      arena=""
      for c in ${ARENA_CANDIDATES:-yolov4-tiny@416:min yolov4-tiny@416:50% yolov4@608:min yolov4@608:50%}; do
        name=${c%%@*} size=${c#*@} budget=${c##*:}
        size=${size%%:*}
        [ -f "/tmp/$name.weights" ] || "$B/dlgen" "$M/$name.cfg" "/tmp/$name.weights" >/dev/null
        cand="$M/$name.cfg /tmp/$name.weights --width $size --height $size --mode stream --weight-budget $budget"
        # shellcheck disable=SC2086
        "$B/dlrun" $cand --print-plan "$DLR_SHARED_DIR/images/dog.ppm" "${base[@]}" >"$OUT/sanmode_arena_plan.log" 2>&1
        if grep -q '^staged in the activation arena' "$OUT/sanmode_arena_plan.log"; then arena="$cand --print-plan"; break; fi
      done
      if [ -n "$arena" ]; then
        note "sanitize: arena staging with $c: $(grep -m1 '^staged in the activation arena' "$OUT/sanmode_arena_plan.log")"
      else
        note "sanitize: arena staging: NO CANDIDATE STAGES, arena not sanitized (plans: $OUT/sanmode_arena_plan.log)"
      fi
      declare -A smode=(
        [host_min]="$fw.cfg $fw.weights --mode stream --weight-budget min"
        [host_50]="$fw.cfg $fw.weights --mode stream --weight-budget 50%"
        [slices]="$fw.cfg $fw.weights --mode stream --weight-budget min --slot-size 64KiB"
        [storage]="$fw.cfg $fw.weights --mode stream --weights-from storage --zero-copy off"
        [zero_copy]="$fw.cfg $fw.weights --mode stream --weights-from storage --zero-copy on"
        # Reads ahead across inferences: yolov4-tiny @160 (several read units) on three frames.
        [storage_ahead]="$M/yolov4-tiny.cfg /tmp/tiny.weights --width 160 --height 160 --mode stream --weights-from storage --zero-copy off $img $img"
        [zero_copy_ahead]="$M/yolov4-tiny.cfg /tmp/tiny.weights --width 160 --height 160 --mode stream --weights-from storage --zero-copy on $img $img"
        [models]="--model $fw.cfg:$fw.weights@160 --model $M/yolov4-tiny.cfg:/tmp/tiny.weights@160 --runtime-budget ${rb:-16MiB}"
        [arena]="$arena"
        # int8 weights (issue 33): expanded on the CUDA engine's third stream, ahead of their layer.
        [int8_preload]="$fw.cfg $fw.weights --weight-format int8"
        [int8_min]="$fw.cfg $fw.weights --mode stream --weight-budget min --weight-format int8"
        [int8_slices]="$fw.cfg $fw.weights --mode stream --weight-budget min --slot-size 64KiB --weight-format int8"
        [int8_zero_copy]="$fw.cfg $fw.weights --mode stream --weights-from storage --zero-copy on --weight-format int8"
        [int8_models]="--model $fw.cfg:$fw.weights@160 --model $M/yolov4-tiny.cfg:/tmp/tiny.weights@160 --runtime-budget ${rb:-16MiB} --weight-format int8"
      )
      for tool in ${SANITIZE_TOOLS:-memcheck synccheck racecheck}; do
        for mode in ${SANITIZE_MODES:-host_min host_50 slices storage zero_copy storage_ahead zero_copy_ahead models arena}; do
          [ -n "${smode[$mode]}" ] || continue
          log="$OUT/sanmode_${tool}_$mode.log"
          start=$(date +%s)
          # shellcheck disable=SC2086
          timeout "${SANITIZE_LIMIT:-150}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
            "$B/dlrun" ${smode[$mode]} "$DLR_SHARED_DIR/images/dog.ppm" "${base[@]}" >"$log" 2>&1
          rc=$?
          note "sanitize $tool $mode rc=$rc $(( $(date +%s) - start )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)" \
            "$([ $rc = 124 ] && echo 'DID NOT FINISH')" "$(grep -cE '^[^ ].*: [0-9]+%$' "$log") detection lines" \
            "$([ "$mode" = arena ] && { grep -m1 '^staged in the activation arena' "$log" || echo 'NOT STAGED IN THIS RUN'; })"
        done
      done
      unset DLR_FULL_EXIT
      ;;
    probe)
      timeout 180 "$B/dlprobe" --out "$PROFILE" >"$OUT/probe.txt" 2>&1
      note "dlprobe rc=$?"; tail -30 "$OUT/probe.txt" | tee -a "$summary"
      ;;
    bench)
      [ -f "$PROFILE" ] || PROFILE=h100
      timeout 300 "$B/dlbench" "$M/yolov4.cfg" --synthetic --size 608 --precision fp32,tf32,fp16 --batch 1 \
        --report table --json "$OUT/bench_yolov4_608.json" >"$OUT/bench_yolov4_608.txt" 2>&1
      note "bench yolov4@608 rc=$?"; cat "$OUT/bench_yolov4_608.txt" | tee -a "$summary"
      timeout 240 "$B/dlbench" "$M/yolov4.cfg" --synthetic --size 608 --precision fp32,fp16 --batch 4,8 \
        --json "$OUT/bench_yolov4_608_batch.json" >"$OUT/bench_yolov4_608_batch.txt" 2>&1
      note "bench yolov4@608 batch rc=$?"; cat "$OUT/bench_yolov4_608_batch.txt" | tee -a "$summary"
      timeout 120 "$B/dlbench" "$M/yolov4-tiny.cfg" --synthetic --size 416 --precision fp32,fp16 --batch 1,8 \
        --json "$OUT/bench_tiny_416.json" >"$OUT/bench_tiny_416.txt" 2>&1
      note "bench yolov4-tiny@416 rc=$?"; cat "$OUT/bench_tiny_416.txt" | tee -a "$summary"
      ;;
    stream)
      [ -f "$PROFILE" ] || PROFILE=h100
      # Both pool layouts (the ring with searched and with equal-chunk units) at the
      # target budgets in one run (ratios from the same run), then the rest of the
      # ring's latency-vs-budget curve.
      for p in ${STREAM_PRECISIONS:-fp16 fp32}; do
        timeout 240 "$B/dlbench" "$M/yolov4.cfg" --synthetic --size 608 --precision $p --mode preload,stream \
          --weight-budget min,25%,50%,all --weight-pool ring,slots --units search,chunks --copy-profile "$PROFILE" \
          --simulate \
          --report table --iters 20 --warmup 3 --json "$OUT/stream_yolov4_608_$p.json" \
          >"$OUT/stream_yolov4_608_$p.txt" 2>&1
        note "stream yolov4@608 $p rc=$?"; grep -v '^  layer' "$OUT/stream_yolov4_608_$p.txt" | tee -a "$summary"
        timeout 110 "$B/dlbench" "$M/yolov4.cfg" --synthetic --size 608 --precision $p --mode preload,stream \
          --weight-budget 20%,30%,35%,75%,90% --weight-pool ring --copy-profile "$PROFILE" --simulate \
          --iters 20 --warmup 3 --json "$OUT/curve_yolov4_608_$p.json" >"$OUT/curve_yolov4_608_$p.txt" 2>&1
        note "curve yolov4@608 $p rc=$?"; cat "$OUT/curve_yolov4_608_$p.txt" | tee -a "$summary"
      done
      "$B/dlgen" "$M/yolov4-tiny.cfg" /tmp/tiny.weights >/dev/null
      timeout 60 "$B/dlrun" "$M/yolov4-tiny.cfg" /tmp/tiny.weights "$DLR_SHARED_DIR/images/dog.ppm" --device cuda \
        --precision fp16 --mode stream --weight-pool ring --weight-budget min --print-plan --report table \
        --trace "$OUT/trace_tiny_ring.json" >"$OUT/dlrun_tiny_ring.txt" 2>&1
      note "dlrun yolov4-tiny ring rc=$?"; head -5 "$OUT/dlrun_tiny_ring.txt" | tee -a "$summary"
      ;;
    slices)
      # Slots smaller than a layer (docs/streaming.md, "Slices smaller than a layer"): each
      # slot size preloaded (the kernels' cost of slicing) and streamed through its
      # minimal pool, every row in its own process, unsliced preload in the same run.
      for p in ${SLICE_PRECISIONS:-fp16 fp32}; do
        slots="256KiB,512KiB,1MiB,2MiB,4MiB,8MiB"; [ "$p" = fp32 ] && slots="1MiB,2MiB,4MiB,8MiB,16MiB"
        timeout 60 "$B/dlbench" "$M/yolov4.cfg" --synthetic --size 608 --precision $p --mode preload,stream \
          --weight-budget min --isolate --iters 30 --warmup 5 \
          --json "$OUT/slices_whole_yolov4_608_$p.json" >"$OUT/slices_whole_yolov4_608_$p.txt" 2>&1
        note "whole layers yolov4@608 $p rc=$?"; grep -v '^  layer' "$OUT/slices_whole_yolov4_608_$p.txt" | tee -a "$summary"
        timeout 420 "$B/dlbench" "$M/yolov4.cfg" --synthetic --size 608 --precision $p --mode preload,stream \
          --slot-size "$slots" --weight-budget min --isolate --iters 30 --warmup 5 \
          --json "$OUT/slices_yolov4_608_$p.json" >"$OUT/slices_yolov4_608_$p.txt" 2>&1
        note "slices yolov4@608 $p rc=$?"; grep -v '^  layer' "$OUT/slices_yolov4_608_$p.txt" | tee -a "$summary"
      done
      ;;
    axes)
      # Slices cut by input channels against slices cut by filters (docs/streaming.md,
      # "Slices smaller than a layer"), each slot preloaded and streamed through its minimal
      # pool, every row in its own process, whole layers in the same call. AXES_PRECISIONS.
      for p in ${AXES_PRECISIONS:-fp16 fp32}; do
        slots="1MiB,2MiB,4MiB"; [ "$p" = fp32 ] && slots="2MiB,4MiB,8MiB"
        timeout 60 "$B/dlbench" "$M/yolov4.cfg" --synthetic --size 608 --precision $p --mode preload,stream \
          --weight-budget min --isolate --iters 30 --warmup 5 \
          --json "$OUT/axes_whole_yolov4_608_$p.json" >"$OUT/axes_whole_yolov4_608_$p.txt" 2>&1
        note "whole layers yolov4@608 $p rc=$?"; grep -v '^  layer' "$OUT/axes_whole_yolov4_608_$p.txt" | tee -a "$summary"
        for axis in channels filters; do
          timeout 240 "$B/dlbench" "$M/yolov4.cfg" --synthetic --size 608 --precision $p --mode preload,stream \
            --slot-size "$slots" --slice-by $axis --weight-budget min --isolate --iters 30 --warmup 5 \
            --json "$OUT/axes_${axis}_yolov4_608_$p.json" >"$OUT/axes_${axis}_yolov4_608_$p.txt" 2>&1
          note "slices by $axis yolov4@608 $p rc=$?"; grep -v '^  layer' "$OUT/axes_${axis}_yolov4_608_$p.txt" | tee -a "$summary"
        done
      done
      ;;
    axes_more)
      # Channel slices from storage (fp16, 2 MiB slots, against whole layers) and four
      # models in one runtime with 1 MiB channel slots.
      export DLR_CACHE_DIR=/tmp/dlrcache
      W=/tmp/y4.weights
      "$B/dlgen" "$M/yolov4.cfg" $W >/dev/null
      for slot in 0 2MiB; do
        timeout 150 "$B/dlbench" "$M/yolov4.cfg" --weights $W --size 608 --precision fp16 --mode stream \
          --weight-budget min --weights-from storage --slot-size $slot --slice-by channels --cold --iters 20 \
          --warmup 2 --json "$OUT/axes_storage_$slot.json" >"$OUT/axes_storage_$slot.txt" 2>&1
        note "storage fp16 slot $slot rc=$?"; grep -v '^  layer' "$OUT/axes_storage_$slot.txt" | tail -12 | tee -a "$summary"
      done
      SW="$DLR_SHARED_DIR/weights"
      MODELS="$M/yolov4.cfg@608,$M/yolov3.cfg@608,$M/yolov4-tiny.cfg@416,$SW/yolo-fastest-1.1.cfg:$SW/yolo-fastest-1.1.weights@416"
      timeout 200 "$B/dlbench" --models "$MODELS" --runtime-budget 20%,30% --slot-size 1MiB --slice-by channels \
        --concurrent 200 --json "$OUT/axes_models.json" >"$OUT/axes_models.txt" 2>&1
      note "models, 1 MiB channel slots rc=$?"; cat "$OUT/axes_models.txt" | tee -a "$summary"
      ;;
    axes_auto)
      # The axis per layer chosen at open (slice_by auto) against every layer cut by input
      # channels and every one by filters, each slot preloaded and streamed through its
      # minimal pool, every row in its own process, whole layers in the same call; then the
      # fp32 8 MiB budget and four models in one runtime with auto. dlbench keeps nothing
      # between rows (no --cache): every auto row times both variants at its open.
      export DLR_CACHE_DIR=/tmp/dlrcache-auto
      rm -rf "$DLR_CACHE_DIR"
      for p in ${AXES_PRECISIONS:-fp16 fp32}; do
        slots="1MiB,2MiB"; [ "$p" = fp32 ] && slots="2MiB,4MiB,8MiB"
        timeout 60 "$B/dlbench" "$M/yolov4.cfg" --synthetic --size 608 --precision $p --mode preload,stream \
          --weight-budget min --isolate --iters 30 --warmup 5 \
          --json "$OUT/auto_whole_yolov4_608_$p.json" >"$OUT/auto_whole_yolov4_608_$p.txt" 2>&1
        note "whole layers yolov4@608 $p rc=$?"; grep -v '^  layer' "$OUT/auto_whole_yolov4_608_$p.txt" | tee -a "$summary"
        for axis in auto channels filters; do
          DLR_LOG_LEVEL=info timeout 240 "$B/dlbench" "$M/yolov4.cfg" --synthetic --size 608 --precision $p \
            --mode preload,stream --slot-size "$slots" --slice-by $axis --weight-budget min --isolate --iters 30 \
            --warmup 5 --json "$OUT/auto_${axis}_yolov4_608_$p.json" >"$OUT/auto_${axis}_yolov4_608_$p.txt" 2>&1
          note "slices by $axis yolov4@608 $p rc=$?"
          grep -E '^cuda|axis of each layer' "$OUT/auto_${axis}_yolov4_608_$p.txt" | tee -a "$summary"
        done
      done
      for axis in auto channels; do
        DLR_LOG_LEVEL=info timeout 120 "$B/dlbench" "$M/yolov4.cfg" --synthetic --size 608 --precision fp32 \
          --mode preload,stream --weight-budget 8MiB --slice-by $axis --isolate --iters 30 --warmup 5 \
          --json "$OUT/auto_fp32_8mib_$axis.json" >"$OUT/auto_fp32_8mib_$axis.txt" 2>&1
        note "fp32 8 MiB budget by $axis rc=$?"
        grep -E '^cuda|axis of each layer' "$OUT/auto_fp32_8mib_$axis.txt" | tee -a "$summary"
      done
      SW="$DLR_SHARED_DIR/weights"
      MODELS="$M/yolov4.cfg@608,$M/yolov3.cfg@608,$M/yolov4-tiny.cfg@416,$SW/yolo-fastest-1.1.cfg:$SW/yolo-fastest-1.1.weights@416"
      timeout 200 "$B/dlbench" --models "$MODELS" --runtime-budget 30% --slot-size 1MiB --slice-by auto \
        --split max-slowdown --concurrent 200 --json "$OUT/auto_models.json" >"$OUT/auto_models.txt" 2>&1
      note "models, 1 MiB auto slots rc=$?"; cat "$OUT/auto_models.txt" | tee -a "$summary"
      unset DLR_CACHE_DIR
      ;;
    regress)
      # docs/benchmarks.md's yolov4 @608 rows (issue 9's must-not-regress set), plus the
      # residency strategies at the same budgets (issue 10), preload in the same run.
      for p in fp16 fp32; do
        timeout 200 "$B/dlbench" "$M/yolov4.cfg" --synthetic --size 608 --precision $p --mode preload,stream \
          --weight-budget min,25%,50%,75%,auto --weight-pool ring --residency none,largest-late,greedy \
          --copy-profile "${PROFILE_ARG:-h100}" --iters 50 --warmup 5 --json "$OUT/regress_yolov4_608_$p.json" \
          >"$OUT/regress_yolov4_608_$p.txt" 2>&1
        note "regress yolov4@608 $p rc=$?"; cat "$OUT/regress_yolov4_608_$p.txt" | tee -a "$summary"
      done
      ;;
    residency)
      # The latency-vs-budget curve of the residency planner (issue 10), yolov4-tiny too.
      timeout 150 "$B/dlbench" "$M/yolov4-tiny.cfg" --synthetic --size 416 --precision fp16 --mode preload,stream \
        --weight-budget min,80%,90% --weight-pool ring --residency none,largest-late,greedy --iters 50 --warmup 5 \
        --json "$OUT/residency_tiny_416.json" >"$OUT/residency_tiny_416.txt" 2>&1
      note "residency yolov4-tiny@416 rc=$?"; cat "$OUT/residency_tiny_416.txt" | tee -a "$summary"
      "$B/dlgen" "$M/yolov4.cfg" /tmp/yolov4.weights >/dev/null
      timeout 60 "$B/dlrun" "$M/yolov4.cfg" /tmp/yolov4.weights --device cuda --precision fp16 --mode stream \
        --weight-budget auto --print-plan >"$OUT/printplan_yolov4_auto.txt" 2>&1
      note "dlrun yolov4 fp16 auto --print-plan rc=$?"; grep -E "^note|^predicted|^stream plan" \
        "$OUT/printplan_yolov4_auto.txt" | tee -a "$summary"
      ;;
    curve)
      # Issue 10 items 3 and 4. (a) --copy-profile auto on first use: the GPU test (its own
      # temp cache), then dlrun with a fresh cache directory, timed: the first open probes
      # (its log line says how long), the second reads the cache; the brief probe next to
      # the full one (the probe phase) as dlprobe --brief.
      timeout 120 "$B/dlr_gpu_tests" --gtest_filter='CopyProfileAuto.*' >"$OUT/copy_profile_auto.log" 2>&1
      note "copy profile auto test rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' "$OUT/copy_profile_auto.log" | tr '\n' ' ')"
      grep -E 'first-use copy probe|second cuda_target' "$OUT/copy_profile_auto.log" | tee -a "$summary"
      export DLR_CACHE_DIR="$OUT/cache"
      rm -rf "$DLR_CACHE_DIR"
      "$B/dlgen" "$M/yolov4.cfg" /tmp/yolov4.weights >/dev/null
      for run in first second; do
        t0=$(date +%s.%N)
        timeout 60 "$B/dlrun" "$M/yolov4.cfg" /tmp/yolov4.weights --device cuda --precision fp16 --mode stream \
          --weight-budget 50% --print-plan --log-level info >"$OUT/printplan_auto_profile_$run.txt" 2>&1
        rc=$?; t1=$(date +%s.%N)
        note "dlrun --print-plan, copy profile auto, $run open rc=$rc, $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s in all"
        grep -E 'copy profile|lower bound|^predicted' "$OUT/printplan_auto_profile_$run.txt" | tee -a "$summary"
      done
      ls -l "$DLR_CACHE_DIR" | tee -a "$summary"
      cp "$DLR_CACHE_DIR"/copy-profile-*.json "$OUT/" 2>/dev/null
      t0=$(date +%s.%N)
      timeout 60 "$B/dlprobe" --brief --out "$OUT/brief_probe_profile.json" >"$OUT/brief_probe.txt" 2>&1
      rc=$?; t1=$(date +%s.%N)
      note "dlprobe --brief rc=$rc, $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s with process start"
      grep -E 'profile JSON|peak pinned|queue classes' "$OUT/brief_probe.txt" | cut -c1-200 | tee -a "$summary"
      # (b) The budget curves: >= 12 budgets from the minimal pool to all, preload in the
      # same run, measured and predicted (the planner at open, kernel times measured
      # there, the auto profile above) with the lower bound on every row.
      for p in fp16 fp32; do
        timeout 300 "$B/dlbench" "$M/yolov4.cfg" --synthetic --size 608 --precision $p --budget-curve 14 \
          --iters 30 --warmup 5 --json "$OUT/budget_curve_yolov4_608_$p.json" >"$OUT/budget_curve_yolov4_608_$p.txt" 2>&1
        note "budget curve yolov4@608 $p rc=$?"; cat "$OUT/budget_curve_yolov4_608_$p.txt" | tee -a "$summary"
      done
      timeout 200 "$B/dlbench" "$M/yolov4-tiny.cfg" --synthetic --size 416 --precision fp16 --budget-curve 12 \
        --iters 50 --warmup 5 --json "$OUT/budget_curve_tiny_416_fp16.json" >"$OUT/budget_curve_tiny_416_fp16.txt" 2>&1
      note "budget curve yolov4-tiny@416 fp16 rc=$?"; cat "$OUT/budget_curve_tiny_416_fp16.txt" | tee -a "$summary"
      unset DLR_CACHE_DIR
      # The PNGs: here when python3 has matplotlib, else on the host (scripts/plot_budget_curve.py).
      if [ -f "$PWD/device-carry/plot_budget_curve.py" ] && python3 -c 'import matplotlib' 2>/dev/null; then
        for f in yolov4_608_fp16 yolov4_608_fp32 tiny_416_fp16; do
          python3 device-carry/plot_budget_curve.py "$OUT/budget_curve_$f.png" "$OUT/budget_curve_$f.json" \
            | tee -a "$summary"
        done
      else
        note "no matplotlib here: plot on the host with scripts/plot_budget_curve.py OUT.png budget_curve_*.json"
      fi
      ;;
    calib)
      # Issue 10, the copy cost calibrated inside an inference at open (docs/streaming.md
      # section 6, "Copy calibration at open"): the budget curves, each with the row of the
      # budget auto picks (5 %), with the calibrated profile (the default; DLR_LOG_LEVEL=info
      # prints "copy profile calibrated in an inference ..." at every open) and, for
      # comparison in the same run, with --no-calibrate. CALIB_KINDS limits it (default
      # "calibrated probed"); each yolov4 curve takes ~2-4 minutes.
      export DLR_CACHE_DIR="$OUT/cache"
      for kind in ${CALIB_KINDS:-calibrated probed}; do
        flag=""
        [ "$kind" = probed ] && flag="--no-calibrate"
        for p in fp16 fp32; do
          DLR_LOG_LEVEL=info timeout 400 "$B/dlbench" "$M/yolov4.cfg" --synthetic --size 608 --precision $p \
            --budget-curve 14 $flag --iters 30 --warmup 5 --json "$OUT/calib_yolov4_608_${p}_$kind.json" \
            >"$OUT/calib_yolov4_608_${p}_$kind.txt" 2>&1
          note "budget curve + auto, yolov4@608 $p, $kind profile rc=$?"
          grep -vE '^\[' "$OUT/calib_yolov4_608_${p}_$kind.txt" | tee -a "$summary"
          grep -m3 'copy profile calibrated' "$OUT/calib_yolov4_608_${p}_$kind.txt" | cut -c1-400 | tee -a "$summary"
        done
        DLR_LOG_LEVEL=info timeout 300 "$B/dlbench" "$M/yolov4-tiny.cfg" --synthetic --size 416 --precision fp16 \
          --budget-curve 12 $flag --iters 50 --warmup 5 --json "$OUT/calib_tiny_416_fp16_$kind.json" \
          >"$OUT/calib_tiny_416_fp16_$kind.txt" 2>&1
        note "budget curve + auto, yolov4-tiny@416 fp16, $kind profile rc=$?"
        grep -vE '^\[' "$OUT/calib_tiny_416_fp16_$kind.txt" | tee -a "$summary"
        grep -m3 'copy profile calibrated' "$OUT/calib_tiny_416_fp16_$kind.txt" | cut -c1-400 | tee -a "$summary"
      done
      unset DLR_CACHE_DIR
      if [ -f "$PWD/device-carry/plot_budget_curve.py" ] && python3 -c 'import matplotlib' 2>/dev/null; then
        for f in "$OUT"/calib_*.json; do
          python3 device-carry/plot_budget_curve.py "${f%.json}.png" "$f" | tee -a "$summary"
        done
      fi
      ;;
    soak)
      "$B/dlsoak" "$M/yolov4-tiny.cfg" --synthetic --size 416 --precision fp16 --mode stream --weight-budget min \
        --json "$OUT/soak_tiny_fp16_stream.json" >"$OUT/soak.txt" 2>&1
      note "dlsoak stream min rc=$?"; cat "$OUT/soak.txt" | tee -a "$summary"
      "$B/dlsoak" "$M/yolov4.cfg" --synthetic --size 416 --precision fp16 --mode stream --weight-budget 50% \
        --iters 2000 --thread-iters 50 --json "$OUT/soak_yolov4_fp16_resident.json" >"$OUT/soak_resident.txt" 2>&1
      note "dlsoak stream 50% rc=$?"; cat "$OUT/soak_resident.txt" | tee -a "$summary"
      ;;
    int8)
      # Issue 33: int8 weights against fp16 (yolov4 @608), every row in its own process:
      # preload and stream (min, 50 %) from host memory, then from storage (prepared files
      # made in a fresh cache, their sizes listed); then the detections of yolo-fastest-1.1
      # (real weights) fp16 against int8 on the six shared images.
      export DLR_CACHE_DIR=/tmp/dlrcache-int8
      W=/tmp/y4.weights; [ -f $W ] || "$B/dlgen" "$M/yolov4.cfg" $W >/dev/null
      timeout 240 "$B/dlbench" "$M/yolov4.cfg" --weights $W --size 608 --precision fp16 --mode preload,stream \
        --weight-budget min,50% --weight-format fp,int8 --isolate --iters 50 --warmup 5 \
        --json "$OUT/int8_yolov4_608_fp16.json" >"$OUT/int8_yolov4_608_fp16.txt" 2>&1
      note "int8 host yolov4@608 fp16 rc=$?"; grep -v '^  layer' "$OUT/int8_yolov4_608_fp16.txt" | tee -a "$summary"
      timeout 150 "$B/dlbench" "$M/yolov4.cfg" --weights $W --size 608 --precision fp16 --mode stream \
        --weights-from storage --cache-hits off --weight-format fp,int8 --isolate --iters 20 --warmup 2 \
        --json "$OUT/int8_storage_yolov4_608_fp16.json" >"$OUT/int8_storage_yolov4_608_fp16.txt" 2>&1
      note "int8 storage yolov4@608 fp16 rc=$?"; grep -v '^  layer' "$OUT/int8_storage_yolov4_608_fp16.txt" | tee -a "$summary"
      ls -l "$DLR_CACHE_DIR"/prepared/ 2>&1 | tee -a "$summary"
      timeout 120 python3 scripts/weight_format_fidelity.py --dlrun "$B/dlrun" --cfg "$DLR_SHARED_DIR/weights/yolo-fastest-1.1.cfg" \
        --weights "$DLR_SHARED_DIR/weights/yolo-fastest-1.1.weights" --flags "--device cuda --precision fp16" \
        --json "$OUT/int8_fidelity_gpu_fp16.json" "$DLR_SHARED_DIR"/images/*.ppm 2>&1 | tee -a "$summary"
      # The same measure between two fp runs, for scale: fp16 against fp32.
      timeout 60 python3 scripts/weight_format_fidelity.py --dlrun "$B/dlrun" --cfg "$DLR_SHARED_DIR/weights/yolo-fastest-1.1.cfg" \
        --weights "$DLR_SHARED_DIR/weights/yolo-fastest-1.1.weights" --flags "--device cuda" --ref "--precision fp32" \
        --test "--precision fp16" --json "$OUT/fp16_fidelity_gpu.json" "$DLR_SHARED_DIR"/images/*.ppm 2>&1 | tee -a "$summary"
      ;;
    storage)
      # Issue 15: weights read from the machine's disk each inference (yolov4 @608 fp16).
      # The disk's O_DIRECT profile first (the h100 copy part plus a measured storage part).
      SPROF="$OUT/storage_profile.json"
      (cd /tmp && timeout 150 "$B/dlprobe" --storage-only --base h100 --storage-mib 512 --out "$SPROF") \
        >"$OUT/storage_probe.txt" 2>&1
      note "dlprobe storage rc=$?"; tail -25 "$OUT/storage_probe.txt" | tee -a "$summary"
      [ -f "$SPROF" ] || SPROF=h100
      export DLR_CACHE_DIR=/tmp/dlrcache
      W=/tmp/y4.weights; P=/tmp/y4-fp16.dlrw
      "$B/dlgen" "$M/yolov4.cfg" $W >/dev/null
      "$B/dlrun" "$M/yolov4.cfg" $W --prepare $P --device cuda --precision fp16 >"$OUT/prepare.txt" 2>&1
      note "prepare rc=$? $(tr '\n' ' ' < "$OUT/prepare.txt")"
      # Time to the first detection with a prepared file: the first run measures kernel times
      # and keeps them; the second reads them from the cache.
      for run in first second; do
        t0=$(date +%s.%N)
        "$B/dlrun" "$M/yolov4.cfg" $P "$DLR_SHARED_DIR/images/dog.ppm" --device cuda --precision fp16 --mode stream \
          --weights-from storage --copy-profile "$SPROF" >"$OUT/ttfd_$run.txt" 2>&1
        rc=$?; t1=$(date +%s.%N)
        note "time to first detection ($run run, kernel-times cache): $(python3 -c "print(round($t1 - $t0, 3))") s rc=$rc"
      done
      # Host vs storage, three stages and zero copy, minimal pool and half the weights.
      timeout 300 "$B/dlbench" "$M/yolov4.cfg" --weights $W --size 608 --precision fp16 --mode preload,stream \
        --weight-budget min,50% --weights-from host,storage --zero-copy off,on --prepared $P --copy-profile "$SPROF" \
        --cold --iters 20 --warmup 2 --json "$OUT/storage_yolov4_608_fp16.json" >"$OUT/storage_yolov4_608_fp16.txt" 2>&1
      note "storage bench rc=$?"; cat "$OUT/storage_yolov4_608_fp16.txt" | tee -a "$summary"
      # Read depth and reader, storage at the minimal pool; 100 inferences for the page cache.
      for v in "--read-depth 1" "--read-depth 32" "--reader threads" "--read-block 4MiB" "--iters 100 --warmup 0"; do
        iters="--iters 20 --warmup 2"; case "$v" in *--iters*) iters="";; esac
        timeout 120 "$B/dlbench" "$M/yolov4.cfg" --weights $W --size 608 --precision fp16 --mode stream \
          --weight-budget min --weights-from storage --zero-copy off --prepared $P --copy-profile "$SPROF" --cold \
          $iters $v --json "$OUT/storage_var_$(echo $v | tr -dc 'a-z0-9').json" \
          >"$OUT/storage_var.txt" 2>&1
        note "storage $v rc=$? $(tail -1 "$OUT/storage_var.txt")"
      done
      "$B/dlrun" "$M/yolov4.cfg" $P "$DLR_SHARED_DIR/images/dog.ppm" --device cuda --precision fp16 --mode stream \
        --weights-from storage --copy-profile "$SPROF" --print-plan --report table --trace "$OUT/trace_storage.json" \
        >"$OUT/dlrun_storage_report.txt" 2>&1
      note "dlrun storage report rc=$?"; grep -E "^total|^read:|^device memory|^note: weights" "$OUT/dlrun_storage_report.txt" | tee -a "$summary"
      unset DLR_CACHE_DIR
      ;;
    models)
      # Issue 12: four detectors on one runtime (one budget, shared arena and workspace, prefetch
      # across inferences) against their own preload sessions, fp16, synthetic weights but
      # yolo-fastest's real ones.
      export DLR_CACHE_DIR=/tmp/dlrcache
      W="$DLR_SHARED_DIR/weights"
      MODELS="$M/yolov4.cfg@608,$M/yolov3.cfg@608,$M/yolov4-tiny.cfg@416,$W/yolo-fastest-1.1.cfg:$W/yolo-fastest-1.1.weights@416"
      timeout 300 "$B/dlbench" --models "$MODELS" --runtime-budget 30%,40%,50%,all --concurrent 200 \
        --json "$OUT/models_fp16.json" >"$OUT/models_fp16.txt" 2>&1
      note "models rc=$?"; cat "$OUT/models_fp16.txt" | tee -a "$summary"
      timeout 120 "$B/dlbench" --models "$MODELS" --runtime-budget 40%,50% --split max-slowdown \
        --json "$OUT/models_fp16_maxslowdown.json" >"$OUT/models_fp16_maxslowdown.txt" 2>&1
      note "models max-slowdown rc=$?"; grep -A6 "^model  " "$OUT/models_fp16_maxslowdown.txt" | tee -a "$summary"
      # The upload timed too (set_input + run(), the preload sessions alike).
      for split in sum max-slowdown; do
        timeout 120 "$B/dlbench" --models "$MODELS" --runtime-budget 40%,50% --time-input --split $split \
          --json "$OUT/models_fp16_timeinput_$split.json" >"$OUT/models_fp16_timeinput_$split.txt" 2>&1
        note "models time-input $split rc=$?"; grep -A4 "^model  " "$OUT/models_fp16_timeinput_$split.txt" | tee -a "$summary"
      done
      timeout 120 "$B/dlbench" --models "$MODELS" --runtime-budget 40% --no-prefetch \
        --json "$OUT/models_fp16_noprefetch.json" >"$OUT/models_fp16_noprefetch.txt" 2>&1
      note "models no prefetch rc=$?"; tail -6 "$OUT/models_fp16_noprefetch.txt" | tee -a "$summary"
      timeout 240 "$B/dlbench" --models "$MODELS" --runtime-budget 40% --iters 5 --warmup 2 --soak 2500 \
        --json "$OUT/models_soak.json" >"$OUT/models_soak.txt" 2>&1
      note "models soak rc=$?"; tail -3 "$OUT/models_soak.txt" | tee -a "$summary"
      unset DLR_CACHE_DIR
      ;;
    upload)
      # Issue 12, the upload in the latency: the four detectors at 40 % (max-slowdown), each
      # inference timed from run() or from its upload, with an f32 tensor (set_input) or a
      # 640x480 8-bit image (set_images, as detect() does), the same frame every time or
      # 16 in turn, the preload sessions alike. UPLOAD_RUNS: INPUT:FROM:FRAMES items; then
      # (UPLOAD_SOAK=1) the 40 % max-slowdown round again in a new process with a soak of
      # 4 threads x 2,500 detect() checked against the single runs.
      export DLR_CACHE_DIR=/tmp/dlrcache
      W="$DLR_SHARED_DIR/weights"
      MODELS="$M/yolov4.cfg@608,$M/yolov3.cfg@608,$M/yolov4-tiny.cfg@416,$W/yolo-fastest-1.1.cfg:$W/yolo-fastest-1.1.weights@416"
      for r in ${UPLOAD_RUNS:-tensor:run:1 tensor:input:1 tensor:input:16 image:input:1 image:input:16}; do
        IFS=: read -r input from frames <<<"$r"
        extra=""; [ "$from" = input ] && extra="--time-input"
        name="upload_${input}_${from}_$frames"
        timeout 150 "$B/dlbench" --models "$MODELS" --runtime-budget "${UPLOAD_BUDGETS:-40%}" --split max-slowdown \
          --input "$input" --frames "$frames" $extra --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1
        note "upload --input $input from $from, $frames frames rc=$?"
        grep -E '^latency|^preload in|^yolo|^model  ' "$OUT/$name.txt" | tee -a "$summary"
      done
      if [ "${UPLOAD_SOAK:-1}" = 1 ]; then
        timeout 200 "$B/dlbench" --models "$MODELS" --runtime-budget 40% --split max-slowdown --soak 2500 \
          --json "$OUT/upload_soak.json" >"$OUT/upload_soak.txt" 2>&1
        note "soak rc=$?"; grep -E '^preload in|^yolo|^model  |^soak' "$OUT/upload_soak.txt" | tee -a "$summary"
      fi
      unset DLR_CACHE_DIR
      ;;
    ring)
      # Issue 12, the shared ring: its GPU tests, then the four detectors with one ring
      # shared by every model against a ring per model, in the same run, at 40 and 50 %.
      # RING_BUDGETS, RING_KINDS, RING_SPLITS, RING_WS (--workspace-limit list),
      # RING_EXTRA (more dlbench arguments, e.g. --time-input), RING_INTERLEAVED=0.
      export DLR_CACHE_DIR=/tmp/dlrcache
      timeout 240 "$B/dlr_gpu_tests" --gtest_filter='RuntimeGpu.*:StreamPrefetch.*' >"$OUT/ring_tests.log" 2>&1
      note "ring gpu tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED  \] [0-9]+ test' "$OUT/ring_tests.log" | tr '\n' ' ')"
      grep -E '^\[  FAILED  \]|Failure|shared ring:|own rings:' "$OUT/ring_tests.log" | head -20 | tee -a "$summary"
      W="$DLR_SHARED_DIR/weights"
      MODELS="$M/yolov4.cfg@608,$M/yolov3.cfg@608,$M/yolov4-tiny.cfg@416,$W/yolo-fastest-1.1.cfg:$W/yolo-fastest-1.1.weights@416"
      for split in ${RING_SPLITS:-sum max-slowdown}; do
        timeout 300 "$B/dlbench" --models "$MODELS" --runtime-budget "${RING_BUDGETS:-40%,50%}" \
          --ring "${RING_KINDS:-shared,per-model}" --split "$split" --workspace-limit "${RING_WS:-default}" ${RING_EXTRA:-} \
          --json "$OUT/ring_fp16_$split.json" >"$OUT/ring_fp16_$split.txt" 2>&1
        note "ring models --split $split rc=$?"
        grep -E '^runtime budget|^yolo|^model  ' "$OUT/ring_fp16_$split.txt" | tee -a "$summary"
      done
      # The same four with each large model after a small one (the order of a round decides
      # which model's run the next one's prefetch overlaps).
      if [ "${RING_INTERLEAVED:-1}" = 1 ]; then
        MODELS2="$M/yolov4.cfg@608,$M/yolov4-tiny.cfg@416,$M/yolov3.cfg@608,$W/yolo-fastest-1.1.cfg:$W/yolo-fastest-1.1.weights@416"
        for split in ${RING_SPLITS:-sum max-slowdown}; do
          timeout 200 "$B/dlbench" --models "$MODELS2" --runtime-budget "${RING_BUDGETS:-40%,50%}" --ring shared \
            --split "$split" --json "$OUT/ring_interleaved_$split.json" >"$OUT/ring_interleaved_$split.txt" 2>&1
          note "ring models interleaved --split $split rc=$?"
          grep -E '^runtime budget|^yolo|^model  ' "$OUT/ring_interleaved_$split.txt" | tee -a "$summary"
        done
      fi
      unset DLR_CACHE_DIR
      ;;
    ttfd)
      # Time to the first detection (issue 15, yolov4 @608 fp16, stream min, from storage):
      # the floor alone, then dlbench twice on fresh caches (cold, then warm: the startup
      # line and results[0].startup of the JSON), then dlrun twice with the debug log's parts.
      export DLR_CACHE_DIR=/tmp/dlrcache-ttfd
      rm -rf "$DLR_CACHE_DIR"
      W=/tmp/y4.weights; P=/tmp/y4-fp16.dlrw
      [ -f $W ] || "$B/dlgen" "$M/yolov4.cfg" $W >/dev/null
      [ -f $P ] || "$B/dlrun" "$M/yolov4.cfg" $W --prepare $P --device cuda --precision fp16 >/dev/null 2>&1
      timeout 60 "$B/dlbench" --startup-floor --json "$OUT/startup_floor.json" >"$OUT/startup_floor.txt" 2>&1
      note "startup floor rc=$? $(cat "$OUT/startup_floor.txt")"
      # warm-warmup: warm caches with the eager warm-up at open (off by default), to compare.
      for run in cold warm warm-warmup; do
        extra=""; [ $run = warm-warmup ] && extra="--warm-up-at-open"
        timeout 120 "$B/dlbench" "$M/yolov4.cfg" --weights $W --size 608 --precision fp16 --mode stream \
          --weight-budget min --weights-from storage --zero-copy off --prepared $P --cache --iters 5 --warmup 1 $extra \
          --json "$OUT/ttfd_bench_$run.json" >"$OUT/ttfd_bench_$run.txt" 2>&1
        note "dlbench startup ($run caches) rc=$? $(grep 'startup:' "$OUT/ttfd_bench_$run.txt")"
      done
      for run in first second; do
        t0=$(date +%s.%N)
        "$B/dlrun" "$M/yolov4.cfg" $P "$DLR_SHARED_DIR/images/dog.ppm" --device cuda --precision fp16 --mode stream \
          --weights-from storage --log-level debug >"$OUT/ttfd_dlrun_$run.txt" 2>&1
        rc=$?; t1=$(date +%s.%N)
        note "dlrun time to first detection ($run run): $(python3 -c "print(round($t1 - $t0, 3))") s rc=$rc"
        grep -E "helper thread|convolutions in|warm-up done|open [0-9.]+ ms|first detect" "$OUT/ttfd_dlrun_$run.txt" \
          | tee -a "$summary"
      done
      unset DLR_CACHE_DIR
      ;;
    startup)
      # Issue 31: time from exec to exit of `dlrun cfg weights image` (yolov4 @608, one
      # detection, caches and page cache warm), ROUNDS rounds alternating the modes and,
      # when device-carry/bin-base/ holds an earlier build, its binaries; then
      # dlbench --startup (the phases, beside the floor) with this build (STARTUP_DLBENCH=0: not).
      export DLR_CACHE_DIR=/tmp/dlrcache-startup
      rm -rf "$DLR_CACHE_DIR"
      W=/tmp/y4.weights; IMG="$DLR_SHARED_DIR/images/dog.ppm"
      [ -f $W ] || "$B/dlgen" "$M/yolov4.cfg" $W >/dev/null
      # new-full: this build with DLR_FULL_EXIT=1 (the models released before exit).
      builds="new"; [ -x "$PWD/device-carry/bin-base/dlrun" ] && builds="base new"
      builds="${STARTUP_BUILDS:-$builds}"
      modes="preload stream-min storage"
      : > "$OUT/startup_runs.txt"
      for round in 0 $(seq 1 ${ROUNDS:-5}); do  # round 0 fills the caches, not counted
        for prec in fp16 fp32; do
          for mode in $modes; do
            for build in $builds; do
              bin="$B"; [ $build = base ] && bin="$PWD/device-carry/bin-base"
              case $mode in
                preload) flags="" ;;
                stream-min) flags="--mode stream --weight-budget min" ;;
                storage) flags="--mode stream --weights-from storage" ;;
              esac
              full=0; [ $build = new-full ] && full=1
              t0=$(date +%s%N)
              DLR_FULL_EXIT=$full "$bin/dlrun" "$M/yolov4.cfg" $W "$IMG" --device cuda --precision $prec $flags \
                >/dev/null 2>"$OUT/startup_err.txt"
              rc=$?; t1=$(date +%s%N)
              echo "$round $build $prec $mode $rc $(( (t1 - t0) / 1000000 ))" >> "$OUT/startup_runs.txt"
              [ $rc = 0 ] || { note "startup: $build $prec $mode rc=$rc"; head -3 "$OUT/startup_err.txt" | tee -a "$summary"; }
            done
          done
        done
        [ $round = 0 ] || timeout 60 "$B/dlbench" --startup-floor --json "$OUT/startup_floor_$round.json" >/dev/null 2>&1
      done
      python3 - "$OUT" <<'PY' | tee -a "$summary"
import json, os, statistics as st, sys
out = sys.argv[1]
rows = {}
for line in open(f"{out}/startup_runs.txt"):
    r, build, prec, mode, rc, ms = line.split()
    if r != "0" and rc == "0": rows.setdefault((prec, mode, build), []).append(int(ms))
floor = [json.load(open(f"{out}/{f}"))["startup_floor"]["process_age_after_ms"] for f in sorted(os.listdir(out)) if f.startswith("startup_floor_")]
if floor: print("floor (dlbench --startup-floor, process age after): median %.0f ms of %d" % (st.median(floor), len(floor)))
for (prec, mode, build), v in sorted(rows.items()):
    print("dlrun exec to exit %-4s %-10s %-4s median %5.0f ms  min %5d  max %5d  (%d runs)" % (prec, mode, build, st.median(v), min(v), max(v), len(v)))
PY
      [ "${STARTUP_DLBENCH:-1}" = 1 ] || { unset DLR_CACHE_DIR; continue; }  # dlrun's timings only
      timeout 400 "$B/dlbench" "$M/yolov4.cfg" --weights $W --size 608 --device cuda --precision fp16,fp32 \
        --mode preload,stream --weight-budget min --cache --startup ${ROUNDS:-5} --json "$OUT/startup_report.json" \
        >"$OUT/startup_report.txt" 2>&1
      note "dlbench --startup rc=$?"; cat "$OUT/startup_report.txt" | tee -a "$summary"
      timeout 200 "$B/dlbench" "$M/yolov4.cfg" --weights $W --size 608 --device cuda --precision fp16,fp32 \
        --mode stream --weights-from storage --cache --startup ${ROUNDS:-5} --json "$OUT/startup_report_storage.json" \
        >"$OUT/startup_report_storage.txt" 2>&1
      note "dlbench --startup (storage) rc=$?"; cat "$OUT/startup_report_storage.txt" | tee -a "$summary"
      unset DLR_CACHE_DIR
      ;;
    plugin)
      # Issue 34 item 5: the CUDA backend loaded when used. dlrun (plugin) on the GPU
      # against the CPU; the library's consumer on the GPU through libdlrun.so; peak RSS
      # of a GPU run from the summary and from the kernel (ru_maxrss after exit).
      IMG="$DLR_SHARED_DIR/images/dog.ppm"; FW="$DLR_SHARED_DIR/weights"
      F="$FW/yolo-fastest-1.1.cfg $FW/yolo-fastest-1.1.weights"
      "$B/dlrun" --version 2>&1 | tee -a "$summary"
      for d in cpu cuda; do
        "$B/dlrun" $F "$IMG" --device $d --precision fp32 --thresh 0.2 --log-level debug >"$OUT/plugin_$d.txt" 2>&1
        note "dlrun --device $d rc=$?"; grep -E '%|loaded the CUDA backend' "$OUT/plugin_$d.txt" | tee -a "$summary"
      done
      LD_LIBRARY_PATH="$B" "$B/consumer_shared" $F cuda 2>&1 | tee -a "$summary"
      note "consumer_shared cuda rc=${PIPESTATUS[0]}"
      W=/tmp/y4.weights; [ -f $W ] || "$B/dlgen" "$M/yolov4.cfg" $W >/dev/null
      for flags in "--device cpu --size 320 --threads 4" "--device cuda --precision fp16" \
                   "--device cuda --precision fp16 --mode stream --weight-budget min"; do
        python3 - "$B/dlrun" "$M/yolov4.cfg" $W "$IMG" $flags --summary always <<'PY' 2>&1 | grep -E 'peak|maxrss' | tee -a "$summary"
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
print("ru_maxrss after exit %.1f MiB: %s" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, " ".join(sys.argv[5:])))
PY
      done
      ;;
    *) note "unknown phase $phase" ;;
  esac
done
