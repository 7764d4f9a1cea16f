// Partitioned embeddings (OSDI §4.2, "Training very large models"): an
// embedding table [V, D...] split along dimension 0 into N shard variables,
// looked up the way TensorFlow's tf.nn.embedding_lookup does it, with a
// gradient that stays sparse from the loss to every shard.
//
//   training::PartitionedVariable emb(root, "emb", TensorShape({100000, 64}),
//                                     /*num_shards=*/4,
//                                     training::Initializer::RandomUniform(
//                                         -0.05, 0.05));
//   Output rows = training::EmbeddingLookup(root, emb, ids);  // ids + [64]
//   ...loss over rows...
//   training::AdagradOptimizer opt(0.1);
//   RETURN_IF_ERROR(opt.Minimize(root, loss, {}, nullptr, &train_op));
//
// Note [Embedding lookup]. EmbeddingLookup is a composite (no kernel, no
// gradient of its own), TF's _embedding_lookup_and_transform: with one
// shard it is one gather; with N shards it flattens the ids, assigns each
// id to a shard and a row within it (the partition strategy below),
// DynamicPartitions the shard-local ids and the ids' positions by shard,
// gathers each shard's rows (ResourceGather on the shard variable's handle,
// colocated with the shard, so no step reads a whole shard, and on a
// cluster only the looked-up rows leave a PS task), ParallelDynamicStitches
// the rows back
// into id order and reshapes to ids.shape + params.shape[1:]. Its gradient
// is, per shard, the sparse gradient of ResourceGather (Note [Sparse
// gradients] in runnel/graph/gradients.h): rows of dy at the shard-local
// ids. The optimizers differentiate with respect to each variable's handle
// and apply such gradients sparsely (Note [Sparse updates] in
// optimizer.h), so one step reads and writes only the looked-up rows of
// each shard (and of its slots).
//
// Partition strategies (TF's partition_strategy), for V rows in N shards:
//   kMod: id -> shard id % N, row id / N.
//   kDiv: ids are split into N contiguous ranges, the first V % N of them
//         one row longer: with q = V / N and r = V % N, id -> shard
//         max(id / (q + 1), (id - r) / q), row id % (q + 1) in the first r
//         shards and (id - r) % q in the others.
// Both expect shard k to have V / N rows plus one if k < V % N, which is how
// PartitionedVariable splits (TF's fixed_size_partitioner); other splits
// work with kDiv only if they follow the same rule.
//
// Errors (in the scope, null Output, as Note [Status accumulation] in
// runnel/graph/scope.h): InvalidArgument for no shards, shards of different
// dtypes or trailing shapes, non-integer ids, fewer rows than shards, and a
// lookup whose ids are out of range fails when run (a Gather error naming
// the shard-local index). Thread safety: as all graph building, one thread
// per graph.
#ifndef RUNNEL_TRAINING_EMBEDDING_H_
#define RUNNEL_TRAINING_EMBEDDING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "runnel/base/status.h"
#include "runnel/graph/scope.h"
#include "runnel/training/layers.h"

namespace runnel::training {

enum class PartitionStrategy { kMod, kDiv };

// "mod" or "div" (TF's spellings); InvalidArgument otherwise.
StatusOr<PartitionStrategy> ParsePartitionStrategy(absl::string_view name);

// The rows of each of `num_shards` shards of a `rows`-row table: rows /
// num_shards each, plus one for the first rows % num_shards shards.
std::vector<int64_t> ShardRows(int64_t rows, int num_shards);

// An embedding table [V, D...] as N resource variables "<name>/part_0" ...
// "<name>/part_{N-1}" of ShardRows(V, N) rows each (TF's partitioned
// variables; Note [Resource variables] in layers.h). Each shard is
// initialised by `init` at its own shape and recorded in the graph's
// collections like any Variable. Copies are cheap and refer to the same
// shards. InvalidArgument (in the scope; ok() false) unless V >= N >= 1 and
// the shape has rank >= 1.
class PartitionedVariable {
 public:
  PartitionedVariable() = default;
  PartitionedVariable(const Scope& scope, absl::string_view name,
                      const TensorShape& shape, int num_shards,
                      const Initializer& init, DataType dtype = DT_FLOAT,
                      bool trainable = true);

  bool ok() const { return !shards_.empty(); }
  // The scope name of the shards, e.g. "emb".
  const std::string& name() const { return name_; }
  // The whole table's shape.
  const TensorShape& shape() const { return shape_; }
  DataType dtype() const { return dtype_; }
  int num_shards() const { return static_cast<int>(shards_.size()); }
  const std::vector<Variable>& shards() const { return shards_; }

  // The whole table in id order under `strategy` ([V, D...]): the shards
  // concatenated (kDiv) or interleaved (kMod).
  Output AsTensor(const Scope& scope,
                  PartitionStrategy strategy = PartitionStrategy::kMod) const;

 private:
  std::string name_;
  TensorShape shape_;
  DataType dtype_ = DT_INVALID;
  std::vector<Variable> shards_;
};

// The rows of the table made of `params` (shards along dimension 0) at
// `ids` (int32/int64, any shape): ids.shape + params[0].shape[1:]. See
// Note [Embedding lookup]. The Variable forms gather through the shards'
// handles (ResourceGather); the Output form gathers tensors (GatherV2).
Output EmbeddingLookup(const Scope& scope, const PartitionedVariable& params,
                       const Output& ids,
                       PartitionStrategy strategy = PartitionStrategy::kMod);
Output EmbeddingLookup(const Scope& scope, const std::vector<Variable>& params,
                       const Output& ids,
                       PartitionStrategy strategy = PartitionStrategy::kMod);
Output EmbeddingLookup(const Scope& scope, const std::vector<Output>& params,
                       const Output& ids,
                       PartitionStrategy strategy = PartitionStrategy::kMod);

// How EmbeddingLookupSparse combines the rows of one bag.
enum class Combiner { kSum, kMean, kSqrtN };

// TF's embedding_lookup_sparse (without weights), an embedding bag: output
// row b combines the table rows ids[i] over the i with segment_ids[i] == b
// (their sum, mean, or sum / sqrt(count)). `ids` and `segment_ids` are
// int32/int64 vectors of one length; segment_ids (e.g. a SparseTensor's
// indices[:, 0]) must be sorted ascending, which the kernel checks. The
// output has num_segments rows when `num_segments` (an int32/int64 scalar)
// is given, else segment_ids[-1] + 1; rows without ids are zero. As TF, it
// looks up each distinct id once (Unique, EmbeddingLookup) and reduces
// with SparseSegmentSum/Mean/SqrtN(WithNumSegments), so the gradient
// stays sparse per shard.
Output EmbeddingLookupSparse(
    const Scope& scope, const PartitionedVariable& params, const Output& ids,
    const Output& segment_ids, Combiner combiner = Combiner::kMean,
    PartitionStrategy strategy = PartitionStrategy::kMod,
    const Output& num_segments = Output());
Output EmbeddingLookupSparse(
    const Scope& scope, const std::vector<Variable>& params, const Output& ids,
    const Output& segment_ids, Combiner combiner = Combiner::kMean,
    PartitionStrategy strategy = PartitionStrategy::kMod,
    const Output& num_segments = Output());

}  // namespace runnel::training

#endif  // RUNNEL_TRAINING_EMBEDDING_H_
