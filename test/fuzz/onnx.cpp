//===- onnx.cpp - fuzz target: ONNX bytes -> dlgraph import ----------------===//
// importONNXModelFromBytes: protobuf parsing, the model checks and the
// import to dlgraph, including the module verifier (no passes, no codegen).
// Every input gets a fresh MLIRContext so that what one input uniqued
// (attributes, types) neither accumulates nor changes how the next imports.
// Diagnostics are swallowed; an import that fails must have emitted one.
//
// Byte mutations rarely keep a protobuf valid, so a custom mutator also
// edits parsed models through protobuf reflection: one scalar (a dim, an
// attribute, a data type, an opset), string (a name, an op type) or
// repeated element (a node, an input, a dim) at a time.
#include "compiler/Import/ONNXImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "onnx/onnx_pb.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  bool sawError = false;
  mlir::ScopedDiagnosticHandler quiet(&context, [&](mlir::Diagnostic &d) {
    sawError |= d.getSeverity() == mlir::DiagnosticSeverity::Error;
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = dlc::importONNXModelFromBytes(
      context, llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "fuzz.onnx", dlc::ImportOptions());
  if (!module && !sawError) {
    std::fprintf(stderr, "onnx: the import failed without an error\n");
    std::abort();
  }
  return 0;
}

// The custom mutator needs libFuzzer (LLVMFuzzerMutate); StandaloneMain
// builds only replay inputs.
#ifdef DLC_LIBFUZZER
extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size,
                                   size_t maxSize);

namespace {
namespace pb = google::protobuf;

/// One place in a model a mutation can change: field |field| of |msg|, at
/// |index| for a repeated field (-1 otherwise).
struct Site {
  pb::Message *msg;
  const pb::FieldDescriptor *field;
  int index;
};

void collect(pb::Message *msg, std::vector<Site> &sites,
             std::vector<std::string> &strings) {
  const pb::Reflection *r = msg->GetReflection();
  const pb::Descriptor *d = msg->GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor *f = d->field(i);
    bool isMessage = f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE;
    if (f->is_repeated()) {
      int n = r->FieldSize(*msg, f);
      sites.push_back({msg, f, -1}); // add / remove an element
      for (int k = 0; k < n; ++k) {
        if (isMessage)
          collect(r->MutableRepeatedMessage(msg, f, k), sites, strings);
        else
          sites.push_back({msg, f, k});
        if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING &&
            f->type() != pb::FieldDescriptor::TYPE_BYTES)
          strings.push_back(r->GetRepeatedString(*msg, f, k));
      }
    } else if (isMessage) {
      if (r->HasField(*msg, f))
        collect(r->MutableMessage(msg, f), sites, strings);
    } else {
      sites.push_back({msg, f, -1});
      if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING &&
          f->type() != pb::FieldDescriptor::TYPE_BYTES)
        strings.push_back(r->GetString(*msg, f));
    }
  }
}

int64_t mutateInt(int64_t v, std::minstd_rand &rng) {
  static const int64_t kInteresting[] = {
      0, 1, -1, 2, -2, 3, 4, 7, 8, 16, 255, 256, 65536, INT32_MAX, INT32_MIN,
      int64_t(1) << 32, int64_t(1) << 40, std::numeric_limits<int64_t>::max(),
      std::numeric_limits<int64_t>::min()};
  uint64_t u = static_cast<uint64_t>(v); // wraps instead of overflowing
  switch (rng() % 4) {
  case 0:
    return kInteresting[rng() % (sizeof(kInteresting) / sizeof(int64_t))];
  case 1:
    return static_cast<int64_t>(u + rng() % 5 - 2);
  case 2:
    return static_cast<int64_t>(0 - u);
  default:
    return static_cast<int64_t>(u * 2);
  }
}

double mutateFloat(double v, std::minstd_rand &rng) {
  static const double kInteresting[] = {
      0.0, -0.0, 1.0, -1.0, 0.5, 1e-30, 1e30, std::nan(""),
      std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity()};
  return rng() % 2 ? kInteresting[rng() % 10] : v * 2 + 1;
}

/// Applies one mutation to |m|; false when it found nothing to change.
bool mutateModel(onnx::ModelProto &m, std::minstd_rand &rng) {
  std::vector<Site> sites;
  std::vector<std::string> strings;
  collect(&m, sites, strings);
  if (sites.empty())
    return false;
  Site s = sites[rng() % sites.size()];
  const pb::Reflection *r = s.msg->GetReflection();
  const pb::FieldDescriptor *f = s.field;
  if (f->is_repeated() && s.index < 0) {
    int n = r->FieldSize(*s.msg, f);
    if (n > 0 && rng() % 2) { // remove one element (swap it to the end)
      r->SwapElements(s.msg, f, rng() % n, n - 1);
      r->RemoveLast(s.msg, f);
      return true;
    }
    if (n == 0)
      return false;
    // Duplicate one element at the end.
    int k = rng() % n;
    switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      r->AddMessage(s.msg, f)->CopyFrom(r->GetRepeatedMessage(*s.msg, f, k));
      break;
    case pb::FieldDescriptor::CPPTYPE_INT64:
      r->AddInt64(s.msg, f, r->GetRepeatedInt64(*s.msg, f, k));
      break;
    case pb::FieldDescriptor::CPPTYPE_INT32:
      r->AddInt32(s.msg, f, r->GetRepeatedInt32(*s.msg, f, k));
      break;
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
      r->AddFloat(s.msg, f, r->GetRepeatedFloat(*s.msg, f, k));
      break;
    case pb::FieldDescriptor::CPPTYPE_STRING:
      r->AddString(s.msg, f, r->GetRepeatedString(*s.msg, f, k));
      break;
    default:
      return false;
    }
    return true;
  }
  bool rep = f->is_repeated();
  int k = s.index;
  switch (f->cpp_type()) {
  case pb::FieldDescriptor::CPPTYPE_INT64: {
    int64_t v = rep ? r->GetRepeatedInt64(*s.msg, f, k) : r->GetInt64(*s.msg, f);
    v = mutateInt(v, rng);
    rep ? r->SetRepeatedInt64(s.msg, f, k, v) : r->SetInt64(s.msg, f, v);
    return true;
  }
  case pb::FieldDescriptor::CPPTYPE_INT32: {
    int32_t v = rep ? r->GetRepeatedInt32(*s.msg, f, k) : r->GetInt32(*s.msg, f);
    v = static_cast<int32_t>(mutateInt(v, rng));
    rep ? r->SetRepeatedInt32(s.msg, f, k, v) : r->SetInt32(s.msg, f, v);
    return true;
  }
  case pb::FieldDescriptor::CPPTYPE_UINT64: {
    uint64_t v =
        rep ? r->GetRepeatedUInt64(*s.msg, f, k) : r->GetUInt64(*s.msg, f);
    v = static_cast<uint64_t>(mutateInt(static_cast<int64_t>(v), rng));
    rep ? r->SetRepeatedUInt64(s.msg, f, k, v) : r->SetUInt64(s.msg, f, v);
    return true;
  }
  case pb::FieldDescriptor::CPPTYPE_FLOAT: {
    float v = rep ? r->GetRepeatedFloat(*s.msg, f, k) : r->GetFloat(*s.msg, f);
    v = static_cast<float>(mutateFloat(v, rng));
    rep ? r->SetRepeatedFloat(s.msg, f, k, v) : r->SetFloat(s.msg, f, v);
    return true;
  }
  case pb::FieldDescriptor::CPPTYPE_DOUBLE: {
    double v =
        rep ? r->GetRepeatedDouble(*s.msg, f, k) : r->GetDouble(*s.msg, f);
    v = mutateFloat(v, rng);
    rep ? r->SetRepeatedDouble(s.msg, f, k, v) : r->SetDouble(s.msg, f, v);
    return true;
  }
  case pb::FieldDescriptor::CPPTYPE_ENUM: {
    const pb::EnumDescriptor *e = f->enum_type();
    int v = e->value(rng() % e->value_count())->number();
    rep ? r->SetRepeatedEnumValue(s.msg, f, k, v) : r->SetEnumValue(s.msg, f, v);
    return true;
  }
  case pb::FieldDescriptor::CPPTYPE_BOOL:
    if (!rep)
      r->SetBool(s.msg, f, !r->GetBool(*s.msg, f));
    return !rep;
  case pb::FieldDescriptor::CPPTYPE_STRING: {
    std::string v;
    if (f->type() == pb::FieldDescriptor::TYPE_BYTES) {
      // raw_data: resize or flip a byte.
      v = rep ? r->GetRepeatedString(*s.msg, f, k) : r->GetString(*s.msg, f);
      if (!v.empty() && rng() % 2)
        v[rng() % v.size()] ^= static_cast<char>(1 + rng() % 255);
      else
        v.resize(rng() % 2 ? v.size() / 2 : v.size() + 1 + rng() % 8);
    } else if (!strings.empty() && rng() % 4) {
      v = strings[rng() % strings.size()]; // rewire a name, reuse an op
    }
    rep ? r->SetRepeatedString(s.msg, f, k, v) : r->SetString(s.msg, f, v);
    return true;
  }
  default:
    return false;
  }
}
} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned int seed) {
  std::minstd_rand rng(seed);
  onnx::ModelProto model;
  if (rng() % 4 != 0 &&
      model.ParseFromArray(data, static_cast<int>(size))) {
    for (unsigned i = 0, n = 1 + rng() % 3; i < n; ++i)
      mutateModel(model, rng);
    std::string bytes;
    if (model.SerializeToString(&bytes) && bytes.size() <= maxSize) {
      std::memcpy(data, bytes.data(), bytes.size());
      return bytes.size();
    }
  }
  return LLVMFuzzerMutate(data, size, maxSize);
}
#endif // DLC_LIBFUZZER
