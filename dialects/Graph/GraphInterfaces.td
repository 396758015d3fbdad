//===- GraphInterfaces.td - dlgraph op traits and interfaces -*- tablegen -*-===//
// What passes ask a dlgraph op instead of keeping lists of op names: whether
// it is elementwise, which precision it runs in under mixed precision, what
// recomputing it costs, and (for ops whose result types follow from their
// operands and attributes) the shared type inference.
#ifndef DLC_DIALECT_GRAPH_INTERFACES_TD
#define DLC_DIALECT_GRAPH_INTERFACES_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// Each result element at flat index i depends only on the operand elements
// at i after NumPy broadcasting of the operands to the result shape (and, for
// dropout's counter-based RNG, on i itself); all results have one shape.
// Unlike MLIR's `Elementwise`, operands may broadcast.
def Graph_Elementwise : NativeOpTrait<"Elementwise"> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}

// Each result element is one element of the one operand at an index that
// is an affine function of the result index, or a constant (transpose,
// broadcast_to, slice, pad): lowered, like elementwise ops, to an
// all-parallel generated kernel, which elementwise fusion can fold into its
// consumer (rematerialization's memory model counts on this).
def Graph_MovesElements : NativeOpTrait<"MovesElements"> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}

// A periodic elementwise function (sin, cos). A float initializer that
// reaches the step's results only through such ops is a positional or rotary
// sin/cos table (a buffer, not a parameter): the training step keeps it
// constant (Differentiate's trainable-set rule).
def Graph_Periodic : NativeOpTrait<"Periodic"> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}

// A softmax along an axis (softmax, log_softmax): it is invariant to adding
// a constant along its axis and turns -inf into 0, so a mask added to its
// input is how attention excludes positions (Differentiate's trainable-set
// rule keeps such masks constant).
def Graph_NormalizesScores : NativeOpTrait<"NormalizesScores"> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}

// An op that normalizes scores inside itself (the fused attention) and
// takes a mask added to, or selecting, those scores before its softmax:
// Differentiate's trainable-set rule treats a value reaching such an
// operand as one reaching a NormalizesScores op's input through an add.
def Graph_ScoreMaskOpInterface : OpInterface<"ScoreMaskOpInterface"> {
  let cppNamespace = "::dlc::graph";
  let description = [{
    Names the operands of an op that mask the scores it normalizes inside
    itself (dlgraph.attention's `mask`).
  }];
  let methods = [
    InterfaceMethod<"Whether |operand| (one of this op's) masks its scores.",
      "bool", "isScoreMask", (ins "::mlir::OpOperand &":$operand)>
  ];
}

// A reduction of its one input (operand 0) over some of its axes, lowered
// to a generated loop kernel over the input's shape that reads each input
// element at its own index: elementwise fusion can fold a producer of the
// input into it (rematerialization's memory model counts on this).
def Graph_Reduction : NativeOpTrait<"Reduction"> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}

//===----------------------------------------------------------------------===//
// Precision class
//===----------------------------------------------------------------------===//

// The three classes of automatic mixed precision, as PyTorch autocast
// (torch.amp "Autocast Op Reference": ops that autocast to lower precision /
// to float32 / that run in the widest input type) and NVIDIA's AMP lists
// (allow / deny / infer lists of the TF-AMP and Apex O1 policies) divide ops.
// Exactly one of these traits is on every dlgraph op; it provides
// `kPrecisionClass`, which PrecisionClassOpInterface returns.
def Graph_LowPrecision : NativeOpTrait<"LowPrecision"> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}
def Graph_KeepsF32 : NativeOpTrait<"KeepsF32"> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}
def Graph_FollowsOperands : NativeOpTrait<"FollowsOperands"> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}
// On a KeepsF32 op: its float data operands may be f16/bf16, which its
// kernel widens as it reads them and computes with in f32 (the softmax
// cross-entropy reads bf16 logits), so mixed precision does not cast them.
// The op states its result types for such operands.
def Graph_ReadsLowPrecision : NativeOpTrait<"ReadsLowPrecision"> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}

def Graph_PrecisionClassOpInterface : OpInterface<"PrecisionClassOpInterface"> {
  let cppNamespace = "::dlc::graph";
  let description = [{
    The precision an op runs in under mixed precision (`--precision`):
    LowPrecision ops (matmul, gemm, conv and their gradients) run in bf16 or
    f16 with f32 accumulation; KeepsF32 ops (reductions that sum many
    elements, softmax, losses, normalization statistics, exp/log/pow and the
    other functions whose range or accuracy needs f32, optimizer updates on
    f32 master weights) run in f32; FollowsOperands ops (data movement,
    relu, add, comparisons, ...) run in the type their operands have.
    Every dlgraph op implements it through exactly one of the traits
    LowPrecision, KeepsF32, FollowsOperands (a compile error otherwise).
  }];
  let methods = [
    InterfaceMethod<"Returns the op's mixed-precision class.",
      "::dlc::graph::PrecisionClass", "getPrecisionClass", (ins), [{}],
      [{ return ConcreteOp::kPrecisionClass; }]>
  ];
}

//===----------------------------------------------------------------------===//
// Recompute cost
//===----------------------------------------------------------------------===//

// A cheap estimate of the work per output element, for rematerialization
// (activation checkpointing) to prefer recomputing cheap values over keeping
// them: Free (no arithmetic: constants, views, reshapes, variable reads),
// Cheap (O(1) per output element: elementwise ops, copies, casts, gathers),
// Moderate (O(reduced extent) per output element: reductions, softmax,
// pooling windows, losses, scatter-adds), Expensive (O(K) multiply-adds per
// output element: gemm, matmul, conv and their gradients), Never (side
// effects: duplicating the op changes what the program does; or a value made
// to be kept for the backward, max_pool_indices, whose recomputation would
// need the input it stands in for). Exactly one of
// these traits is on every dlgraph op; it provides `kRecomputeCost`.
def Graph_RecomputeFree : NativeOpTrait<"RecomputeFree"> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}
def Graph_RecomputeCheap : NativeOpTrait<"RecomputeCheap"> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}
def Graph_RecomputeModerate : NativeOpTrait<"RecomputeModerate"> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}
def Graph_RecomputeExpensive : NativeOpTrait<"RecomputeExpensive"> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}
def Graph_NotRecomputable : NativeOpTrait<"NotRecomputable"> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}

def Graph_RecomputeCostOpInterface : OpInterface<"RecomputeCostOpInterface"> {
  let cppNamespace = "::dlc::graph";
  let description = [{
    A cheap, shape-independent estimate of what recomputing the op's results
    costs per output element (see RecomputeCost), for rematerialization.
    Every dlgraph op implements it through exactly one of the traits
    RecomputeFree, RecomputeCheap, RecomputeModerate, RecomputeExpensive,
    NotRecomputable (a compile error otherwise). An op with
    RecomputeExpensive also defines `int64_t getMultiplyAdds()`, the
    multiply-adds its result takes (M*N*K for a GEMM), from which
    getRecomputeFlops counts.
  }];
  let methods = [
    InterfaceMethod<"Returns the op's recompute-cost class.",
      "::dlc::graph::RecomputeCost", "getRecomputeCost", (ins), [{}],
      [{ return ConcreteOp::kRecomputeCost; }]>,
    InterfaceMethod<[{
        Floating-point operations to compute the op's results once, from its
        shapes (a multiply-add counts 2): Free and Never 0; Cheap one per
        result element; Moderate one per operand and result element;
        Expensive 2 * getMultiplyAdds(). Used to rank what to recompute and
        to report the FLOPs rematerialization adds.
      }],
      "int64_t", "getRecomputeFlops", (ins), [{}],
      [{ return ::dlc::graph::detail::recomputeFlops<ConcreteOp>($_op); }]>
  ];
}

//===----------------------------------------------------------------------===//
// Type inference
//===----------------------------------------------------------------------===//

// InferTypeOpInterface with an adaptor-based `inferReturnTypes` (as MLIR's
// InferTypeOpAdaptor), and the trait InferredResultTypes, which after the
// op's verify() compares the declared result types with the inferred ones
// and reports a mismatch by shape and element type ("result shape is
// [2, 4], expected [2, 5]"). It runs before InferTypeOpInterface's own
// check (trait order), which then always passes, so one mismatch is one
// error. inferReturnTypes only sees, in verification, operands and
// attributes that verify() accepted; called from a builder, it still fails
// cleanly on bad input.
def Graph_InferredResultTypes : NativeOpTrait<"InferredResultTypes", [],
    [{
      static ::llvm::LogicalResult
      inferReturnTypes(::mlir::MLIRContext *context,
                       std::optional<::mlir::Location> location,
                       Adaptor adaptor,
                       ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes);
    }],
    [{
      ::llvm::LogicalResult
      $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
                        std::optional<::mlir::Location> location,
                        ::mlir::ValueRange operands, ::mlir::DictionaryAttr attributes,
                        ::mlir::OpaqueProperties properties, ::mlir::RegionRange regions,
                        ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes) {
        $cppClass::Adaptor adaptor(operands, attributes, properties, regions);
        return $cppClass::inferReturnTypes(context, location, adaptor,
                                           inferredReturnTypes);
      }
    }]> {
  let cppNamespace = "::dlc::graph::GraphTrait";
}

def Graph_InferType : TraitList<[
  Graph_InferredResultTypes,
  DeclareOpInterfaceMethods<InferTypeOpInterface>
]>;

#endif // DLC_DIALECT_GRAPH_INTERFACES_TD
