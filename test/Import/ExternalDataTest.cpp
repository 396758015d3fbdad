//===- ExternalDataTest.cpp - ONNX external data through the C++ API ------===//
//
// What import-external-data.test cannot see from the command line: a large
// f32 initializer's dense_resource blob holds exactly the file's bytes and
// keeps its mapping alive after the file is removed; a model imported from
// bytes refuses external data (it has no folder to read from); and the
// cache key dlc builds from externalDataKey follows the files' contents.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/ONNXImporter.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "onnx/onnx_pb.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace mlir;
namespace gr = dlc::graph;

namespace {

/// A model whose one f32 initializer "w" ([rows, 4]) is in |location| at
/// |offset|, returned as output "y" through Identity.
std::string externalModel(int rows, const std::string &location,
                          int64_t offset) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto *g = model.mutable_graph();
  g->set_name("ext");
  onnx::TensorProto *w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto_DataType_FLOAT);
  w->add_dims(rows);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto *e = w->add_external_data();
  e->set_key("location");
  e->set_value(location);
  e = w->add_external_data();
  e->set_key("offset");
  e->set_value(std::to_string(offset));
  onnx::NodeProto *n = g->add_node();
  n->set_op_type("Identity");
  n->add_input("w");
  n->add_output("y");
  onnx::ValueInfoProto *out = g->add_output();
  out->set_name("y");
  auto *tt = out->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(rows);
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  return model.SerializeAsString();
}

struct TempDir {
  llvm::SmallString<128> path;
  TempDir() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("extdata", path));
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::string file(llvm::StringRef name) const {
    llvm::SmallString<128> p(path);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
  void write(llvm::StringRef name, const std::string &bytes) const {
    std::ofstream(file(name), std::ios::binary) << bytes;
  }
};

std::string floatBytes(int n, float first) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = first + 0.5f * i;
  return std::string(reinterpret_cast<const char *>(v.data()), 4 * n);
}

TEST(ExternalData, ResourceHoldsTheFileBytesAfterTheFileIsGone) {
  TempDir dir;
  // 64 padding bytes, then 4096 floats (16 KiB: mapped, not read).
  std::string data = std::string(64, 'x') + floatBytes(4096, -3.0f);
  dir.write("w.bin", data);
  dir.write("m.onnx", externalModel(1024, "w.bin", 64));
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module =
      dlc::importONNXModel(ctx, dir.file("m.onnx"), dlc::ImportOptions());
  ASSERT_TRUE(module);
  // The blob views the mapping, which the blob keeps alive.
  ASSERT_FALSE(llvm::sys::fs::remove(dir.file("w.bin")));
  auto var = module->lookupSymbol<gr::VariableOp>("w");
  ASSERT_TRUE(var);
  auto res = dyn_cast<DenseResourceElementsAttr>(*var.getInitialValue());
  ASSERT_TRUE(res) << "expected a dense_resource initial value";
  AsmResourceBlob *blob = res.getRawHandle().getBlob();
  ASSERT_NE(blob, nullptr);
  ArrayRef<char> bytes = blob->getData();
  ASSERT_EQ(bytes.size(), 4096u * 4);
  EXPECT_EQ(std::memcmp(bytes.data(), data.data() + 64, bytes.size()), 0);
  EXPECT_FALSE(blob->isMutable());
}

TEST(ExternalData, FromBytesIsAnError) {
  TempDir dir;
  dir.write("w.bin", floatBytes(4096, 1.0f));
  std::string bytes = externalModel(1024, "w.bin", 0);
  MLIRContext ctx;
  std::string message;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  EXPECT_FALSE(dlc::importONNXModelFromBytes(ctx, bytes, dir.file("m.onnx"),
                                             dlc::ImportOptions()));
  EXPECT_EQ(message,
            "initializer 'w' stores its data in an external file ('w.bin'), "
            "which is read only when the model is imported from its file "
            "(the file's folder holds the data)");
}

TEST(ExternalData, KeyFollowsTheContents) {
  TempDir dir;
  std::string model = externalModel(1024, "w.bin", 0);
  // No external data: no key, whatever the bytes.
  EXPECT_EQ(dlc::externalDataKey(dir.file("m.onnx"), "not a model"), "");
  dir.write("w.bin", floatBytes(4096, 1.0f));
  std::string a = dlc::externalDataKey(dir.file("m.onnx"), model);
  EXPECT_NE(a, "");
  EXPECT_EQ(dlc::externalDataKey(dir.file("m.onnx"), model), a);
  dir.write("w.bin", floatBytes(4096, 2.0f)); // same size, other bytes
  std::string b = dlc::externalDataKey(dir.file("m.onnx"), model);
  EXPECT_NE(b, a);
  ASSERT_FALSE(llvm::sys::fs::remove(dir.file("w.bin")));
  EXPECT_EQ(dlc::externalDataKey(dir.file("m.onnx"), model),
            "w.bin\nunreadable\n");
}

} // namespace
