//===- BuiltinKernels.h - builtin kernel templates, per family -*- C++ -*-===//
//
// The codegen builders of the dlexec.builtin_kernel template families
// (runtime/schema/BuiltinTemplates.def), one file per family, and the helpers
// they share. buildBuiltinKernel (BuiltinKernels.cpp) reads the op's typed
// parameters once (BuiltinKernelOp::getParams) and dispatches to them with
// their family's member; no builder reads an attribute itself. Each returns
// the template's KernelCode body and thread count; the caller fills in the
// name, parameter types and restrict flags.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CODEGEN_BUILTINKERNELS_H
#define DLC_CODEGEN_BUILTINKERNELS_H

#include "codegen/KernelCode.h"

#include <string>

namespace dlc::codegen::detail {

/// Checks that |op| has |ins| inputs and |outs| outputs (|what| names the
/// roles in the error, e.g. "x -> y") and that every operand has a static
/// shape and the identity layout. The verifier checks the same; this is a
/// defence for builders called on unverified IR.
mlir::LogicalResult expectOperands(exec::BuiltinKernelOp op, size_t ins,
                                   size_t outs, llvm::StringRef what);
/// The C type ("float" or "double") a template computes |v|'s f32/f64
/// elements in: "float" for f16 / bf16 too where the template's row allows
/// them (halfFloats; load and store them with loadExpr / storeExpr); an
/// error at |op| for any other element type.
mlir::FailureOr<std::string> floatElementType(exec::BuiltinKernelOp op,
                                              mlir::Value v);

/// max_pool2d, average_pool2d and their `_grad` forms; |tmpl| is the
/// template name (BuiltinPool.cpp).
mlir::FailureOr<KernelCode> buildPool(exec::BuiltinKernelOp op,
                                      llvm::StringRef tmpl,
                                      const exec::PoolParams &params);
/// softmax, or log_softmax when |isLog| (BuiltinSoftmax.cpp).
mlir::FailureOr<KernelCode> buildSoftmax(exec::BuiltinKernelOp op, bool isLog,
                                         const exec::SoftmaxParams &params);
/// layer_norm over the last axis: y, the row mean and rstd in one pass over
/// x; layer_norm_train also the centered and normalized values
/// (BuiltinLayerNorm.cpp).
mlir::FailureOr<KernelCode> buildLayerNorm(exec::BuiltinKernelOp op,
                                           const exec::LayerNormParams &params);
/// softmax_cross_entropy, or its gradient when |grad| (BuiltinSoftmax.cpp).
mlir::FailureOr<KernelCode>
buildCrossEntropy(exec::BuiltinKernelOp op, bool grad,
                  const exec::CrossEntropyParams &params);
/// dropout (BuiltinDropout.cpp).
mlir::FailureOr<KernelCode> buildDropout(exec::BuiltinKernelOp op,
                                         const exec::DropoutParams &params);
/// gather, or gather_grad when |grad| (BuiltinGather.cpp).
mlir::FailureOr<KernelCode> buildGather(exec::BuiltinKernelOp op, bool grad,
                                        const exec::GatherParams &params);
/// gather_elements, or gather_elements_grad when |grad| (BuiltinGather.cpp).
mlir::FailureOr<KernelCode>
buildGatherElements(exec::BuiltinKernelOp op, bool grad,
                    const exec::GatherParams &params);
/// resize, or resize_grad when |grad| (BuiltinResize.cpp).
mlir::FailureOr<KernelCode> buildResize(exec::BuiltinKernelOp op, bool grad,
                                        const exec::ResizeParams &params);

/// attention, attention_grad_query or attention_grad_key_value (the
/// template |op| names; BuiltinAttention.cpp).
mlir::FailureOr<KernelCode> buildAttention(exec::BuiltinKernelOp op,
                                           const exec::AttentionParams &params);

} // namespace dlc::codegen::detail

#endif
