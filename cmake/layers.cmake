# The layers of collkit, bottom first, and what each folder may use: include
# headers of and link against. This is the one place the direction is
# written: CMakeLists.txt links every folder's library from it, and
# tests/layers/check_includes.cmake (a ctest test, so CI runs it) fails on any
# #include that goes against it. docs/ARCHITECTURE.md explains each layer.
#
# A folder may use the folders listed for it and, through them, nothing else:
# every use is listed explicitly (no transitive permission). Subfolders belong
# to their folder (realrun/device is realrun). Folders not listed here (cli,
# tests, fuzz, bench) are programs on top and may use every layer.
set(COLLKIT_LAYERS core algorithms topologies sim realrun reports calibration planner interop tuner
                   whatif)

set(COLLKIT_USES_core "")
set(COLLKIT_USES_algorithms core)
set(COLLKIT_USES_topologies core)
set(COLLKIT_USES_sim core algorithms topologies)
set(COLLKIT_USES_realrun core algorithms)
set(COLLKIT_USES_reports core algorithms topologies sim realrun)
set(COLLKIT_USES_calibration core algorithms topologies sim reports)
set(COLLKIT_USES_planner core algorithms topologies sim)
set(COLLKIT_USES_interop core algorithms)
# tuner/plugin (the NCCL tuner .so) compiles tuner_model.cc alone: core/error.h only.
set(COLLKIT_USES_tuner core algorithms topologies sim)
set(COLLKIT_USES_whatif core algorithms topologies sim reports planner)
