//===- OpCoverageTest.cpp - every dlgraph op against its layers ----------===//
//
// Lists every registered dlgraph op with the layers that handle it and
// compares the list with the checked-in table op-coverage.txt, so that a
// layer that appears or goes missing for an op is named. The layers, read
// from the code itself wherever it keeps a registry:
//   import  the ONNX importer creates the op. The importer keeps a table of
//           ONNX op types, not of the dlgraph ops it builds, so this column
//           is a source scan: a `gr::<Name>Op` (or `graph::<Name>Op`) in
//           compiler/Import/*.{cpp,h}, matched to the op whose mnemonic is
//           <Name> up to case and underscores (CumSum: cumsum).
//   grad    the op implements DifferentiableOpInterface (a gradient rule,
//           attached by registerAllDialects); `nondiff` when it is declared
//           non-differentiable instead (dlc::nonDifferentiableOps).
//   lower   dlgraph-lower-to-dlexec registers a lowering for it
//           (populateLowerToExecTable).
//   ref     the reference interpreter evaluates it
//           (reference::Interpreter::canEvaluate).
// A `-` in the table is a layer that is missing on purpose, with the reason
// after `#` on the line. After adding an op or a layer, rewrite the table
// with
//   DLC_UPDATE_OP_COVERAGE=1 build/bin/OpCoverageTest
// and review its diff.
//
//===----------------------------------------------------------------------===//
#include "compiler/InitAll/InitAll.h"
#include "compiler/Conversion/GraphToExec/FuncLowering.h"
#include "compiler/Reference/Interpreter.h"
#include "compiler/Training/Gradients/Gradients.h"
#include "dialects/Graph/DifferentiableOpInterface.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringExtras.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace mlir;

namespace {

const char *const kTablePath = DLC_SOURCE_DIR "/test/Lowering/op-coverage.txt";
const char *const kImportDir = DLC_SOURCE_DIR "/compiler/Import";
const char *const kUpdateEnv = "DLC_UPDATE_OP_COVERAGE";

/// The four layers, in table order: the layer's name in messages and where
/// the test reads it.
struct Layer {
  const char *name;
  const char *where;
};
const Layer kLayers[] = {
    {"importer", "the scan of compiler/Import for gr::<Name>Op"},
    {"gradient", "DifferentiableOpInterface (grad) or "
                 "dlc::nonDifferentiableOps (nondiff)"},
    {"lowering", "populateLowerToExecTable"},
    {"reference interpreter", "reference::Interpreter::canEvaluate"},
};
constexpr size_t kNumLayers = std::size(kLayers);

/// One op's cells, in kLayers order ("-" where the layer is missing).
using Row = std::vector<std::string>;

/// "ConvBackwardData" and "conv_backward_data" both become
/// "convbackwarddata" (and "CumSum", "cumsum" become "cumsum").
std::string normalized(llvm::StringRef name) {
  std::string out;
  for (char c : name)
    if (c != '_')
      out += (char)std::tolower((unsigned char)c);
  return out;
}

/// A context set up the way dlc and dlc-opt set theirs up.
std::unique_ptr<MLIRContext> makeDlcContext() {
  DialectRegistry registry;
  dlc::registerAllDialects(registry);
  auto ctx = std::make_unique<MLIRContext>(registry);
  ctx->loadAllAvailableDialects();
  return ctx;
}

/// The dlgraph op class names (without "Op") the importer's sources name.
std::set<std::string> scanImporter() {
  std::set<std::string> names;
  std::regex opClass(R"(\b(?:gr|graph)::([A-Z][A-Za-z0-9]*)Op\b)");
  for (const auto &entry : std::filesystem::directory_iterator(kImportDir)) {
    std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".h")
      continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    std::string s = text.str();
    for (std::sregex_iterator it(s.begin(), s.end(), opClass), end; it != end;
         ++it)
      names.insert((*it)[1].str());
  }
  return names;
}

/// Every registered dlgraph op and its cells, from the registries. Adds a
/// failure for what the registries contradict (an importer name that is no
/// op, an op that has a rule and is declared non-differentiable).
std::map<std::string, Row> computeCoverage(MLIRContext &ctx) {
  dlc::lowering::LoweringTable lowering;
  dlc::lowering::populateLowerToExecTable(lowering);
  std::set<std::string> nonDifferentiable;
  for (llvm::StringRef op : dlc::nonDifferentiableOps())
    nonDifferentiable.insert(op.str());

  std::map<std::string, Row> rows;
  std::map<std::string, std::string> byNormalizedMnemonic;
  for (RegisteredOperationName info : ctx.getRegisteredOperations()) {
    if (info.getDialectNamespace() != "dlgraph")
      continue;
    std::string name = info.getStringRef().str();
    llvm::StringRef mnemonic =
        info.getStringRef().drop_front(info.getDialectNamespace().size() + 1);
    auto [it, inserted] =
        byNormalizedMnemonic.emplace(normalized(mnemonic), name);
    EXPECT_TRUE(inserted) << name << " and " << it->second
                          << " look alike to the importer scan";
    Row row(kNumLayers, "-");
    bool hasRule = info.hasInterface<dlc::graph::DifferentiableOpInterface>();
    bool declaredNone = nonDifferentiable.count(name);
    EXPECT_FALSE(hasRule && declaredNone)
        << name << " has a gradient rule and is declared non-differentiable "
        << "(dlc::nonDifferentiableOps)";
    row[1] = hasRule ? "grad" : declaredNone ? "nondiff" : "-";
    if (lowering.contains(info.getTypeID()))
      row[2] = "lower";
    if (dlc::reference::Interpreter::canEvaluate(info.getTypeID()))
      row[3] = "ref";
    rows[name] = row;
  }
  for (const std::string &name : nonDifferentiable)
    EXPECT_TRUE(rows.count(name)) << "dlc::nonDifferentiableOps lists " << name
                                  << ", which is no registered dlgraph op";
  for (const std::string &cls : scanImporter()) {
    auto it = byNormalizedMnemonic.find(normalized(cls));
    if (it == byNormalizedMnemonic.end()) {
      ADD_FAILURE() << "compiler/Import names gr::" << cls
                    << "Op, which matches no dlgraph op's mnemonic";
      continue;
    }
    rows[it->second][0] = "import";
  }
  return rows;
}

/// One line of the table: the op's cells and the reason after `#` (why a
/// layer is missing), kept when the table is rewritten.
struct Entry {
  Row cells;
  std::string comment;
};

/// The table's lines by op; a failure for each line that is not a name and
/// four cells (and a comment).
std::map<std::string, Entry> readTable(const std::string &path) {
  std::map<std::string, Entry> rows;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::string line;
  for (int lineNo = 1; std::getline(in, line); ++lineNo) {
    auto [text, comment] = llvm::StringRef(line).split('#');
    text = text.trim();
    if (text.empty())
      continue;
    llvm::SmallVector<llvm::StringRef> fields;
    text.split(fields, ' ', -1, /*KeepEmpty=*/false);
    if (fields.size() != kNumLayers + 1) {
      ADD_FAILURE() << path << ":" << lineNo << ": expected an op name and "
                    << kNumLayers << " cells, got '" << line << "'";
      continue;
    }
    Entry entry;
    for (size_t i = 1; i < fields.size(); ++i)
      entry.cells.push_back(fields[i].str());
    entry.comment = comment.trim().str();
    if (!rows.emplace(fields[0].str(), entry).second)
      ADD_FAILURE() << path << ":" << lineNo << ": " << fields[0].str()
                    << " is listed twice";
  }
  return rows;
}

/// The table's text for |rows|: the header, then one aligned line per op,
/// with the comment |old| had for it.
std::string formatTable(const std::map<std::string, Row> &rows,
                        const std::map<std::string, Entry> &old) {
  std::string out =
      "# Every dlgraph op and the layers that handle it, checked by\n"
      "# test/Lowering/OpCoverageTest.cpp (which says where each column is\n"
      "# read from). Columns: importer (import), gradient rule (grad) or\n"
      "# declared non-differentiable (nondiff), lowering to dlexec (lower),\n"
      "# reference interpreter (ref); `-` where the layer is missing on\n"
      "# purpose, with the reason after `#`. Regenerate with\n"
      "# DLC_UPDATE_OP_COVERAGE=1 build/bin/OpCoverageTest (reasons are "
      "kept).\n";
  size_t width = 0;
  for (const auto &[name, row] : rows)
    width = std::max(width, name.size());
  size_t cellWidth = std::string("nondiff").size();
  for (const auto &[name, row] : rows) {
    std::string line = name + std::string(width + 2 - name.size(), ' ');
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size())
        line += std::string(cellWidth + 1 - row[i].size(), ' ');
    }
    auto it = old.find(name);
    if (it != old.end() && !it->second.comment.empty())
      line += std::string(cellWidth + 1 - row.back().size(), ' ') + "# " +
              it->second.comment;
    out += line + "\n";
  }
  return out;
}

TEST(OpCoverage, EveryDlgraphOpMatchesTheTable) {
  auto ctx = makeDlcContext();
  std::map<std::string, Row> actual = computeCoverage(*ctx);
  ASSERT_FALSE(actual.empty()) << "no dlgraph op is registered";

  std::map<std::string, Entry> expected = readTable(kTablePath);
  if (std::getenv(kUpdateEnv)) {
    std::ofstream out(kTablePath);
    out << formatTable(actual, expected);
    ASSERT_TRUE(out.good()) << "cannot write " << kTablePath;
    std::cout << "rewrote " << kTablePath << " (" << actual.size() << " ops)\n";
    return;
  }

  const std::string howToUpdate =
      std::string("; if that is intended, rewrite the table with ") +
      kUpdateEnv + "=1 " + "build/bin/OpCoverageTest and review its diff";
  for (const auto &[name, row] : actual) {
    auto it = expected.find(name);
    if (it == expected.end()) {
      ADD_FAILURE() << name << " is a dlgraph op that " << kTablePath
                    << " does not list (its layers: " << llvm::join(row, " ")
                    << ")" << howToUpdate;
      continue;
    }
    for (size_t i = 0; i < kNumLayers; ++i) {
      const std::string &want = it->second.cells[i], &got = row[i];
      if (want == got)
        continue;
      const Layer &layer = kLayers[i];
      if (got == "-")
        ADD_FAILURE() << name << ": the " << layer.name
                      << " went missing: the table says '" << want << "', but "
                      << layer.where << " has nothing for it" << howToUpdate;
      else if (want == "-")
        ADD_FAILURE() << name << ": the " << layer.name
                      << " appeared: the table says '-', but " << layer.where
                      << " gives '" << got << "'" << howToUpdate;
      else
        ADD_FAILURE() << name << ": the " << layer.name << " changed from '"
                      << want << "' to '" << got << "' (" << layer.where << ")"
                      << howToUpdate;
    }
  }
  for (const auto &[name, entry] : expected)
    if (!actual.count(name))
      ADD_FAILURE() << kTablePath << " lists " << name
                    << ", which is no registered dlgraph op" << howToUpdate;
}

} // namespace
