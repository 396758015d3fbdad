//===- Rendezvous.h - who this rank is and where rank 0 listens -*- C++ -*-===//
// The rank, world size and master address of this process, read from the
// environment that torchrun, Open MPI's mpirun or Slurm's srun sets.
#ifndef DLRT_COMM_RENDEZVOUS_H
#define DLRT_COMM_RENDEZVOUS_H

#include <functional>
#include <string>

#include "runtime/device/Device.h"

namespace dlrt::comm {

/// Where the rendezvous values came from.
enum class RendezvousSource {
  SingleProcess, ///< nothing set: rank 0 of 1
  Torchrun,      ///< RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_*
  OpenMpi,       ///< OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}
  Slurm,         ///< SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, ...
};

/// "single process", "torchrun", "Open MPI", "Slurm" (for messages).
const char *rendezvousSourceName(RendezvousSource source);

/// This process's place in the job.
struct Rendezvous {
  int rank = 0;           ///< 0 .. worldSize-1
  int worldSize = 1;      ///< number of processes in the job
  int localRank = 0;      ///< 0 .. localWorldSize-1, index on this node
  int localWorldSize = 1; ///< processes on this node
  /// Host name or address of rank 0, which hosts the TCP store
  /// (TcpStore.h); MASTER_ADDR, else 127.0.0.1.
  std::string masterAddr = "127.0.0.1";
  /// TCP port of the store on masterAddr; MASTER_PORT, else 29500
  /// (torchrun's default). Under torchrun's static rendezvous
  /// (TORCHELASTIC_USE_AGENT_STORE=True) torchrun's agent already serves
  /// its own store on MASTER_PORT, so ours is MASTER_PORT + 1.
  int masterPort = 29500;
  /// True when masterPort is MASTER_PORT + 1 because torchrun's agent store
  /// holds MASTER_PORT.
  bool besideAgentStore = false;
  /// True when MASTER_ADDR or MASTER_PORT was unset and its default used.
  bool masterDefaulted = true;
  RendezvousSource source = RendezvousSource::SingleProcess;

  /// One line for logs, e.g. "rank 1 of 4 (local 1 of 4) from torchrun,
  /// rendezvous at 127.0.0.1:29500".
  std::string describe() const;
};

/// Reads the rendezvous from the environment, trying in this order and
/// taking the first whose rank variable is set:
///  1. torchrun: RANK, WORLD_SIZE (both required), LOCAL_RANK,
///     LOCAL_WORLD_SIZE (default: RANK and WORLD_SIZE, one node);
///  2. Open MPI: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
///     OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE;
///  3. Slurm: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and
///     SLURM_NTASKS_PER_NODE (else the leading number of
///     SLURM_TASKS_PER_NODE, else 1);
///  4. none of these: a single process (rank 0 of 1).
/// MASTER_ADDR and MASTER_PORT are read for every source (defaults
/// 127.0.0.1 and 29500); when TORCHELASTIC_USE_AGENT_STORE is "True"
/// (torchrun, torch.distributed.run, with its default static rendezvous,
/// whose agent hosts a store on MASTER_PORT) the store port is MASTER_PORT
/// + 1 (an error when MASTER_PORT is 65535). On error |*out| is left unchanged.
/// Errors (DLRT_INVALID_ARGUMENT, one line naming the variables and values): a
/// value that is not a whole number, WORLD_SIZE < 1, RANK >= WORLD_SIZE,
/// LOCAL_RANK >= LOCAL_WORLD_SIZE, a missing WORLD_SIZE (or size variable
/// of MPI/Slurm), a port outside 1..65535, an empty MASTER_ADDR.
Status rendezvousFromEnvironment(Rendezvous *out);

/// The same with |lookup| in place of std::getenv (null = unset); for tests.
Status rendezvousFromEnvironment(
    const std::function<const char *(const char *)> &lookup, Rendezvous *out);

} // namespace dlrt::comm

#endif
