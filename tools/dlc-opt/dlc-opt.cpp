//===- dlc-opt.cpp - MlirOptMain with dlc's dialects and passes -------------===//
#include "compiler/InitAll/InitAll.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  dlc::registerAllDialects(registry);
  dlc::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "dlc optimizer driver\n", registry));
}
