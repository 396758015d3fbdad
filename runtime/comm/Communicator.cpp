//===- Communicator.cpp - helpers shared by the communicator backends -----===//
#include "Communicator.h"

#include <cstdio>

namespace dlrt::comm {

size_t dataTypeBytes(DataType type) {
  switch (type) {
  case DataType::F32:
    return 4;
  case DataType::F16:
  case DataType::BF16:
    return 2;
  case DataType::I64:
    return 8;
  }
  return 0;
}

const char *dataTypeName(DataType type) {
  switch (type) {
  case DataType::F32:
    return "f32";
  case DataType::F16:
    return "f16";
  case DataType::BF16:
    return "bf16";
  case DataType::I64:
    return "i64";
  }
  return "?";
}

std::string formatBytes(size_t bytes) {
  char b[32];
  if (bytes < 1024)
    std::snprintf(b, sizeof b, "%zu B", bytes);
  else if (bytes < (1u << 20))
    std::snprintf(b, sizeof b, "%.1f KiB", bytes / 1024.0);
  else if (bytes < (1u << 30))
    std::snprintf(b, sizeof b, "%.1f MiB", bytes / 1048576.0);
  else
    std::snprintf(b, sizeof b, "%.1f GiB", bytes / 1073741824.0);
  return b;
}

namespace {
class FinishedWork : public Work {
public:
  explicit FinishedWork(Status s) : status_(std::move(s)) {}
  Status wait() override { return status_; }

private:
  Status status_;
};
} // namespace

std::shared_ptr<Work> finishedWork(Status status) {
  return std::make_shared<FinishedWork>(std::move(status));
}

} // namespace dlrt::comm
