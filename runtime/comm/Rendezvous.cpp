//===- Rendezvous.cpp - rank and master address from the environment -----===//
#include "runtime/comm/Rendezvous.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace dlrt::comm {

const char *rendezvousSourceName(RendezvousSource source) {
  switch (source) {
  case RendezvousSource::SingleProcess:
    return "single process";
  case RendezvousSource::Torchrun:
    return "torchrun";
  case RendezvousSource::OpenMpi:
    return "Open MPI";
  case RendezvousSource::Slurm:
    return "Slurm";
  }
  return "unknown";
}

std::string Rendezvous::describe() const {
  return "rank " + std::to_string(rank) + " of " + std::to_string(worldSize) +
         " (local " + std::to_string(localRank) + " of " +
         std::to_string(localWorldSize) + ") from " +
         rendezvousSourceName(source) + ", rendezvous at " + masterAddr + ":" +
         std::to_string(masterPort) + (masterDefaulted ? " (default)" : "") +
         (besideAgentStore ? " (MASTER_PORT + 1: torchrun's agent store "
                             "holds MASTER_PORT)"
                           : "");
}

namespace {

using Lookup = std::function<const char *(const char *)>;

Status invalid(std::string message) {
  return Status::error(DLRT_INVALID_ARGUMENT,
                       "bad rendezvous environment: " + std::move(message));
}

/// Parses the whole of |text| as a decimal integer in [lo, hi].
bool parseInt(const char *text, long lo, long hi, int *out) {
  if (!text || !*text)
    return false;
  errno = 0;
  char *end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (errno || *end != '\0' || v < lo || v > hi)
    return false;
  *out = static_cast<int>(v);
  return true;
}

/// Reads variable |name| as an integer >= |lo|; |*found| says whether set.
Status readInt(const Lookup &lookup, const char *name, long lo, int *out,
               bool *found = nullptr) {
  const char *v = lookup(name);
  if (found)
    *found = v != nullptr;
  if (!v)
    return Status::OK();
  if (!parseInt(v, lo, 1L << 30, out))
    return invalid(
        std::string(name) + "='" + v + "' is not a whole number" +
        (lo > 0 ? " >= " + std::to_string(lo) : std::string(" >= 0")));
  return Status::OK();
}

/// The four variable names of one source.
struct Names {
  const char *rank, *size, *localRank, *localSize;
};

Status readSource(const Lookup &lookup, const Names &n, Rendezvous *r) {
  Status st = readInt(lookup, n.rank, 0, &r->rank);
  if (!st.ok())
    return st;
  bool haveSize = false;
  st = readInt(lookup, n.size, 1, &r->worldSize, &haveSize);
  if (!st.ok())
    return st;
  if (!haveSize)
    return invalid(std::string(n.rank) + " is set but " + n.size + " is not");
  if (r->rank >= r->worldSize)
    return invalid(std::string(n.rank) + "=" + std::to_string(r->rank) +
                   " is not below " + n.size + "=" +
                   std::to_string(r->worldSize));
  bool haveLocalRank = false, haveLocalSize = false;
  st = readInt(lookup, n.localRank, 0, &r->localRank, &haveLocalRank);
  if (!st.ok())
    return st;
  if (n.localSize) {
    st = readInt(lookup, n.localSize, 1, &r->localWorldSize, &haveLocalSize);
    if (!st.ok())
      return st;
  }
  if (!haveLocalRank)
    r->localRank = haveLocalSize ? r->rank % r->localWorldSize : r->rank;
  if (!haveLocalSize)
    r->localWorldSize = r->worldSize; // one node
  if (r->localRank >= r->localWorldSize)
    return invalid(std::string(n.localRank) + "=" +
                   std::to_string(r->localRank) + " is not below " +
                   (n.localSize ? n.localSize : "the local world size") + "=" +
                   std::to_string(r->localWorldSize));
  if (r->localWorldSize > r->worldSize)
    return invalid(std::string(n.localSize ? n.localSize : "local size") + "=" +
                   std::to_string(r->localWorldSize) + " exceeds " + n.size +
                   "=" + std::to_string(r->worldSize));
  return Status::OK();
}

} // namespace

Status rendezvousFromEnvironment(const Lookup &lookup, Rendezvous *out) {
  Rendezvous r;
  Status st;
  if (lookup("RANK") || lookup("WORLD_SIZE")) {
    r.source = RendezvousSource::Torchrun;
    if (!lookup("RANK"))
      return invalid("WORLD_SIZE is set but RANK is not");
    st = readSource(
        lookup, {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}, &r);
  } else if (lookup("OMPI_COMM_WORLD_RANK")) {
    r.source = RendezvousSource::OpenMpi;
    st =
        readSource(lookup,
                   {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
                   &r);
  } else if (lookup("SLURM_PROCID")) {
    r.source = RendezvousSource::Slurm;
    // SLURM_NTASKS_PER_NODE is set only with --ntasks-per-node; the
    // always-present SLURM_TASKS_PER_NODE reads like "4(x2),3".
    const char *perNode = lookup("SLURM_NTASKS_PER_NODE");
    std::string leading;
    if (!perNode)
      if (const char *t = lookup("SLURM_TASKS_PER_NODE")) {
        while (*t >= '0' && *t <= '9')
          leading += *t++;
      }
    auto slurmLookup = [&](const char *name) -> const char * {
      if (std::strcmp(name, "SLURM_NTASKS_PER_NODE") == 0)
        return perNode ? perNode
                       : (leading.empty() ? nullptr : leading.c_str());
      return lookup(name);
    };
    st = readSource(slurmLookup,
                    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
                     "SLURM_NTASKS_PER_NODE"},
                    &r);
  }
  if (!st.ok())
    return st;

  const char *addr = lookup("MASTER_ADDR");
  const char *port = lookup("MASTER_PORT");
  if (addr) {
    if (!*addr)
      return invalid("MASTER_ADDR is empty");
    r.masterAddr = addr;
  }
  if (port && !parseInt(port, 1, 65535, &r.masterPort))
    return invalid(std::string("MASTER_PORT='") + port +
                   "' is not a port number (1..65535)");
  r.masterDefaulted = !addr || !port;
  // torchrun's agent (static rendezvous) serves its own TCPStore on
  // MASTER_PORT for the workers' torch.distributed; ours takes the next one.
  const char *agentStore = lookup("TORCHELASTIC_USE_AGENT_STORE");
  if (agentStore && std::strcmp(agentStore, "True") == 0) {
    if (r.masterPort == 65535)
      return invalid("MASTER_PORT=65535 is torchrun's agent store "
                     "(TORCHELASTIC_USE_AGENT_STORE=True) and dlrt's store "
                     "needs MASTER_PORT + 1; choose a lower --master-port");
    r.masterPort += 1;
    r.besideAgentStore = true;
  }
  *out = r;
  return Status::OK();
}

Status rendezvousFromEnvironment(Rendezvous *out) {
  return rendezvousFromEnvironment(
      [](const char *name) -> const char * { return std::getenv(name); }, out);
}

} // namespace dlrt::comm
