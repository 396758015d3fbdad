//===- OpVersionsTest.cpp - The opset check's refusal of unmapped versions -===//
//
// opVersionIssue names an op version whose inputs or attributes changed
// after the newest version a handler reads. No op the importer maps has such
// a version today (each opset-28 change is mapped), so the message is checked
// here with mappings that stop earlier.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include <gtest/gtest.h>

using namespace dlc::onnx_import;

namespace {

TEST(OpVersions, ChangedVersionPastTheMappedOneIsNamed) {
  // SpaceToDepth's version 28 added the mode attribute.
  OpMapping mapping{"SpaceToDepth", 1, nullptr, 13};
  EXPECT_EQ(opVersionIssue(mapping, 28),
            "its version 28 (opset 28) changed its inputs or attributes and "
            "is not mapped; dlc maps versions up to 13 (export with opset 27 "
            "or lower)");
  // Opsets before the change import.
  EXPECT_EQ(opVersionIssue(mapping, 27), "");
  EXPECT_EQ(opVersionIssue(mapping, 13), "");
}

TEST(OpVersions, VersionsThatKeptTheSignatureImport) {
  // Add's version 14 only added element types.
  OpMapping add{"Add", 6, nullptr, 13};
  EXPECT_EQ(opVersionIssue(add, 28), "");
  // Cast's first change after 13 is 19 (saturate): that one is named.
  OpMapping cast{"Cast", 6, nullptr, 13};
  EXPECT_EQ(opVersionIssue(cast, 28),
            "its version 19 (opset 28) changed its inputs or attributes and "
            "is not mapped; dlc maps versions up to 13 (export with opset 18 "
            "or lower)");
}

TEST(OpVersions, MappedRegistryHasNoUnmappedVersion) {
  for (const OpMapping *m : OpRegistry::get().entries())
    EXPECT_EQ(opVersionIssue(*m, kMaxOpset), "") << m->opType.str();
}

} // namespace
