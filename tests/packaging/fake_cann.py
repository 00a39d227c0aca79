"""A fake CANN install for testing ./build_wheel's NPU build path without CANN: what that path touches
of CANN, in CANN 9.x's layout, written by this project (nothing of CANN's):

- ``version.info``, ``bin/bisheng`` (never run), ``set_env.sh`` exporting ASCEND_HOME_PATH & co., the
  stub libraries' directory under ``<arch>-linux/devlib`` and an appended ``PYTHONPATH`` entry (an
  empty one when there was none), as the real one does;
- ``lib64/cmake/asc-config.cmake``: an ASC CMake package whose ``npu_op_*`` functions record what
  csrc/opp/ asks for (generator, build type, ops, kernel files, kernel compile options) and give a
  ``binary`` target that runs :data:`COMPILER` with ``python3`` from PATH, as CANN's kernel compile
  runs its op compiler (HI_PYTHON=python3): it imports the Python packages CANN's needs, refuses
  OPS_* variables in its environment and writes an operator package tree, which ``cmake --install``
  installs; ``package`` makes a ``custom_opp_<os>_<arch>.run`` whose installer, like CANN's,
  validates the host libraries by loading them, failing where ``FAKE_CANN_NO_DRIVER=1`` (a container
  without the driver).

Knobs (environment of the build): ``FAKE_CANN_KERNEL_ERROR=<op type>`` makes that kernel's compile fail.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

from fake_opp import FAKE_CANN_LICENSE

ASC_CONFIG = r"""# fla-npu's test stand-in for CANN's ASC CMake package (records calls; compiles nothing).
set(FAKE_ASC_DIR "${CMAKE_CURRENT_LIST_DIR}")
set(FAKE_ASC_RECORD "${CMAKE_BINARY_DIR}/fake_asc_record.json.lines")
file(WRITE "${FAKE_ASC_RECORD}" "")
set(ASCEND_AUTOGEN_PATH "${CMAKE_BINARY_DIR}/autogen")
function(fake_asc_record key value)
  string(REPLACE "\"" "'" value "${value}")
  file(APPEND "${FAKE_ASC_RECORD}" "{\"${key}\": \"${value}\"}\n")
endfunction()
fake_asc_record(generator "${CMAKE_GENERATOR}")
fake_asc_record(build_type "${CMAKE_BUILD_TYPE}")
fake_asc_record(compute_unit "${ASCEND_COMPUTE_UNIT}")
fake_asc_record(vendor "${vendor_name}")
fake_asc_record(python "${ASCEND_PYTHON_EXECUTABLE}")
fake_asc_record(configure_ops_project_name "$ENV{OPS_PROJECT_NAME}")
function(npu_op_package name)
  fake_asc_record(package "${name}")
  install(DIRECTORY "${CMAKE_BINARY_DIR}/fake_out/packages" DESTINATION .)
  add_custom_target(package COMMAND bash "${FAKE_ASC_DIR}/fake_make_run.sh" "${CMAKE_BINARY_DIR}" VERBATIM)
endfunction()
function(npu_op_code_gen)
  cmake_parse_arguments(A "" "PACKAGE;OUT_DIR" "SRC;COMPILE_OPTIONS" ${ARGN})
  foreach(f IN LISTS A_SRC)
    if(NOT EXISTS "${f}")
      message(FATAL_ERROR "fake ASC: npu_op_code_gen: no source ${f}")
    endif()
    fake_asc_record(code_gen_src "${f}")
  endforeach()
endfunction()
function(npu_op_library name type)
  fake_asc_record(library "${name} ${type}")
  file(WRITE "${CMAKE_BINARY_DIR}/fake_asc_empty.c" "")
  add_library(${name} STATIC EXCLUDE_FROM_ALL "${CMAKE_BINARY_DIR}/fake_asc_empty.c")  # takes the project's options
endfunction()
function(npu_op_kernel_sources target)
  cmake_parse_arguments(A "" "OP_TYPE;KERNEL_FILE" "" ${ARGN})
  set_property(GLOBAL APPEND PROPERTY FAKE_ASC_KERNELS "${A_OP_TYPE}|${A_KERNEL_FILE}")
endfunction()
function(npu_op_kernel_options target op)
  cmake_parse_arguments(A "" "" "COMPUTE_UNIT;OPTIONS" ${ARGN})
  fake_asc_record(kernel_options "${op} ${A_OPTIONS}")
endfunction()
function(npu_op_kernel_library target)
  cmake_parse_arguments(A "" "SRC_BASE;TILING_LIBRARY" "" ${ARGN})
  get_property(kernels GLOBAL PROPERTY FAKE_ASC_KERNELS)
  foreach(k IN LISTS kernels)  # CANN takes KERNEL_FILE relative to SRC_BASE
    string(REPLACE "|" ";" k "${k}")
    list(GET k 0 op)
    list(GET k 1 file)
    if(NOT EXISTS "${A_SRC_BASE}/${file}")
      message(FATAL_ERROR "fake ASC: no kernel file ${file} under SRC_BASE ${A_SRC_BASE}")
    endif()
    fake_asc_record(kernel "${op} ${A_SRC_BASE}/${file}")
  endforeach()
  add_custom_target(binary COMMAND python3 "${FAKE_ASC_DIR}/fake_asc_compiler.py" "${CMAKE_BINARY_DIR}" VERBATIM)
endfunction()
function(npu_op_package_add name)
  fake_asc_record(package_add "${name} ${ARGN}")
endfunction()
"""

# The "kernel compiler": run as `python3` from PATH at build time.
COMPILER = r'''import json, os, re, sys
from pathlib import Path
import numpy, decorator, attr, psutil  # what CANN's op compiler imports (fails here as it would there)
build = Path(sys.argv[1])
leaked = [k for k in ("OPS_PROJECT_NAME", "OPS_ACLNN_GEN", "ASCEND_CUSTOM_OPP_PATH") if k in os.environ]
if leaked:
    sys.exit(f"fake ASC: {', '.join(leaked)} in the kernel compiler's environment")
record = [json.loads(line) for line in (build / "fake_asc_record.json.lines").read_text().splitlines()]
first = {}
for r in record:
    for k, v in r.items():
        first.setdefault(k, v)
unit, vendor = first["compute_unit"], first["vendor"]
kernels = [r["kernel"].split(" ", 1) for r in record if "kernel" in r]
root = build / "fake_out" / "packages" / "vendors" / vendor
for op, src in kernels:
    if os.environ.get("FAKE_CANN_KERNEL_ERROR") == op:
        sys.exit(f"{src}:1:1: error: fake kernel compile error in {op}")
    snake = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", op).lower()
    (root / "op_impl/ai_core/tbe/kernel" / unit / snake).mkdir(parents=True, exist_ok=True)
    (root / "op_impl/ai_core/tbe/kernel" / unit / snake / f"{op}_0.o").write_bytes(b"\x7fELF fake")
    (root / "op_api/include").mkdir(parents=True, exist_ok=True)
    (root / "op_api/include" / f"aclnn_{snake}.h").write_text("/* fake */\n")
(root / "op_api/lib").mkdir(parents=True, exist_ok=True)
(root / "op_api/lib/libcust_opapi.so").write_bytes(b"fake")
(build / "fake_out" / "compile.json").write_text(json.dumps(
    {"python": sys.executable, "ops": [op for op, _ in kernels], "environ_pythonpath": os.environ.get("PYTHONPATH")}))
'''

MAKE_RUN = r'''#!/bin/bash
# Writes custom_opp_<os>_<arch>.run: an installer that validates the host libraries by loading them
# (fails where FAKE_CANN_NO_DRIVER=1), then copies the vendors to --install-path.
set -e
build="$1"
run="$build/custom_opp_linux_$(uname -m).run"
cat > "$run" <<EOF
#!/bin/bash
target=""
for a in "\$@"; do case "\$a" in --install-path=*) target="\${a#--install-path=}";; esac; done
if [ -n "\$ASCEND_HOME_PATH" ] && [ "\${FAKE_CANN_NO_DRIVER:-0}" = 1 ]; then
  echo "[ERROR] validate_so_dlopen: libcust_opmaster_rt2.0.so: libdrvdsmi_host.so: cannot open shared object file" >&2
  exit 1
fi
mkdir -p "\$target/vendors"
cp -r "$build/fake_out/packages/vendors/." "\$target/vendors/"
EOF
chmod +x "$run"
'''


def make_fake_cann(home: Path, version: str = "9.0.0", set_env_home: str | None = None) -> Path:
    """Write a fake CANN at ``home``; ``set_env_home`` makes its set_env.sh name another home."""
    arch = platform.machine()
    (home / "bin").mkdir(parents=True, exist_ok=True)
    (home / "bin" / "bisheng").write_text("#!/bin/sh\necho 'fake bisheng: never run by the tests' >&2; exit 1\n")
    (home / "bin" / "bisheng").chmod(0o755)
    (home / "version.info").write_text(f"Version={version}\n")
    (home / "share" / "info").mkdir(parents=True, exist_ok=True)
    (home / "share" / "info" / "LICENSE").write_text(FAKE_CANN_LICENSE)  # found by build_wheel within three levels
    devlib = home / f"{arch}-linux" / "devlib"
    devlib.mkdir(parents=True, exist_ok=True)
    where = set_env_home or '$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)'
    (home / "set_env.sh").write_text(
        f'_cann="{where}"\n'
        'export ASCEND_HOME_PATH="$_cann" ASCEND_TOOLKIT_HOME="$_cann" ASCEND_OPP_PATH="$_cann/opp"\n'
        'export PATH="$_cann/bin:$PATH"\n'
        f'export LD_LIBRARY_PATH="$_cann/lib64:$_cann/{arch}-linux/devlib:$LD_LIBRARY_PATH"\n'
        'export PYTHONPATH="$_cann/python/site-packages:$PYTHONPATH"\n'
        'export CMAKE_PREFIX_PATH="$_cann/lib64/cmake:$CMAKE_PREFIX_PATH"\n')
    cmake = home / "lib64" / "cmake"
    cmake.mkdir(parents=True, exist_ok=True)
    (cmake / "asc-config.cmake").write_text(ASC_CONFIG)
    (cmake / "fake_asc_compiler.py").write_text(COMPILER)
    (cmake / "fake_make_run.sh").write_text(MAKE_RUN)
    return home


def python_stubs(root: Path, modules=("numpy", "decorator", "attr", "psutil")) -> Path:
    """A directory of empty modules, for PYTHONPATH: stand-ins of the packages CANN's compiler imports."""
    root.mkdir(parents=True, exist_ok=True)
    for m in modules:
        (root / f"{m}.py").write_text("")
    return root


def record(build_dir: Path) -> list:
    """What the fake ASC package recorded at configure time, in order: [(key, value), ...]."""
    lines = (build_dir / "fake_asc_record.json.lines").read_text().splitlines()
    return [next(iter(json.loads(line).items())) for line in lines]
