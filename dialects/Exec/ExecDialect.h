//===- ExecDialect.h - dlexec dialect -----------------------------*- C++ -*-===//
#ifndef DLC_DIALECTS_EXEC_EXECDIALECT_H
#define DLC_DIALECTS_EXEC_EXECDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Dialect.h"

#include "dialects/Exec/ExecDialect.h.inc"

#endif
