//===- ExecDialect.cpp - dlexec dialect registration ------------------------===//
#include "dialects/Exec/ExecDialect.h"
#include "dialects/Exec/ExecOps.h"

using namespace mlir;
using namespace dlc::exec;

#include "dialects/Exec/ExecDialect.cpp.inc"

void ExecDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Exec/ExecOps.cpp.inc"
      >();
}
