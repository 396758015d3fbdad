//===- InitAll.cpp - dialect registration ---------------------------------===//
#include "compiler/InitAll/InitAll.h"

#include "compiler/Conversion/GraphToExec/Passes.h"
#include "compiler/ExecTransforms/Passes.h"
#include "compiler/Training/Gradients/Gradients.h"
#include "compiler/Training/Passes.h"
#include "dialects/Exec/ExecDialect.h"
#include "dialects/Graph/GraphDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/Passes.h"

void dlc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<dlc::graph::GraphDialect, dlc::exec::ExecDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect>();
  dlc::registerGradientInterfaceExternalModels(registry);
}
