//===- FashionMnist.h - the Fashion-MNIST dataset ---------------*- C++ -*-===//
// Loads Fashion-MNIST (Xiao et al. 2017) from the IDX files Debian's
// dataset-fashion-mnist installs: {train,t10k}-{images-idx3,labels-idx1}-
// ubyte.gz. Images become f32 in [0, 1] (u8 / 255, as torchvision's
// ToTensor; no other normalization), labels i64.
#ifndef DLRT_DATA_FASHIONMNIST_H
#define DLRT_DATA_FASHIONMNIST_H

#include "runtime/data/Array.h"

#include <string>

namespace dlrt::data {

/// Where dataset-fashion-mnist installs the files.
constexpr const char *kFashionMnistDefaultDir =
    "/usr/share/datasets/fashion-mnist";

/// One split: images f32 [N, 28, 28] in [0, 1], labels i64 [N] in [0, 9].
struct LabelledSplit {
  Array images;
  Array labels;
};

/// Loads the train (60000 samples) or t10k (10000) split from |dir|.
/// Errors: a missing folder or file (the message says to run `apt-get
/// install dataset-fashion-mnist` or pass fashion-mnist:DIR), IDX errors,
/// image/label counts that differ, labels outside 0..9.
bool loadFashionMnist(const std::string &dir, bool train, LabelledSplit &out,
                      std::string &error);

} // namespace dlrt::data

#endif // DLRT_DATA_FASHIONMNIST_H
