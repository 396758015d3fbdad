//===- DlexecDocsTest.cpp - docs/dlexec.md against the dlexec tables ------===//
//
// Every library call of runtime/schema/LibraryCalls.def and every template of
// runtime/schema/BuiltinTemplates.def has a row in docs/dlexec.md naming its
// operands and each of its attributes, so the page cannot fall behind the
// tables (it did: batched_gemm, conv3d, gather, dropout and resize were
// missing before the tables existed).
//
//===----------------------------------------------------------------------===//
#include "runtime/schema/BuiltinTemplates.h"
#include "runtime/schema/LibraryCalls.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string readDoc() {
  std::ifstream in(DLC_SOURCE_DIR "/docs/dlexec.md");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The table row of |doc| that starts with "| `name` |", or "".
std::string rowOf(const std::string &doc, const std::string &name) {
  std::string key = "\n| `" + name + "` |";
  size_t at = doc.find(key);
  if (at == std::string::npos)
    return "";
  size_t end = doc.find('\n', at + 1);
  return doc.substr(at + 1, end == std::string::npos ? std::string::npos
                                                     : end - at - 1);
}

std::vector<std::string> split(const std::string &list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    size_t b = item.find_first_not_of(' ');
    if (b != std::string::npos)
      out.push_back(item.substr(b));
  }
  return out;
}

TEST(DlexecDocs, EveryLibraryCallHasARow) {
  std::string doc = readDoc();
  ASSERT_FALSE(doc.empty()) << "cannot read docs/dlexec.md";
  for (const dlc::exec::LibraryCallInfo &info : dlc::exec::kLibraryCalls) {
    SCOPED_TRACE(info.name);
    std::string row = rowOf(doc, info.name);
    ASSERT_FALSE(row.empty())
        << "docs/dlexec.md has no row for library call `" << info.name << "`";
    std::string operands =
        std::string(info.inputs) + " -> " + std::string(info.outputs);
    EXPECT_NE(row.find("| " + operands + " |"), std::string::npos)
        << "the row of `" << info.name << "` should give its operands as '"
        << operands << "': " << row;
    for (const std::string &attr : split(info.attributes))
      EXPECT_NE(row.find("`" + attr + "`"), std::string::npos)
          << "the row of `" << info.name << "` does not name attribute `"
          << attr << "`: " << row;
  }
}

TEST(DlexecDocs, EveryBuiltinTemplateHasARow) {
  std::string doc = readDoc();
  ASSERT_FALSE(doc.empty()) << "cannot read docs/dlexec.md";
  for (const dlc::exec::BuiltinTemplateInfo &info :
       dlc::exec::kBuiltinTemplates) {
    SCOPED_TRACE(info.name);
    std::string row = rowOf(doc, info.name);
    ASSERT_FALSE(row.empty())
        << "docs/dlexec.md has no row for template `" << info.name << "`";
    EXPECT_NE(row.find(std::string("| ") + info.operands + " |"),
              std::string::npos)
        << "the row of `" << info.name << "` should give its operands as '"
        << info.operands << "': " << row;
    for (const std::string &attr : split(info.attributes))
      EXPECT_NE(row.find("`" + attr + "`"), std::string::npos)
          << "the row of `" << info.name << "` does not name attribute `"
          << attr << "`: " << row;
  }
}

TEST(DlexecDocs, TablesHaveUniqueNames) {
  // lookupLibraryCall / lookupBuiltinTemplate return the first match.
  for (const auto &info : dlc::exec::kLibraryCalls)
    EXPECT_EQ(dlc::exec::lookupLibraryCall(info.name), &info) << info.name;
  for (const auto &info : dlc::exec::kBuiltinTemplates)
    EXPECT_EQ(dlc::exec::lookupBuiltinTemplate(info.name), &info) << info.name;
  // The enum indexes the table.
  for (size_t i = 0; i < dlc::exec::kNumLibraryCalls; ++i)
    EXPECT_EQ(static_cast<size_t>(dlc::exec::kLibraryCalls[i].call), i);
}

} // namespace
