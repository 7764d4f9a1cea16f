#include "runnel/io/idx.h"

#include <zlib.h>

#include "absl/strings/match.h"
#include "runnel/base/env.h"

namespace runnel {

namespace {

StatusOr<std::string> ReadMaybeGzip(const std::string& path) {
  if (!FileExists(path)) return errors::NotFound("no such file: ", path);
  if (!absl::EndsWith(path, ".gz")) {
    std::string raw;
    RETURN_IF_ERROR(ReadFileToString(path, &raw));
    return raw;
  }
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return errors::Unavailable("cannot open ", path);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    int n = gzread(f, buf, sizeof(buf));
    if (n < 0) {
      int err;
      std::string msg = gzerror(f, &err);
      gzclose(f);
      return errors::DataLoss(path, ": gzip error: ", msg);
    }
    if (n == 0) break;
    out.append(buf, n);
  }
  gzclose(f);
  return out;
}

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
         (uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

StatusOr<Tensor> ReadIdxFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string data, ReadMaybeGzip(path));
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  if (data.size() < 4 || p[0] != 0 || p[1] != 0 || p[2] != 0x08) {
    return errors::DataLoss(path, ": not an IDX file of unsigned bytes");
  }
  const int rank = p[3];
  if (rank < 1 || rank > 4 || data.size() < 4 + 4 * static_cast<size_t>(rank)) {
    return errors::DataLoss(path, ": bad IDX header");
  }
  DimVector dims;
  uint64_t n = 1;
  for (int i = 0; i < rank; ++i) {
    const uint32_t d = BigEndian32(p + 4 + 4 * i);
    dims.push_back(d);
    n *= d;
  }
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (data.size() - header != n) {
    return errors::DataLoss(path, ": expected ", n, " data bytes, found ",
                            data.size() - header);
  }
  ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromDims(dims));
  Tensor t(DT_UINT8, shape);
  std::memcpy(t.raw_data(), data.data() + header, n);
  return t;
}

StatusOr<MnistSplit> LoadMnistSplit(const std::string& dir,
                                    const std::string& prefix) {
  ASSIGN_OR_RETURN(Tensor images,
                   ReadIdxFile(dir + "/" + prefix + "-images-idx3-ubyte.gz"));
  ASSIGN_OR_RETURN(Tensor labels,
                   ReadIdxFile(dir + "/" + prefix + "-labels-idx1-ubyte.gz"));
  if (images.dims() != 3 || labels.dims() != 1 ||
      images.dim_size(0) != labels.dim_size(0)) {
    return errors::DataLoss("images ", images.shape().DebugString(),
                            " and labels ", labels.shape().DebugString(),
                            " do not match");
  }
  const int64_t n = images.dim_size(0);
  const int64_t pixels = images.dim_size(1) * images.dim_size(2);
  MnistSplit split;
  split.images = Tensor(DT_FLOAT, TensorShape({n, pixels}));
  split.labels = Tensor(DT_INT32, TensorShape({n}));
  const uint8_t* src = images.flat<uint8_t>().data();
  float* dst = split.images.flat<float>().data();
  for (int64_t i = 0; i < n * pixels; ++i) dst[i] = src[i] / 255.0f;
  for (int64_t i = 0; i < n; ++i)
    split.labels.flat<int32_t>()[i] = labels.flat<uint8_t>()[i];
  return split;
}

}  // namespace runnel
