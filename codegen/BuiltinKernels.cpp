//===- BuiltinKernels.cpp - builtin kernel templates: dispatch ------------===//
//
// Each template is C code for one thread with the op's shapes and attributes
// baked in; both targets print it (see KernelCode.h). The templates are
// listed once, in runtime/schema/BuiltinTemplates.def, whose verifier checks
// every op before codegen; this file dispatches on the template's family to
// the family's file (BuiltinPool.cpp, BuiltinSoftmax.cpp, BuiltinLayerNorm.cpp,
// BuiltinDropout.cpp, BuiltinGather.cpp, BuiltinResize.cpp).
//
//===----------------------------------------------------------------------===//
#include "codegen/BuiltinKernels.h"

using namespace mlir;

namespace dlc::codegen::detail {

LogicalResult expectOperands(exec::BuiltinKernelOp op, size_t ins, size_t outs,
                             StringRef what) {
  if (op.getInputs().size() != ins || op.getOutputs().size() != outs)
    return op.emitOpError()
           << "template '" << op.getTemplateName() << "' expects " << ins
           << " inputs and " << outs << " outputs (" << what << "), got "
           << op.getInputs().size() << " and " << op.getOutputs().size();
  for (Value v : op->getOperands()) {
    auto type = cast<MemRefType>(v.getType());
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return op.emitOpError() << "operand of type " << type
                              << " must have a static shape and the identity "
                                 "layout";
  }
  return success();
}

FailureOr<std::string> floatElementType(exec::BuiltinKernelOp op, Value v) {
  Type elem = cast<MemRefType>(v.getType()).getElementType();
  if (elem.isF32())
    return std::string("float");
  if (elem.isF64())
    return std::string("double");
  const exec::BuiltinTemplateInfo *info = op.getTemplateInfo();
  if (info && info->halfFloats && isHalfFloat(elem))
    return std::string("float");
  return op.emitOpError() << "template '" << op.getTemplateName()
                          << "' supports f32 and f64"
                          << (info && info->halfFloats ? ", f16 and bf16" : "")
                          << ", got " << elem;
}

FailureOr<KernelCode> buildBuiltinKernel(exec::BuiltinKernelOp op) {
  // The verifier has checked the op against its template's row and family;
  // the builders below keep their shape checks as a defence only. getParams
  // fails (with the verifier's error) for an unknown template too.
  FailureOr<exec::BuiltinKernelParams> params = op.getParams();
  if (failed(params))
    return failure();
  const exec::BuiltinTemplateInfo *info = op.getTemplateInfo();
  StringRef tmpl = info->name;
  bool grad = info->isGradient;
  FailureOr<KernelCode> code = failure();
  switch (info->family) {
  case exec::BuiltinFamily::Pool:
    code = buildPool(op, tmpl, params->pool);
    break;
  case exec::BuiltinFamily::Softmax:
    code = buildSoftmax(op, tmpl == "log_softmax", params->softmax);
    break;
  case exec::BuiltinFamily::LayerNorm:
    code = buildLayerNorm(op, params->layerNorm);
    break;
  case exec::BuiltinFamily::CrossEntropy:
    code = buildCrossEntropy(op, grad, params->crossEntropy);
    break;
  case exec::BuiltinFamily::Dropout:
    code = buildDropout(op, params->dropout);
    break;
  case exec::BuiltinFamily::Resize:
    code = buildResize(op, grad, params->resize);
    break;
  case exec::BuiltinFamily::Gather:
    code = buildGather(op, grad, params->gather);
    break;
  case exec::BuiltinFamily::GatherElements:
    code = buildGatherElements(op, grad, params->gather);
    break;
  case exec::BuiltinFamily::Attention:
    code = buildAttention(op, params->attention);
    break;
  }
  if (failed(code))
    return failure();
  code->name = sanitizeName(op.getSymName());
  for (Value v : op->getOperands()) {
    Type elem = cast<MemRefType>(v.getType()).getElementType();
    // Templates that accept f16 / bf16 (the verifier's rule) copy them as
    // stored.
    auto cType = cStorageType(elem);
    if (failed(cType))
      return op.emitOpError()
             << "element type " << elem << " is not supported by codegen";
    code->paramTypes.push_back(*cType);
    code->usesF16 |= elem.isF16();
    code->usesBF16 |= elem.isBF16();
  }
  code->restrictParam = restrictFlags(op, op->getOperands());
  return code;
}

} // namespace dlc::codegen::detail
