// An input pipeline in the graph (whitepaper §4.6, TF 1.x's queue-based
// input): Fashion-MNIST examples from TFRecord files written by
// tools/fashion_mnist_to_tfrecord, through queues fed by QueueRunners.
//
//   file names --QueueRunner--> FIFOQueue of names
//        --> TFRecordReader: ReaderReadUpTo(256) --> ParseExample
//            (image_raw: bytes, label: int64) --> DecodeRaw(uint8) / 255
//        --QueueRunner (2 threads)--> RandomShuffleQueue (capacity 20000,
//            min_after_dequeue 5000) --> QueueDequeueMany(batch)
//
// Reading, parsing and shuffling run on the runners' threads while the
// training step runs; a training step only dequeues a ready batch.
#ifndef RUNNEL_EXAMPLES_TFRECORD_INPUT_H_
#define RUNNEL_EXAMPLES_TFRECORD_INPUT_H_

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "runnel/graph/define_function.h"
#include "runnel/runnel.h"
#include "runnel/training/queue_runner.h"

namespace runnel::examples {

struct TFRecordInput {
  Output images;  // [batch, example_shape...] float in [0, 1]
  Output labels;  // [batch] int32
  std::vector<std::unique_ptr<QueueRunner>> runners;
  // Ops to run once before the first step (the dataset iterator's
  // initializer).
  std::vector<Operation> init_ops;
};

// The files "<dir>/<split>-*.tfrecord", sorted.
inline std::vector<std::string> TFRecordFiles(const std::string& dir,
                                              const std::string& split) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(split + "-", 0) == 0 &&
        e.path().extension() == ".tfrecord") {
      files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

inline Status BuildTFRecordInput(const Scope& scope,
                                 const std::vector<std::string>& files,
                                 const TensorShape& example_shape, int batch,
                                 int seed, TFRecordInput* in) {
  if (files.empty()) {
    return errors::NotFound(
        "no TFRecord files; write them with build/tools/"
        "fashion_mnist_to_tfrecord --out_dir=DIR");
  }
  const Scope s = scope.NewSubScope("input");
  // The file names, over and over (one epoch per enqueue).
  auto names = ops::FIFOQueueV2(s.WithOpName("filename_queue"), {DT_STRING},
                                ops::FIFOQueueV2::Capacity(32));
  Tensor file_list(DT_STRING,
                   TensorShape({static_cast<int64_t>(files.size())}));
  for (size_t i = 0; i < files.size(); ++i)
    file_list.flat<tstring>()[i] = files[i];
  auto enqueue_names =
      ops::QueueEnqueueManyV2(s, names.handle, {ops::Const(s, file_list)});
  // Records -> examples.
  auto reader = ops::TFRecordReaderV2(s.WithOpName("reader"));
  auto records = ops::ReaderReadUpToV2(s, reader, names.handle,
                                       ops::Const(s, int64_t{256}));
  auto parsed = ops::ParseExample(
      s, records.values, ops::Const(s, Tensor(DT_STRING, TensorShape({0}))), {},
      {ops::Const(s, tstring("image_raw")), ops::Const(s, tstring("label"))},
      {ops::Const(s, tstring("")), ops::Const(s, int64_t{-1})}, {},
      {PartialTensorShape({}), PartialTensorShape({})});
  auto pixels = ops::DecodeRaw(s, parsed.dense_values[0], DT_UINT8);
  Tensor shape(DT_INT32, TensorShape({example_shape.dims() + 1}));
  shape.flat<int32_t>()[0] = -1;
  for (int i = 0; i < example_shape.dims(); ++i) {
    shape.flat<int32_t>()[i + 1] =
        static_cast<int32_t>(example_shape.dim_size(i));
  }
  auto images =
      ops::Reshape(s, ops::Mul(s, ops::Cast(s, pixels, DT_FLOAT), 1.0f / 255),
                   ops::Const(s, shape));
  auto labels = ops::Cast(s, parsed.dense_values[1], DT_INT32);
  // Shuffled examples -> batches.
  auto examples = ops::RandomShuffleQueueV2(
      s.WithOpName("example_queue"), {DT_FLOAT, DT_INT32},
      ops::RandomShuffleQueueV2::Shapes(
          {PartialTensorShape(example_shape), PartialTensorShape({})})
          .Capacity(20000)
          .MinAfterDequeue(5000)
          .Seed(seed));
  auto enqueue_examples =
      ops::QueueEnqueueManyV2(s, examples.handle, {images, labels});
  auto dequeued =
      ops::QueueDequeueManyV2(s, examples.handle, batch, {DT_FLOAT, DT_INT32});
  RETURN_IF_ERROR(s.status());
  in->images = dequeued[0];
  in->labels = dequeued[1];
  ASSIGN_OR_RETURN(
      auto name_runner,
      QueueRunner::New(s, names.handle, {enqueue_names.operation}));
  ASSIGN_OR_RETURN(auto example_runner,
                   QueueRunner::New(s, examples.handle,
                                    {enqueue_examples.operation,
                                     enqueue_examples.operation}));
  in->runners.push_back(std::move(name_runner));
  in->runners.push_back(std::move(example_runner));
  return absl::OkStatus();
}

// The same examples through tf.data (TF 1.4+'s input pipelines), with no
// queue runners:
//
//   TFRecordDataset(files) -> ShuffleDataset(20000 records, seed)
//     -> RepeatDataset(forever) -> BatchDatasetV2(batch, drop_remainder)
//     -> MapDataset(ParseBatch: ParseExample -> DecodeRaw / 255, labels to
//        int32) -> PrefetchDataset(4 batches, a background thread)
//     -> IteratorV2 (initialised by in->init_ops) -> IteratorGetNext
//
// Batching before the map parses a whole batch per function call (TF's
// advice for cheap per-example work).
inline Status BuildTFRecordDataset(const Scope& scope,
                                   const std::vector<std::string>& files,
                                   const TensorShape& example_shape, int batch,
                                   int seed, TFRecordInput* in) {
  if (files.empty()) {
    return errors::NotFound(
        "no TFRecord files; write them with build/tools/"
        "fashion_mnist_to_tfrecord --out_dir=DIR");
  }
  const Scope s = scope.NewSubScope("dataset");
  PartialTensorShape images_shape({batch});
  for (int64_t d : example_shape.dim_sizes()) images_shape.AddDim(d);
  const std::vector<DataType> string_type = {DT_STRING};
  const std::vector<DataType> types = {DT_FLOAT, DT_INT32};
  const std::vector<PartialTensorShape> shapes = {images_shape,
                                                  PartialTensorShape({batch})};
  ASSIGN_OR_RETURN(
      NameAttrList parse,
      DefineFunction(
          scope, "ParseFashionMnistBatch", {{"records", DT_STRING}},
          [&](const Scope& f,
              const std::vector<Output>& a) -> StatusOr<std::vector<Output>> {
            auto parsed = ops::ParseExample(
                f, a[0], ops::Const(f, Tensor(DT_STRING, TensorShape({0}))), {},
                {ops::Const(f, tstring("image_raw")),
                 ops::Const(f, tstring("label"))},
                {ops::Const(f, tstring("")), ops::Const(f, int64_t{-1})}, {},
                {PartialTensorShape({}), PartialTensorShape({})});
            auto pixels = ops::DecodeRaw(f, parsed.dense_values[0], DT_UINT8);
            Tensor shape(DT_INT32, TensorShape({example_shape.dims() + 1}));
            shape.flat<int32_t>()[0] = -1;
            for (int i = 0; i < example_shape.dims(); ++i) {
              shape.flat<int32_t>()[i + 1] =
                  static_cast<int32_t>(example_shape.dim_size(i));
            }
            auto images = ops::Reshape(
                f, ops::Mul(f, ops::Cast(f, pixels, DT_FLOAT), 1.0f / 255),
                ops::Const(f, shape));
            auto labels = ops::Cast(f, parsed.dense_values[1], DT_INT32);
            return std::vector<Output>{images, labels};
          }));
  Tensor file_list(DT_STRING,
                   TensorShape({static_cast<int64_t>(files.size())}));
  for (size_t i = 0; i < files.size(); ++i)
    file_list.flat<tstring>()[i] = files[i];
  auto records = ops::TFRecordDataset(s, ops::Const(s, file_list),
                                      ops::Const(s, tstring("")),
                                      ops::Const(s, int64_t{256 << 10}));
  const std::vector<PartialTensorShape> scalar = {PartialTensorShape({})};
  auto shuffled = ops::ShuffleDataset(
      s, records, ops::Const(s, int64_t{20000}), ops::Const(s, int64_t{seed}),
      ops::Const(s, int64_t{seed + 1}), string_type, scalar);
  auto repeated = ops::RepeatDataset(s, shuffled, ops::Const(s, int64_t{-1}),
                                     string_type, scalar);
  auto batched = ops::BatchDatasetV2(s, repeated, ops::Const(s, int64_t{batch}),
                                     ops::Const(s, true), string_type,
                                     {PartialTensorShape({batch})});
  auto mapped =
      ops::MapDataset(s, batched, std::vector<Input>{}, parse, types, shapes);
  auto prefetched =
      ops::PrefetchDataset(s, mapped, ops::Const(s, int64_t{4}), types, shapes);
  auto iterator =
      ops::IteratorV2(s.WithOpName("iterator"), "", "", types, shapes);
  auto init = ops::MakeIterator(s.WithOpName("init"), prefetched, iterator);
  ops::IteratorGetNext next(s.WithOpName("next"), iterator, types, shapes);
  RETURN_IF_ERROR(s.status());
  in->images = next.components[0];
  in->labels = next.components[1];
  in->init_ops.push_back(init);
  return absl::OkStatus();
}

}  // namespace runnel::examples

#endif  // RUNNEL_EXAMPLES_TFRECORD_INPUT_H_
