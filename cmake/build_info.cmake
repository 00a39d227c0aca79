# Build information of an fla-npu build, written into the package as fla_npu/_build_info.json and
# fla_npu/_flavours/<flavour>.json (the marker that lets the runtime refuse two flavours installed over
# each other: their _build_info.json overwrite each other, their markers do not). Included by the
# top-level CMakeLists.txt after the kernels are configured; every build writes it, `pip install .`
# included. Values that only the build driver knows (distribution name, CANN version, operator
# package) come as -D definitions from ./build_wheel; without them they default to the sim build.

set(FLA_NPU_DIST_NAME "" CACHE STRING "Distribution name of the wheel (build_wheel sets it; default fla-npu / fla-npu-<soc>)")
set(FLA_NPU_CANN_VERSION "" CACHE STRING "CANN version used for an NPU build (build_wheel sets it)")
set(FLA_NPU_CANN_FLOOR "" CACHE STRING "Lowest CANN version the NPU flavour runs with")
set(FLA_NPU_BUILD_DRIVER "cmake" CACHE STRING "What drove the build (build_wheel, pip, cibuildwheel)")
set(FLA_NPU_BUILD_DEBUG OFF CACHE BOOL "Debug build of the kernels")
include(${PROJECT_SOURCE_DIR}/csrc/cmake/soc_facts.cmake)

if(FLA_NPU_TARGET STREQUAL "sim")
  set(_flavour "sim")
  set(_soc "sim-${FLA_NPU_SIM_SOC}")
  set(_default_dist "fla-npu")
else()
  set(_flavour "${FLA_NPU_TARGET}")
  set(_soc "${FLA_NPU_TARGET}")
  set(_default_dist "fla-npu-${FLA_NPU_TARGET}")
  if(NOT FLA_NPU_CANN_FLOOR)
    set(FLA_NPU_CANN_FLOOR "${FLA_NPU_SOC_${FLA_NPU_TARGET}_CANN_FLOOR}")
  endif()
endif()
if(NOT FLA_NPU_DIST_NAME)
  set(FLA_NPU_DIST_NAME "${_default_dist}")
endif()

# Source revision: the git commit of a checkout, or the one an sdist recorded in SOURCE_REVISION.
set(_rev "unknown")
set(_dirty "null")
set(_rev_from "none")
if(EXISTS "${PROJECT_SOURCE_DIR}/.git")
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${PROJECT_SOURCE_DIR}" rev-parse HEAD
                    OUTPUT_VARIABLE _git_rev OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _git_rc ERROR_QUIET)
    if(_git_rc EQUAL 0)
      set(_rev "${_git_rev}")
      set(_rev_from "git")
      execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${PROJECT_SOURCE_DIR}" status --porcelain --untracked-files=no
                      OUTPUT_VARIABLE _git_status OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(_git_status)
        set(_dirty "true")
      else()
        set(_dirty "false")
      endif()
    endif()
  endif()
elseif(EXISTS "${PROJECT_SOURCE_DIR}/SOURCE_REVISION")
  file(STRINGS "${PROJECT_SOURCE_DIR}/SOURCE_REVISION" _lines)
  foreach(_l IN LISTS _lines)
    if(_l MATCHES "^commit=(.*)$")
      set(_rev "${CMAKE_MATCH_1}")
      set(_rev_from "sdist")
    elseif(_l MATCHES "^dirty=(true|false)$")
      set(_dirty "${CMAKE_MATCH_1}")
    endif()
  endforeach()
endif()

# Compiler of the library (the C++ compiler of csrc/: the kernels on the host simulation for sim, the
# aclnn bridge for an NPU flavour, whose kernels are in the operator package).
set(_compiler "none")
set(FLA_NPU_NPU_ARCH_OUT "")
if(TARGET fla_npu_kernels)
  get_directory_property(FLA_NPU_NPU_ARCH_OUT DIRECTORY csrc DEFINITION FLA_NPU_NPU_ARCH)
  get_directory_property(_cxx_id DIRECTORY csrc DEFINITION CMAKE_CXX_COMPILER_ID)
  get_directory_property(_cxx_ver DIRECTORY csrc DEFINITION CMAKE_CXX_COMPILER_VERSION)
  get_directory_property(_cxx DIRECTORY csrc DEFINITION CMAKE_CXX_COMPILER)
  set(_compiler "${_cxx_id} ${_cxx_ver} (${_cxx})")
  if(NOT FLA_NPU_TARGET STREQUAL "sim")
    if(FLA_NPU_OPP_PREBUILT)
      string(APPEND _compiler ": aclnn bridge; kernels: prebuilt operator package embedded")
    elseif(FLA_NPU_OPP_DIR)
      string(APPEND _compiler ": aclnn bridge; kernels: operator package built by csrc/opp/")
    else()
      string(APPEND _compiler ": aclnn bridge; no operator package embedded")
    endif()
  endif()
endif()

string(TIMESTAMP _date "%Y-%m-%dT%H:%M:%SZ" UTC)  # honours SOURCE_DATE_EPOCH
set(_opts "FLA_NPU_TARGET=${FLA_NPU_TARGET}")
if(FLA_NPU_TARGET STREQUAL "sim")
  string(APPEND _opts " FLA_NPU_SIM_SOC=${FLA_NPU_SIM_SOC}")
endif()
string(APPEND _opts " CMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE} FLA_NPU_BUILD_DEBUG=${FLA_NPU_BUILD_DEBUG}")
if(FLA_NPU_OPP_DIR)
  string(APPEND _opts " FLA_NPU_OPP_VENDOR=${FLA_NPU_OPP_VENDOR}")
endif()

function(_fla_json_str out value)  # a JSON string literal, or null for an empty value
  if("${value}" STREQUAL "")
    set(${out} "null" PARENT_SCOPE)
  else()
    string(REPLACE "\\" "\\\\" value "${value}")
    string(REPLACE "\"" "\\\"" value "${value}")
    set(${out} "\"${value}\"" PARENT_SCOPE)
  endif()
endfunction()

set(_fields "")
foreach(_pair
    "distribution=${FLA_NPU_DIST_NAME}" "version=${SKBUILD_PROJECT_VERSION}" "flavour=${_flavour}" "soc=${_soc}"
    "npu_arch=${FLA_NPU_NPU_ARCH_OUT}" "source_revision=${_rev}" "source_revision_from=${_rev_from}"
    "cann_version=${FLA_NPU_CANN_VERSION}" "cann_floor=${FLA_NPU_CANN_FLOOR}" "compiler=${_compiler}"
    "build_type=${CMAKE_BUILD_TYPE}" "build_options=${_opts}" "build_driver=${FLA_NPU_BUILD_DRIVER}"
    "build_date=${_date}" "host_arch=${CMAKE_HOST_SYSTEM_PROCESSOR}" "opp_vendor=${FLA_NPU_OPP_VENDOR}")
  string(FIND "${_pair}" "=" _eq)
  string(SUBSTRING "${_pair}" 0 ${_eq} _k)
  math(EXPR _vs "${_eq} + 1")
  string(SUBSTRING "${_pair}" ${_vs} -1 _v)
  _fla_json_str(_j "${_v}")
  string(APPEND _fields "  \"${_k}\": ${_j},\n")
endforeach()
string(APPEND _fields "  \"source_dirty\": ${_dirty}\n")
set(FLA_NPU_BUILD_INFO_FILE "${CMAKE_BINARY_DIR}/_build_info.json")
file(WRITE "${FLA_NPU_BUILD_INFO_FILE}" "{\n${_fields}}\n")
install(FILES "${FLA_NPU_BUILD_INFO_FILE}" DESTINATION fla_npu)
install(FILES "${FLA_NPU_BUILD_INFO_FILE}" DESTINATION fla_npu/_flavours RENAME "${_flavour}.json")
message(STATUS "fla-npu build info: ${FLA_NPU_DIST_NAME} ${_flavour} (${_soc}), source ${_rev} (${_rev_from}), compiler ${_compiler}")
