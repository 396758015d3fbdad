//===- DifferentiableOpInterface.cpp - reverse-mode rules -----------------===//
// The generated definitions of the dlgraph differentiation interface; the
// rules themselves are external models in compiler/Training/Gradients/.
#include "dialects/Graph/DifferentiableOpInterface.h"

#include "dialects/Graph/DifferentiableOpInterface.cpp.inc"
