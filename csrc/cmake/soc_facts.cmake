# The NPU SoCs of fla-npu and what the builds need to know of each, in one table for every CMake
# project (the library csrc/, the operator package csrc/opp/, the build information cmake/): per SoC,
# CANN's compute unit (ASCEND_COMPUTE_UNIT), Bisheng's --npu-arch and the lowest CANN version that
# compiles for that architecture. The Python side keeps the same facts in fla_npu/runtime/cann.py (CANN_FLOORS) and
# csrc/tools/op_descriptor.py (SOC_UNITS); tests/packaging/test_wheels.py checks they agree.
set(FLA_NPU_SOCS a2 a3 a5)
set(FLA_NPU_SOC_a2_UNIT ascend910b)
set(FLA_NPU_SOC_a3_UNIT ascend910_93)
set(FLA_NPU_SOC_a5_UNIT ascend950)
set(FLA_NPU_SOC_a2_NPU_ARCH dav-2201)
set(FLA_NPU_SOC_a3_NPU_ARCH dav-2201)
set(FLA_NPU_SOC_a5_NPU_ARCH dav-3510)
set(FLA_NPU_SOC_a2_CANN_FLOOR 9.0.0)
set(FLA_NPU_SOC_a3_CANN_FLOOR 9.0.0)
set(FLA_NPU_SOC_a5_CANN_FLOOR 9.1.0)

# fla_npu_soc_of_unit(<compute unit> <out var>): the SoC (a2, a3, a5) of a CANN compute unit, or "".
function(fla_npu_soc_of_unit unit out)
  set(found "")
  foreach(soc ${FLA_NPU_SOCS})
    if(unit STREQUAL "${FLA_NPU_SOC_${soc}_UNIT}")
      set(found ${soc})
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()
