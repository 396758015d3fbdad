//===- SemanticsTest.cpp - the MLIR-free formulas of runtime/schema/Semantics -----===//
#include "runtime/schema/Semantics/Broadcast.h"
#include "runtime/schema/Semantics/ResizeCoordinates.h"
#include "runtime/schema/Semantics/WindowShapes.h"

#include <gtest/gtest.h>

#include <limits>

using namespace dlc::semantics;
using Pads = std::pair<int64_t, int64_t>;

namespace {

TEST(WindowShapes, FloorAndCeilMode) {
  // ResNet stem: 224, kernel 7, stride 2, pads 3: (224 + 6 - 7) / 2 + 1.
  EXPECT_EQ(windowOutputSize(224, 7, 2, 3, 3, 1), 112);
  // Dilation 2 makes a 3-kernel span 5: (10 - 5) / 1 + 1 = 6.
  EXPECT_EQ(windowOutputSize(10, 3, 1, 0, 0, 2), 6);
  // 5 wide, kernel 2, stride 2: floor 2, ceil 3 (last window starts at 4).
  EXPECT_EQ(windowOutputSize(5, 2, 2, 0, 0, 1, false), 2);
  EXPECT_EQ(windowOutputSize(5, 2, 2, 0, 0, 1, true), 3);
  // Ceil mode drops a last window that would start in the right padding:
  // in 4, kernel 2, stride 2, pads 1/1: ceil(4 / 2) + 1 = 3 starts at 4,
  // which is >= 4 + 1? no (4 < 5), stays 3; with kernel 1 and pads 0/1,
  // span 4, ceil(4 / 2) + 1 = 3 starts at 4 >= 4 + 0: dropped, 2.
  EXPECT_EQ(windowOutputSize(4, 2, 2, 1, 1, 1, true), 3);
  EXPECT_EQ(windowOutputSize(4, 1, 2, 0, 1, 1, true), 2);
}

TEST(WindowShapes, RejectsWhatDoesNotFit) {
  EXPECT_FALSE(windowOutputSize(2, 3, 1, 0, 0, 1));  // kernel > input
  EXPECT_FALSE(windowOutputSize(8, 3, 0, 0, 0, 1));  // stride 0
  EXPECT_FALSE(windowOutputSize(8, 3, 1, -1, 0, 1)); // negative pad
  EXPECT_FALSE(windowOutputSize(8, 3, 1, 0, 0, 0));  // dilation 0
  int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(windowOutputSize(big, 1, 1, 1, 0, 1)); // overflow
  EXPECT_FALSE(dilatedKernelExtent(big, 2));
  EXPECT_FALSE(checkedMul(big, 2));
  EXPECT_FALSE(checkedMul(std::numeric_limits<int64_t>::min(), -1));
  EXPECT_EQ(checkedMul(-3, 4), -12);
  EXPECT_FALSE(checkedAdd(big, 1));
}

TEST(WindowShapes, ConvTransposeAndSamePads) {
  // ONNX ConvTranspose: 2 * (3 - 1) + 0 + (3 - 1) * 1 + 1 - 0 - 0 = 7.
  EXPECT_EQ(convTransposeOutputSize(3, 3, 2, 0, 0, 1), 7);
  EXPECT_EQ(convTransposeOutputSize(3, 3, 2, 1, 1, 1, 1), 6);
  EXPECT_FALSE(convTransposeOutputSize(1, 1, 1, 1, 0, 1)); // out 0
  // SAME_UPPER, in 5, kernel 3, stride 2: out 3, total (3-1)*2+3-5 = 2.
  EXPECT_EQ(sameAutoPads(5, 3, 2, 1, false), Pads(1, 1));
  // Odd total 1 (in 4, kernel 2, stride 1): UPPER puts it at the end.
  EXPECT_EQ(sameAutoPads(4, 2, 1, 1, false), Pads(0, 1));
  EXPECT_EQ(sameAutoPads(4, 2, 1, 1, true), Pads(1, 0));
}

TEST(Broadcast, Shapes) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(broadcastShapes(V{8, 1, 4}, V{3, 1}), (V{8, 3, 4}));
  EXPECT_EQ(broadcastShapes(V{}, V{2, 3}), (V{2, 3}));
  EXPECT_EQ(broadcastShapes(V{0, 1}, V{1, 5}), (V{0, 5}));
  EXPECT_FALSE(broadcastShapes(V{2, 3}, V{4, 3}));
  EXPECT_TRUE(broadcastsTo(V{1, 4}, V{8, 4}));
  EXPECT_FALSE(broadcastsTo(V{8, 4}, V{1, 4}));
  EXPECT_FALSE(broadcastsTo(V{2, 8, 4}, V{8, 4}));
  // Output index (1, 2, 3) of an [8, 3, 4] result reads [3, 1] at (2, 0).
  EXPECT_EQ(broadcastSourceOffset(V{1, 2, 3}, V{3, 1}), 2);
  EXPECT_EQ(broadcastSourceOffset(V{1, 2, 3}, V{8, 1, 4}), 1 * 4 + 3);
}

TEST(ResizeCoordinates, Taps) {
  // Nearest, asymmetric, floor, scale 2: output 3 reads input 1.
  ResizeTap t = resizeTap("nearest", "asymmetric", "floor", 3, 4, 8, 2.0);
  EXPECT_EQ(t.i0, 1);
  EXPECT_EQ(t.w0, 1.0);
  // Linear, half_pixel, scale 2: output 0 -> x = -0.25, clamped taps 0/0.
  t = resizeTap("linear", "half_pixel", "floor", 0, 4, 8, 2.0);
  EXPECT_EQ(t.i0, 0);
  EXPECT_EQ(t.i1, 0);
  EXPECT_DOUBLE_EQ(t.w1, 0.75);
  // align_corners: o (L - 1) / (R - 1) = 7 * 3 / 7 = 3.
  EXPECT_DOUBLE_EQ(resizeSourceCoordinate("align_corners", 7, 4, 2.0), 3.0);
}

TEST(ResizeCoordinates, AxisWeights) {
  std::vector<double> w;
  std::vector<bool> ex;
  // Cubic (a = -0.75), half_pixel, 4 -> 8: every row sums to 1; output 2
  // (x = 0.75) reads inputs 0..2 (tap -1 clamped onto 0).
  ResizeAxisRule cubic{"cubic", "half_pixel", "round_prefer_floor"};
  resizeAxisWeights(cubic, 4, 8, 2.0, w, ex);
  for (int o = 0; o < 8; ++o) {
    double sum = 0;
    for (int i = 0; i < 4; ++i)
      sum += w[o * 4 + i];
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
  EXPECT_NEAR(w[2 * 4 + 2], -0.75 * 1.25 * 1.25 * 1.25 + 3.75 * 1.25 * 1.25 -
                                6 * 1.25 + 3,
              1e-12);
  EXPECT_EQ(w[2 * 4 + 3], 0.0);
  // exclude_outside drops the taps outside (x = -0.25 at output 0) and
  // renormalizes, instead of clamping them onto input 0.
  ResizeAxisRule excl = cubic;
  excl.excludeOutside = true;
  std::vector<double> we;
  resizeAxisWeights(excl, 4, 8, 2.0, we, ex);
  EXPECT_NE(we[0], w[0]);
  // tf_crop_and_resize, roi [0.5, 1.5]: outputs past the input extrapolate.
  ResizeAxisRule crop{"linear", "tf_crop_and_resize", "round_prefer_floor"};
  crop.roiStart = 0.5;
  crop.roiEnd = 1.5;
  resizeAxisWeights(crop, 5, 5, 1.0, w, ex);
  EXPECT_FALSE(ex[0]);
  EXPECT_TRUE(ex[4]);
  EXPECT_DOUBLE_EQ(w[0 * 5 + 2], 1.0); // x = 0.5 * 4 = 2
  // Antialiased linear at scale 0.5: a triangle of 4 taps, normalized.
  ResizeAxisRule aa{"linear", "half_pixel", "round_prefer_floor"};
  aa.antialias = true;
  resizeAxisWeights(aa, 8, 4, 0.5, w, ex);
  EXPECT_NEAR(w[1 * 8 + 1], 0.125, 1e-12);
  EXPECT_NEAR(w[1 * 8 + 2], 0.375, 1e-12);
  EXPECT_NEAR(w[1 * 8 + 3], 0.375, 1e-12);
  EXPECT_NEAR(w[1 * 8 + 4], 0.125, 1e-12);
}

} // namespace
