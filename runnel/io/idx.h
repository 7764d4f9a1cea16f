// Reader for the IDX format of (Fashion-)MNIST, optionally gzip-compressed
// (http://yann.lecun.com/exdb/mnist/ layout): a big-endian magic
// 0x000008DD (D = number of dims, 08 = unsigned byte), D big-endian uint32
// dimension sizes, then the bytes in row-major order.
#ifndef RUNNEL_IO_IDX_H_
#define RUNNEL_IO_IDX_H_

#include <string>

#include "runnel/base/status.h"
#include "runnel/framework/tensor.h"

namespace runnel {

// Reads an IDX file of unsigned bytes (".gz" is decompressed) into a uint8
// tensor with the file's dimensions. DataLoss for truncated or malformed
// files, NotFound if missing.
StatusOr<Tensor> ReadIdxFile(const std::string& path);

// A Fashion-MNIST split: images as float32 [n, 28*28] scaled to [0, 1],
// labels as int32 [n].
struct MnistSplit {
  Tensor images;
  Tensor labels;
};
// Loads "<dir>/<prefix>-images-idx3-ubyte.gz" and "-labels-idx1-ubyte.gz",
// prefix "train" or "t10k". Checks that the counts agree.
StatusOr<MnistSplit> LoadMnistSplit(const std::string& dir,
                                    const std::string& prefix);

// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

}  // namespace runnel

#endif  // RUNNEL_IO_IDX_H_
