//===- Options.cpp - dlc's flags, each declared once ----------------------===//
#include "compiler/Driver/Driver.h"

#include "compiler/Import/ONNXImporter.h"

#include "llvm/Config/llvm-config.h"

using namespace dlc;

std::string dlc::versionString() {
  return "dlc 0.1 (package format " +
         std::to_string(codegen::kFormatVersion) + ", MLIR " +
         LLVM_VERSION_STRING + ")";
}

std::string dlc::toolOverview() {
  auto [oldest, newest] = supportedOpsets();
  return "dlc: compiles an ONNX model (opsets " + std::to_string(oldest) +
         " to " + std::to_string(newest) +
         ") or a dlgraph .mlir file into a package for dlrt.\n\n"
         "  dlc model.onnx --batch-size 64 -o model.dlcp            "
         "(inference)\n"
         "  dlc model.onnx --train --optimizer adam --lr 1e-3 --batch-size 64 "
         "-o model.dlcp\n"
         "  dlc model.onnx --check        (list the ops and their support)\n";
}

void CompileOptions::bindOptions(OptionsBinder &b) {
  namespace cl = llvm::cl;
  b.opt("o", outputPath,
        "Output file (default: <model>.dlcp for packages, stdout for --emit "
        "other than package)",
        cl::value_desc("path"));
  b.opt("emit", emit, "What to produce (default: package)",
        cl::values(
            clEnumValN(EmitKind::DLGraph, "dlgraph",
                       "the dlgraph module after import (and --train)"),
            clEnumValN(EmitKind::DLExec, "dlexec",
                       "the planned dlexec module"),
            clEnumValN(EmitKind::Cuda, "cuda", "CUDA C++ of every kernel"),
            clEnumValN(EmitKind::Host, "host", "host C++ of every kernel"),
            clEnumValN(EmitKind::Plan, "plan",
                       "the execution plan: steps, buffers, offsets"),
            clEnumValN(EmitKind::Package, "package",
                       "a .dlcp package for dlrt")));
  b.opt("compile-to", compileTo,
        "Stop after this phase of the pipeline and write its module: "
        "graph-fusion, partitioning, training-step, mixed-precision, "
        "rematerialization, "
        "graph-to-exec, exec-transforms or memory-planning (docs/dlc.md)",
        cl::value_desc("PHASE"));
  b.opt("batch-size", batchSize,
        "Batch size; fixes dim 0 of every model input");
  b.list("input-shape", inputShapes,
         "Fixes the shape of graph input NAME (repeatable): each D a size, or "
         "? to keep the model's dimension; sets symbolic dimensions (sequence "
         "length, image size) that --batch-size does not",
         cl::value_desc("NAME=D0xD1x..."));
  b.list("input-value", inputValues,
         "Gives graph input NAME its value at compile time (repeatable; FILE "
         "an ONNX TensorProto .pb or a NumPy .npy): it becomes a constant and "
         "leaves the step's inputs. For inputs that fix shapes or axes (axes, "
         "pads, sizes, shape, k)",
         cl::value_desc("NAME=FILE"));
  b.list("target", cudaArchs,
         "CUDA architectures to compile kernels for with NVRTC and embed "
         "(e.g. sm_80,sm_90); without it the runtime compiles them on first "
         "use",
         cl::CommaSeparated);
  b.opt("host-compiler", hostCompiler,
        "C++ compiler for the host kernels (default {default})");
  b.opt("cache-dir", cacheDir,
        "Folder of the compile cache (compiled host objects and cubins, "
        "keyed by their source, compiler and flags, and whole packages); "
        "default $DLC_CACHE_DIR, else $XDG_CACHE_HOME/dlc, else ~/.cache/dlc. "
        "After each compile the least recently used entries are removed "
        "while it holds more than $DLC_CACHE_MAX_SIZE (default 5G; 0: no "
        "limit)",
        cl::value_desc("DIR"));
  b.opt("no-cache", noCache,
        "Compile every kernel; read and write no compile cache (also "
        "$DLC_NO_CACHE=1 when no --cache-dir is given)");
  b.opt("jobs", jobs,
        "Parallel compile jobs: host compiler processes and NVRTC threads "
        "(default 0: one per core)");
  b.opt("time-phases", timePhases,
        "Print the wall time of each compile phase (import, pass pipelines, "
        "kernel generation, host compile, NVRTC, package write) and the "
        "compile cache's hits to stderr; --mlir-timing times each pass");
  b.opt("quiet", quiet, "Print no progress");
  b.opt("check", check,
        "List every op of the ONNX model with its support status, then try "
        "importing it; compiles nothing. Exit status 0 when everything is "
        "supported");
  b.opt("simulate", simulate,
        "With --pipeline-stages: run the schedule on the cost model and "
        "print per-stage busy time, bubble, memory and step time instead of "
        "writing a package");
  b.opt("replicas", replicas,
        "With --simulate: data-parallel replicas of every stage (S x D "
        "devices; default {default})",
        cl::value_desc("D"));
  b.opt("simulate-trace", simulateTrace,
        "With --simulate: write the simulated timeline as a Chrome trace "
        "(Perfetto, chrome://tracing)",
        cl::value_desc("FILE.json"));
  b.opt("stage-times", stageTimes,
        "With --simulate: measured per-stage times (JSON) to use instead of "
        "the cost model's",
        cl::value_desc("FILE.json"));
  pipeline.bindOptions(b);
}
