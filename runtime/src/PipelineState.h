//===- PipelineState.h - what a session keeps between pipeline steps -*- C++ -*-===//
// The rank's place in the pipeline, the schedule of its stage, and the device
// memory of the micro-batches in flight (Pipeline.cpp runs the steps).
#ifndef DLRT_SRC_PIPELINESTATE_H
#define DLRT_SRC_PIPELINESTATE_H

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/src/Session.h"
#include "runtime/schema/PipelineSchedule.h"

namespace dlrt::exec {

struct Session::PipelineState {
  int32_t stages = 1, replicas = 1;
  /// This rank's stage and replica; with one process (`local`) it runs
  /// every stage itself and stage is unused.
  int32_t stage = 0, replica = 0;
  bool local = false;
  /// Per stage (local) or for this rank's stage only: its actions in order.
  std::vector<std::vector<dlc::exec::PipelineAction>> actions;
  /// Slots of micro-batches in flight: micro-batch m uses slot m % slots.
  int64_t slots = 1;
  /// Per slot, by value name: the forward values a micro-batch keeps from
  /// its forward to its backward (received or its own), and in local mode
  /// also the values in transit between stages.
  std::vector<std::map<std::string, DeviceBuffer>> stash;
  /// By micro-batch parity and name: the gradient a backward sends (stable
  /// until the send ends).
  std::map<std::string, DeviceBuffer> gradientOut[2];
  /// Receive buffers, [0] forward values and [1] gradients, each by
  /// micro-batch parity and name (receives are posted one micro-batch
  /// ahead).
  std::map<std::string, DeviceBuffer> received[2][2];
  /// The replicas of this rank's stage (data parallelism of the stage's
  /// gradients), or null with one replica.
  std::unique_ptr<comm::Communicator> replicaGroup;
  /// Peak bytes of stash slots in use (micro-batches in flight x their
  /// bytes), over all steps.
  int64_t peakStashBytes = 0;
  std::vector<DeviceBuffer> allocations;
  /// Per package buffer: the buffers that share its memory (itself and the
  /// aliases that resolve to it), the pointers a binding changes.
  std::vector<std::vector<uint32_t>> sharers;
  /// Per stage function: the inputs and outputs a run points straight at
  /// the pipeline's memory (received values, stash slots, the global
  /// batch's slice) instead of copying them in and out of the function's
  /// own buffers: those that are not aliases and share their memory with
  /// no other input or output of the function.
  std::map<std::string, std::set<uint32_t>> bindable;
};

} // namespace dlrt::exec

#endif // DLRT_SRC_PIPELINESTATE_H
