# The op descriptors (<op>/<stage>.op.py, paths relative to csrc/; format: tools/op_descriptor.py),
# read by both CMake projects: the library (csrc/) and the operator package (csrc/opp/). The order
# is the operator package's op order (build_wheel's smoke build compiles the first by default).
set(FLA_NPU_OP_DESCRIPTORS gate/gate_cumsum.op.py prefix_shared_attention/prefix_shared_attention.op.py
                           chunk_output/chunk_output.op.py wy_fast/wy_fast.op.py solve_tril/solve_tril.op.py
                           chunk_state/chunk_state.op.py chunk_intra/chunk_intra.op.py
                           chunk_state/chunk_state_output.op.py chunk_state/chunk_forward.op.py
                           chunk_intra/chunk_gate_intra.op.py chunk_state/chunk_gate_forward.op.py)

# fla_npu_generate(<python> <csrc dir> <tool> <args>...): runs tools/<tool> at configure time; a
# failure stops the configure with the generator's message.
function(fla_npu_generate python csrc tool)
  execute_process(COMMAND "${python}" "${csrc}/tools/${tool}" ${ARGN} WORKING_DIRECTORY "${csrc}" RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "tools/${tool} ${ARGN} failed (${status}): see the message above")
  endif()
endfunction()
