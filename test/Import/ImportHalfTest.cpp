//===- ImportHalfTest.cpp - The importer's f16/bf16 constants vs CUDA -----===//
//
// What the ONNX importer folds into FLOAT16/BFLOAT16 constants must equal what
// the run-time kernels compute, bit for bit, and those convert as CUDA does.
// Checked here against CUDA's own host implementation (cuda_fp16.h and
// cuda_bf16.h, compiled by the host compiler): a Cast of a constant f32
// tensor to f16/bf16 folds to __float2half_rn / __float2bfloat16_rn of every
// element (round to nearest even, overflow to infinity, subnormals), a Cast
// of a constant f16/bf16 tensor to f32 folds to __half2float /
// __bfloat162float (exact), 16-bit initializers keep every bit pattern in
// both encodings, and casts involving a NaN are left to the kernels.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/ONNXImporter.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"

#include "onnx/onnx_pb.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace mlir;
namespace gr = dlc::graph;

namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t cudaHalfBits(float f) {
  __half_raw r = __float2half_rn(f);
  return r.x;
}

uint16_t cudaBfloat16Bits(float f) {
  __nv_bfloat16_raw r = __float2bfloat16_rn(f);
  return r.x;
}

float cudaHalfToFloat(uint16_t bits) {
  __half_raw r;
  r.x = bits;
  return __half2float(__half(r));
}

float cudaBfloat16ToFloat(uint16_t bits) {
  __nv_bfloat16_raw r;
  r.x = bits;
  return __bfloat162float(__nv_bfloat16(r));
}

bool isHalfNaN(uint16_t b) { return (b & 0x7c00) == 0x7c00 && (b & 0x3ff); }
bool isBfloat16NaN(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f); }

/// A model whose output "y" ([n], element type |outType|) is `Cast(to =
/// outType)` of |source| (a Constant node's value, or an initializer).
std::string castModel(const onnx::TensorProto &source, bool asInitializer,
                      int outType) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto *g = m.mutable_graph();
  g->set_name("half_fold");
  if (asInitializer) {
    *g->add_initializer() = source;
  } else {
    onnx::NodeProto *c = g->add_node();
    c->set_op_type("Constant");
    c->set_name("c");
    c->add_output(source.name());
    onnx::AttributeProto *a = c->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
    *a->mutable_t() = source;
  }
  onnx::NodeProto *n = g->add_node();
  n->set_name("cast");
  n->add_input(source.name());
  n->add_output("y");
  if (outType == source.data_type()) {
    n->set_op_type("Identity");
  } else {
    n->set_op_type("Cast");
    onnx::AttributeProto *to = n->add_attribute();
    to->set_name("to");
    to->set_type(onnx::AttributeProto_AttributeType_INT);
    to->set_i(outType);
  }
  onnx::ValueInfoProto *out = g->add_output();
  out->set_name("y");
  auto *tt = out->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(outType);
  tt->mutable_shape()->add_dim()->set_dim_value(source.dims(0));
  return m.SerializeAsString();
}

onnx::TensorProto f32Tensor(const std::vector<float> &values) {
  onnx::TensorProto t;
  t.set_name("x");
  t.set_data_type(onnx::TensorProto_DataType_FLOAT);
  t.add_dims((int64_t)values.size());
  for (float v : values)
    t.add_float_data(v);
  return t;
}

/// A FLOAT16/BFLOAT16 tensor of |bits|, in raw_data or in int32_data.
onnx::TensorProto halfTensor(const std::vector<uint16_t> &bits, int type,
                             bool raw) {
  onnx::TensorProto t;
  t.set_name("x");
  t.set_data_type(type);
  t.add_dims((int64_t)bits.size());
  if (raw) {
    std::string bytes;
    for (uint16_t b : bits) {
      bytes.push_back((char)(b & 0xff));
      bytes.push_back((char)(b >> 8));
    }
    t.set_raw_data(bytes);
  } else {
    for (uint16_t b : bits)
      t.add_int32_data(b);
  }
  return t;
}

/// Imports |bytes| and returns the op that defines the graph output, or null
/// (with a test failure) when the import fails.
Operation *importOutput(MLIRContext &ctx, OwningOpRef<ModuleOp> &module,
                        const std::string &bytes) {
  module = dlc::importONNXModelFromBytes(ctx, bytes, "half_fold.onnx",
                                         dlc::ImportOptions());
  if (!module) {
    ADD_FAILURE() << "the import failed";
    return nullptr;
  }
  auto main = module->lookupSymbol<func::FuncOp>("main");
  auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
  return ret.getOperand(0).getDefiningOp();
}

/// The folded output's elements as raw bit patterns (16 or 32 bits wide).
std::vector<uint32_t> foldedBits(Operation *op) {
  std::vector<uint32_t> bits;
  auto c = dyn_cast_or_null<gr::ConstantOp>(op);
  if (!c) {
    ADD_FAILURE() << "the output is not folded to a dlgraph.constant";
    return bits;
  }
  for (const APFloat &v :
       cast<DenseElementsAttr>(c.getValue()).getValues<APFloat>())
    bits.push_back((uint32_t)v.bitcastToAPInt().getZExtValue());
  return bits;
}

/// Finite and infinite f32 values that exercise the rounding of both 16-bit
/// formats: at every exponent, the mantissas just below, at and above the
/// halfway points of f16 (13 dropped bits) and bf16 (16 dropped bits) with
/// even and odd kept parts, both signs; then random bit patterns. No NaNs.
std::vector<float> roundingInputs() {
  std::vector<uint32_t> mantissas = {
      0,       1,        0x7fffff, 0x0fff,   0x1000,  0x1001,  0x2fff,
      0x3000,  0x3001,   0x7fff,   0x8000,   0x8001,  0x17fff, 0x18000,
      0x18001, 0x400000, 0x401000, 0x3ff000, 0x7fe000};
  std::vector<float> values;
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t e = 0; e <= 255; ++e)
      for (uint32_t m : mantissas)
        if (e < 255 || m == 0) // infinities, no NaNs
          values.push_back(floatOf(sign | (e << 23) | m));
  std::mt19937 rng(20261124);
  while (values.size() < 150000) {
    float f = floatOf(rng());
    if (!std::isnan(f))
      values.push_back(f);
  }
  return values;
}

TEST(ImportHalf, CastToFloat16FoldsLikeFloat2HalfRn) {
  MLIRContext ctx;
  std::vector<float> in = roundingInputs();
  OwningOpRef<ModuleOp> module;
  Operation *out =
      importOutput(ctx, module,
                   castModel(f32Tensor(in), /*asInitializer=*/false,
                             onnx::TensorProto_DataType_FLOAT16));
  std::vector<uint32_t> bits = foldedBits(out);
  ASSERT_EQ(bits.size(), in.size());
  int mismatches = 0;
  for (size_t i = 0; i < in.size() && mismatches < 10; ++i)
    if (bits[i] != cudaHalfBits(in[i])) {
      ++mismatches;
      ADD_FAILURE() << "f32 0x" << std::hex << bitsOf(in[i])
                    << " folded to f16 0x" << bits[i] << ", CUDA gives 0x"
                    << cudaHalfBits(in[i]);
    }
}

TEST(ImportHalf, CastToBfloat16FoldsLikeFloat2Bfloat16Rn) {
  MLIRContext ctx;
  std::vector<float> in = roundingInputs();
  OwningOpRef<ModuleOp> module;
  Operation *out =
      importOutput(ctx, module,
                   castModel(f32Tensor(in), /*asInitializer=*/false,
                             onnx::TensorProto_DataType_BFLOAT16));
  std::vector<uint32_t> bits = foldedBits(out);
  ASSERT_EQ(bits.size(), in.size());
  int mismatches = 0;
  for (size_t i = 0; i < in.size() && mismatches < 10; ++i)
    if (bits[i] != cudaBfloat16Bits(in[i])) {
      ++mismatches;
      ADD_FAILURE() << "f32 0x" << std::hex << bitsOf(in[i])
                    << " folded to bf16 0x" << bits[i] << ", CUDA gives 0x"
                    << cudaBfloat16Bits(in[i]);
    }
}

/// Every non-NaN 16-bit pattern of one format, widened to f32 by a folded
/// Cast of a constant initializer, against CUDA's widening.
void checkWidening(int type, bool (*isNaN)(uint16_t),
                   float (*cudaWiden)(uint16_t)) {
  std::vector<uint16_t> patterns;
  for (uint32_t b = 0; b <= 0xffff; ++b)
    if (!isNaN((uint16_t)b))
      patterns.push_back((uint16_t)b);
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  Operation *out = importOutput(
      ctx, module,
      castModel(halfTensor(patterns, type, /*raw=*/true),
                /*asInitializer=*/true, onnx::TensorProto_DataType_FLOAT));
  std::vector<uint32_t> bits = foldedBits(out);
  ASSERT_EQ(bits.size(), patterns.size());
  int mismatches = 0;
  for (size_t i = 0; i < patterns.size() && mismatches < 10; ++i)
    if (bits[i] != bitsOf(cudaWiden(patterns[i]))) {
      ++mismatches;
      ADD_FAILURE() << "0x" << std::hex << patterns[i] << " widened to 0x"
                    << bits[i] << ", CUDA gives 0x"
                    << bitsOf(cudaWiden(patterns[i]));
    }
}

TEST(ImportHalf, CastFromFloat16FoldsExactly) {
  checkWidening(onnx::TensorProto_DataType_FLOAT16, isHalfNaN, cudaHalfToFloat);
}

TEST(ImportHalf, CastFromBfloat16FoldsExactly) {
  checkWidening(onnx::TensorProto_DataType_BFLOAT16, isBfloat16NaN,
                cudaBfloat16ToFloat);
}

/// Every 16-bit pattern (NaNs included) survives an initializer in both
/// encodings and the Identity that outputs it.
TEST(ImportHalf, InitializersKeepEveryBitPattern) {
  std::vector<uint16_t> patterns;
  for (uint32_t b = 0; b <= 0xffff; ++b)
    patterns.push_back((uint16_t)b);
  for (int type : {onnx::TensorProto_DataType_FLOAT16,
                   onnx::TensorProto_DataType_BFLOAT16})
    for (bool raw : {true, false}) {
      MLIRContext ctx;
      OwningOpRef<ModuleOp> module;
      Operation *out = importOutput(ctx, module,
                                    castModel(halfTensor(patterns, type, raw),
                                              /*asInitializer=*/true, type));
      std::vector<uint32_t> bits = foldedBits(out);
      ASSERT_EQ(bits.size(), patterns.size());
      for (size_t i = 0; i < patterns.size(); ++i)
        ASSERT_EQ(bits[i], patterns[i])
            << "type " << type << (raw ? " raw_data" : " int32_data");
    }
}

/// Casts with a NaN on either side stay dlgraph.cast: the kernels' NaNs
/// (0x7FFF; 0x7FFFFFFF when widened) are not APFloat's.
TEST(ImportHalf, CastsOfNaNAreLeftToTheKernels) {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  Operation *narrow =
      importOutput(ctx, module,
                   castModel(f32Tensor({1.0f, NAN}), /*asInitializer=*/false,
                             onnx::TensorProto_DataType_FLOAT16));
  EXPECT_TRUE(isa_and_nonnull<gr::CastOp>(narrow));
  OwningOpRef<ModuleOp> module2;
  Operation *widen = importOutput(
      ctx, module2,
      castModel(halfTensor({0x3c00, 0x7e00}, onnx::TensorProto_DataType_FLOAT16,
                           /*raw=*/true),
                /*asInitializer=*/true, onnx::TensorProto_DataType_FLOAT));
  EXPECT_TRUE(isa_and_nonnull<gr::CastOp>(widen));
  // Without the NaN, the same cast folds.
  OwningOpRef<ModuleOp> module3;
  Operation *folded = importOutput(
      ctx, module3,
      castModel(halfTensor({0x3c00, 0x7c00}, onnx::TensorProto_DataType_FLOAT16,
                           /*raw=*/true),
                /*asInitializer=*/true, onnx::TensorProto_DataType_FLOAT));
  EXPECT_EQ(foldedBits(folded),
            (std::vector<uint32_t>{0x3f800000u, 0x7f800000u}));
}

} // namespace
