// Converts the Fashion-MNIST IDX files into TFRecord files of tf.Example
// protos, the input of the TFRecord pipeline (TFRecordReaderV2 ->
// ParseExample -> DecodeRaw):
//
//   {"image_raw": bytes_list [784 uint8 pixels, row-major 28x28],
//    "label":     int64_list [class 0..9]}
//
// Usage:
//   fashion_mnist_to_tfrecord [--data_dir=DIR] [--out_dir=DIR] [--shards=N]
//                             [--compression=|ZLIB|GZIP] [--verify]
//
// Writes <out_dir>/train-SSSSS-of-NNNNN.tfrecord (60000 examples) and
// <out_dir>/test-SSSSS-of-NNNNN.tfrecord (10000), the examples of each split
// in their IDX order, split into N contiguous shards. --verify reads every
// file back and checks each record against the IDX data.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "proto/example.pb.h"
#include "runnel/base/env.h"
#include "runnel/io/idx.h"
#include "runnel/io/record_reader.h"
#include "runnel/io/record_writer.h"

namespace runnel {
namespace {

struct Options {
  std::string data_dir = kFashionMnistDir;
  std::string out_dir = ".";
  int shards = 1;
  RecordCompression compression = RecordCompression::kNone;
  bool verify = false;
};

constexpr int kPixels = 28 * 28;

void Usage() {
  std::cerr << "usage: fashion_mnist_to_tfrecord [--data_dir=DIR] "
               "[--out_dir=DIR] [--shards=N] [--compression=|ZLIB|GZIP] "
               "[--verify]\n";
}

// Parses "--name=value" and "--name value" flags.
bool ParseArgs(const std::vector<std::string>& args, Options* o) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i], v;
    const size_t eq = a.find('=');
    if (eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    auto value = [&](std::string* out) {
      if (eq != std::string::npos) {
        *out = v;
        return true;
      }
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    if (a == "--verify") {
      o->verify = true;
    } else if (a == "--data_dir" && value(&v)) {
      o->data_dir = v;
    } else if (a == "--out_dir" && value(&v)) {
      o->out_dir = v;
    } else if (a == "--shards" && value(&v)) {
      if (!absl::SimpleAtoi(v, &o->shards) || o->shards < 1 ||
          o->shards > 99999) {
        std::cerr << "--shards wants a count in [1, 99999], got '" << v
                  << "'\n";
        return false;
      }
    } else if (a == "--compression" && value(&v)) {
      auto c = ParseRecordCompression(v);
      if (!c.ok()) {
        std::cerr << c.status().message() << "\n";
        return false;
      }
      o->compression = *c;
    } else {
      std::cerr << "unknown or incomplete flag '" << args[i] << "'\n";
      return false;
    }
  }
  return true;
}

std::string ShardPath(const Options& o, const std::string& split, int shard) {
  return absl::StrFormat("%s/%s-%05d-of-%05d.tfrecord", o.out_dir, split, shard,
                         o.shards);
}

// One split's images (uint8 [n, 28, 28]) and labels (uint8 [n]).
struct Split {
  Tensor images, labels;
  int64_t size() const { return labels.NumElements(); }
};

StatusOr<Split> LoadSplit(const Options& o, const std::string& idx_prefix) {
  Split s;
  ASSIGN_OR_RETURN(s.images, ReadIdxFile(o.data_dir + "/" + idx_prefix +
                                         "-images-idx3-ubyte.gz"));
  ASSIGN_OR_RETURN(s.labels, ReadIdxFile(o.data_dir + "/" + idx_prefix +
                                         "-labels-idx1-ubyte.gz"));
  if (s.images.dims() != 3 ||
      s.images.dim_size(1) * s.images.dim_size(2) != kPixels) {
    return errors::DataLoss(idx_prefix, " images have shape ",
                            s.images.shape().DebugString(),
                            ", expected [n, 28, 28]");
  }
  if (s.labels.dims() != 1 || s.labels.dim_size(0) != s.images.dim_size(0)) {
    return errors::DataLoss(idx_prefix, ": ", s.labels.shape().DebugString(),
                            " labels for ", s.images.dim_size(0), " images");
  }
  return s;
}

std::string SerializedExample(const Split& s, int64_t i) {
  Example ex;
  auto& features = *ex.mutable_features()->mutable_feature();
  const char* pixels =
      reinterpret_cast<const char*>(s.images.data<uint8_t>()) + i * kPixels;
  features["image_raw"].mutable_bytes_list()->add_value(pixels, kPixels);
  features["label"].mutable_int64_list()->add_value(
      s.labels.data<uint8_t>()[i]);
  return ex.SerializeAsString();
}

// Examples [begin, end) of shard `shard` (contiguous, sizes differ by <= 1).
void ShardRange(int64_t n, int shards, int shard, int64_t* begin,
                int64_t* end) {
  *begin = n * shard / shards;
  *end = n * (shard + 1) / shards;
}

Status WriteSplit(const Options& o, const Split& s, const std::string& name) {
  for (int shard = 0; shard < o.shards; ++shard) {
    const std::string path = ShardPath(o, name, shard);
    ASSIGN_OR_RETURN(auto writer, RecordWriter::Create(path, o.compression));
    int64_t begin, end;
    ShardRange(s.size(), o.shards, shard, &begin, &end);
    for (int64_t i = begin; i < end; ++i) {
      RETURN_IF_ERROR(writer->WriteRecord(SerializedExample(s, i)));
    }
    RETURN_IF_ERROR(writer->Close());
    std::cout << absl::StrFormat("  %s: %d examples, %.1f MB\n", path,
                                 end - begin,
                                 std::filesystem::file_size(path) / 1e6);
  }
  return absl::OkStatus();
}

// Reads every shard back and compares each example with the IDX data.
Status VerifySplit(const Options& o, const Split& s, const std::string& name) {
  int64_t next = 0;
  for (int shard = 0; shard < o.shards; ++shard) {
    const std::string path = ShardPath(o, name, shard);
    ASSIGN_OR_RETURN(auto reader, RecordReader::Open(path, o.compression));
    std::string record;
    Status st;
    while ((st = reader->ReadRecord(&record)).ok()) {
      if (next >= s.size()) {
        return errors::DataLoss(path, ": more records than examples");
      }
      Example ex;
      if (!ex.ParseFromString(record)) {
        return errors::DataLoss(path, ": record ", next, " is no Example");
      }
      const auto& f = ex.features().feature();
      const auto image = f.find("image_raw");
      const auto label = f.find("label");
      const char* pixels =
          reinterpret_cast<const char*>(s.images.data<uint8_t>()) +
          next * kPixels;
      if (image == f.end() || label == f.end() ||
          image->second.bytes_list().value_size() != 1 ||
          image->second.bytes_list().value(0) != std::string(pixels, kPixels) ||
          label->second.int64_list().value_size() != 1 ||
          label->second.int64_list().value(0) !=
              s.labels.data<uint8_t>()[next]) {
        return errors::DataLoss(path, ": example ", next,
                                " differs from the IDX data");
      }
      ++next;
    }
    if (!absl::IsOutOfRange(st)) return st;
  }
  if (next != s.size()) {
    return errors::DataLoss(name, ": read back ", next, " of ", s.size(),
                            " examples");
  }
  std::cout << "  verified " << next << " " << name << " examples\n";
  return absl::OkStatus();
}

Status Run(const Options& o) {
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) {
    return errors::Unavailable("cannot create ", o.out_dir, ": ", ec.message());
  }
  const std::pair<const char*, const char*> splits[] = {{"train", "train"},
                                                        {"t10k", "test"}};
  for (const auto& [idx_prefix, name] : splits) {
    ASSIGN_OR_RETURN(Split s, LoadSplit(o, idx_prefix));
    std::cout << name << ": " << s.size() << " examples from " << o.data_dir
              << "/" << idx_prefix << "-*\n";
    RETURN_IF_ERROR(WriteSplit(o, s, name));
    if (o.verify) RETURN_IF_ERROR(VerifySplit(o, s, name));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace runnel

int main(int argc, char** argv) {
  runnel::Options options;
  if (!runnel::ParseArgs(std::vector<std::string>(argv + 1, argv + argc),
                         &options)) {
    runnel::Usage();
    return 2;
  }
  const runnel::Status s = runnel::Run(options);
  if (!s.ok()) {
    std::cerr << "fashion_mnist_to_tfrecord: " << s << "\n";
    return 1;
  }
  return 0;
}
