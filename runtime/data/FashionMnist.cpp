//===- FashionMnist.cpp - the Fashion-MNIST dataset -----------------------===//
#include "runtime/data/FashionMnist.h"

#include "runtime/data/Idx.h"

#include <sys/stat.h>

namespace dlrt::data {

static bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool loadFashionMnist(const std::string &dir, bool train, LabelledSplit &out,
                      std::string &error) {
  const std::string hint =
      " (install it with `apt-get install dataset-fashion-mnist`, or pass "
      "--dataset fashion-mnist:DIR)";
  if (!exists(dir)) {
    error = "Fashion-MNIST folder " + dir + " does not exist" + hint;
    return false;
  }
  std::string prefix = dir + "/" + (train ? "train" : "t10k");
  auto pick = [&](const char *suffix) {
    // Accept the gzipped files Debian ships and plain ones.
    std::string gz = prefix + suffix + ".gz";
    return exists(gz) ? gz : prefix + suffix;
  };
  std::string imagesPath = pick("-images-idx3-ubyte");
  std::string labelsPath = pick("-labels-idx1-ubyte");
  for (const std::string &p : {imagesPath, labelsPath})
    if (!exists(p)) {
      error = "Fashion-MNIST file " + p + "[.gz] not found" + hint;
      return false;
    }
  Array images, labels;
  if (!readIdx(imagesPath, images, error) ||
      !readIdx(labelsPath, labels, error))
    return false;
  if (images.dtype != DType::U8 || images.shape.size() != 3) {
    error = imagesPath + ": expected u8 images [N, H, W], found " +
            images.describe();
    return false;
  }
  if (labels.dtype != DType::U8 || labels.shape.size() != 1) {
    error = labelsPath + ": expected u8 labels [N], found " + labels.describe();
    return false;
  }
  if (labels.shape[0] != images.shape[0]) {
    error = labelsPath + ": " + std::to_string(labels.shape[0]) +
            " labels for " + std::to_string(images.shape[0]) + " images";
    return false;
  }
  for (size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] > 9) {
      error = labelsPath + ": label " + std::to_string(labels.data[i]) +
              " at index " + std::to_string(i) + " is outside 0..9";
      return false;
    }
  out.images.dtype = DType::F32;
  out.images.shape = images.shape;
  out.images.data.resize(images.data.size() * 4);
  float *dst = reinterpret_cast<float *>(out.images.data.data());
  for (size_t i = 0; i < images.data.size(); ++i)
    dst[i] = static_cast<float>(images.data[i]) / 255.0f;
  out.labels.dtype = DType::I64;
  out.labels.shape = labels.shape;
  out.labels.data.resize(labels.data.size() * 8);
  convertElements(labels.data.data(), DType::U8, out.labels.data.data(),
                  DType::I64, labels.data.size());
  return true;
}

} // namespace dlrt::data
