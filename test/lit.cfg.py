# lit configuration for dlc's FileCheck tests (.mlir files and .test scripts).
import os
import lit.formats

config.name = "dlc"
config.test_format = lit.formats.ShTest(not lit_config.isWindows)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dlc_obj_root, "test")

config.environment["PATH"] = os.pathsep.join(
    [config.dlc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%PYTHON", config.python_executable))
# dlc's compile cache (docs/dlc.md) in the build tree, never the user's home
# (lit passes HOME through); tests of the cache pass their own --cache-dir.
config.environment["DLC_CACHE_DIR"] = os.path.join(config.dlc_obj_root, "test", "dlc-cache")
config.environment.pop("DLC_NO_CACHE", None)
config.substitutions.append(("%dlc_src", config.dlc_src_root))
# The system Python with Debian's python3-torch and python3-onnx.
config.substitutions.append(("%syspython", "/usr/bin/python3"))

# "cuda-driver" when libcuda.so.1 can be loaded (a GPU machine): tests of the
# no-driver behaviour are unsupported there, GPU tests need it.
try:
    import ctypes
    ctypes.CDLL("libcuda.so.1")
    config.available_features.add("cuda-driver")
except OSError:
    pass

# The test-only CUDA stand-in (test/cuda-emulation/standin): "%standin" and
# the "cuda-standin" feature when it has been built.
standin = os.path.join(config.dlc_obj_root, "lib", "libdlrt-cuda-standin.so")
config.substitutions.append(("%standin", standin))
if os.path.exists(standin):
    config.available_features.add("cuda-standin")
