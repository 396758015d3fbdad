//===- Memory.cpp - part of libdlrt-cuda-standin.so (placeholder) ---------===//
#include "Standin.h"
