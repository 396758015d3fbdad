//===- Communicator.cpp - helpers shared by the communicator backends -----===//
#include "runtime/comm/Communicator.h"

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

Status nameGroup(const std::vector<int> &ranks,
                 const std::vector<int> &parentJobRanks,
                 const std::string &parentBroken,
                 const std::string &parentPrefix,
                 std::map<std::vector<int>, int> &counts,
                 std::vector<int> *jobRanks, std::string *prefix) {
  jobRanks->clear();
  std::string list;
  for (int r : ranks) {
    jobRanks->push_back(parentJobRanks[static_cast<size_t>(r)]);
    list += (list.empty() ? "" : ",") + std::to_string(r);
  }
  if (!parentBroken.empty())
    return Status::error(DLRT_UNAVAILABLE,
                         "cannot create the communicator of ranks " +
                             formatRanks(*jobRanks) +
                             ": its parent is broken (" + parentBroken + ")");
  *prefix = parentPrefix + "group/" + list + "/" +
            std::to_string(counts[ranks]++) + "/";
  return Status::OK();
}

std::string formatRanks(const std::vector<int> &ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i)
    s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

Status Communicator::createGroup(const std::vector<int> &ranks, int groupRank,
                                 std::unique_ptr<Communicator> *out) {
  (void)groupRank;
  (void)out;
  return Status::error(DLRT_INVALID_ARGUMENT,
                       std::string("the ") + backend() +
                           " communicator cannot make the group of ranks " +
                           formatRanks(ranks));
}

Status createSubCommunicator(Communicator &parent,
                             const std::vector<int> &ranks,
                             std::unique_ptr<Communicator> *out) {
  out->reset();
  const int size = parent.size();
  if (ranks.empty())
    return Status::error(DLRT_INVALID_ARGUMENT,
                         "a sub-communicator needs at least one rank");
  std::vector<bool> seen(size_t(size), false);
  int groupRank = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    if (r < 0 || r >= size)
      return Status::error(
          DLRT_INVALID_ARGUMENT,
          "sub-communicator ranks " + formatRanks(ranks) + ": " +
              std::to_string(r) + " is not a rank of the parent's " +
              std::to_string(size) + " (0.." + std::to_string(size - 1) + ")");
    if (seen[size_t(r)])
      return Status::error(DLRT_INVALID_ARGUMENT,
                           "sub-communicator ranks " + formatRanks(ranks) +
                               ": rank " + std::to_string(r) +
                               " appears twice");
    seen[size_t(r)] = true;
    if (r == parent.rank())
      groupRank = int(i);
  }
  if (groupRank < 0)
    return Status::OK(); // not a member: nothing to make, nobody to wait for
  return parent.createGroup(ranks, groupRank, out);
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
