# Sources compiled on their own in a unity build (TPURUN_UNITY): their
# file-local helpers (anonymous namespaces, `using` aliases) share names with
# another file's. Renaming them would also do; this list keeps the code as the
# style guide has it (short local names) and costs only these files' time.
function(tpurun_unity_skip dir)
  foreach(f ${ARGN})
    set_source_files_properties(${PROJECT_SOURCE_DIR}/${dir}/${f} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endforeach()
endfunction()

# Files of src/ that a build compiles alone when it asks: scripts/mutants
# changes them one at a time, and each then recompiles by itself, not with
# the eleven others of its batch.
set(TPURUN_UNITY_ALONE "" CACHE STRING "Files of src/ compiled on their own in a unity build (scripts/mutants)")

set(TPURUN_UNITY_SKIP_SRC
  cloud/up.cpp pod/placement.cpp pod/tpu_recreate.cpp pod/jsonc.cpp pod/config.cpp
  runs/follow/follow_loop.cpp runs/recreate/recreate.cpp runs/recreate/recreate_rules.cpp
  runs/stage/stage.cpp runs/stage/stage_start.cpp
  runs/watcher/gang.cpp runs/watcher/log_mirror.cpp runs/watcher/records_verdict.cpp
  runs/watcher/restart_check.cpp runs/watcher/restart_codes.cpp
  staging/push.cpp staging/size_guard.cpp staging/snapshot.cpp staging/snapshot_build.cpp
  staging/snapshot_name.cpp staging/tree_walk.cpp staging/worker_gc.cpp
  tpu/stale_lock.cpp tpu/kill_workers.cpp
  tpu/scan_script.cpp tpu/profile_listener.cpp
  ui/status_table.cpp ui/top_watch.cpp)

set(TPURUN_UNITY_SKIP_TESTS
  fanout/follow_status_test.cpp pod/config_fuzz_test.cpp
  runs/launch/multislice_launch_test.cpp runs/record/multislice_record_test.cpp
  runs/watcher/gang_stop_test.cpp runs/watcher/gang_test.cpp runs/watcher/stall_test.cpp
  tpu/metrics_fetch_test.cpp tpu/metrics_proto_test.cpp tpu/profile_capture_test.cpp
  tpu/profile_proto_test.cpp tpu/top_look_test.cpp ui/top_view_test.cpp
  transport/kept_connections_test.cpp)
