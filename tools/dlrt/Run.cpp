//===- Run.cpp - `dlrt run`: one forward pass from .npz to .npz -----------===//
#include "Commands.h"
#include "Common.h"

#include "runtime/data/Npy.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace dlrt::cli {

int runRun(const RunOptions &o) {
  if (!o.memoryReport.empty())
    checkReportPath(o.memoryReport);
  ContextPtr context = openContext(o.device, /*announce=*/false);
  ModelPtr model = loadModel(context.get(), o.package);
  if (!dlrt_model_has_function(model.get(), "forward"))
    fail("'" + o.package + "' has no forward function");
  std::vector<data::NamedArray> arrays;
  std::string err;
  if (!data::readNpz(o.inputs, arrays, err))
    fail(err);

  SessionPtr session = createSession(model.get());
  std::vector<uint8_t> staging;
  for (const dlrt_tensor_info_t &info : inputInfos(model.get(), "forward")) {
    const data::NamedArray *a =
        data::findArray(arrays, info.name, o.inputs, err);
    if (!a)
      fail(err + "; forward needs '" + info.name + "' " + describe(info));
    // The whole array is one batch: its shape must be the input's exactly
    // (same element count and the same first dimension).
    bool same = a->array.numel() == numel(info) &&
                (info.rank == 0 || (!a->array.shape.empty() &&
                                    a->array.shape[0] == info.shape[0]));
    if (!same)
      fail(o.inputs + ": array '" + info.name + "' has shape " +
           data::shapeString(a->array.shape) + "; forward input '" + info.name +
           "' is " + describe(info) +
           " (the package was compiled for this batch size)");
    staging.resize(byteSize(info));
    data::convertElements(a->array.data.data(), a->array.dtype, staging.data(),
                          toDataType(info.dtype),
                          static_cast<size_t>(numel(info)));
    check(dlrt_session_set_input(session.get(), "forward", info.name,
                                 staging.data(), staging.size()));
  }
  check(dlrt_session_run(session.get(), "forward"));

  std::vector<data::NamedArray> results;
  // Read the outputs before any repeat: the outputs are the first run's.
  for (const dlrt_tensor_info_t &info : outputInfos(model.get(), "forward")) {
    data::NamedArray r;
    r.name = info.name;
    r.array.dtype = toDataType(info.dtype);
    r.array.shape.assign(info.shape, info.shape + info.rank);
    r.array.data.resize(byteSize(info));
    check(dlrt_session_get_output(session.get(), "forward", info.name,
                                  r.array.data.data(), r.array.data.size()));
    results.push_back(std::move(r));
  }
  if (o.repeat > 0) {
    std::vector<double> ms;
    for (int64_t i = 0; i < o.repeat; ++i) {
      auto start = std::chrono::steady_clock::now();
      check(dlrt_session_run(session.get(), "forward"));
      ms.push_back(std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start)
                       .count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("forward: %lld runs, median %.4f ms, fastest %.4f ms\n",
                static_cast<long long>(o.repeat), ms[ms.size() / 2],
                ms.front());
  }
  if (!data::writeNpz(o.outputs, results, err))
    fail(err);
  std::printf("wrote %zu output(s) to %s\n", results.size(), o.outputs.c_str());
  if (!o.memoryReport.empty())
    reportMemory(context.get(), session.get(), o.memoryReport,
                 /*quiet=*/false);
  return 0;
}

} // namespace dlrt::cli
