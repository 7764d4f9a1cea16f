#include "runnel/training/embedding.h"

#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runnel/ops/ops_gen.h"

namespace runnel::training {
namespace {

// How EmbeddingLookup reaches the shards, whatever they are.
struct Shards {
  int num = 0;
  DataType dtype = DT_INVALID;
  // Static shapes (possibly partial).
  std::vector<PartialTensorShape> shapes;
  // Rows `ids` (int32/int64 vector) of shard k.
  std::function<Output(const Scope&, int k, const Output& ids)> gather;
  // Shard k's row count as a scalar of `dtype` (when not static).
  std::function<Output(const Scope&, int k, DataType dtype)> rows;
};

void Fail(const Scope& scope, Status s) { scope.UpdateStatus(std::move(s)); }

// The element shape params[k].shape[1:] when every shard knows it and they
// agree; checks what is known.
Status CheckShards(const Shards& sh, PartialTensorShape* element) {
  if (sh.num == 0) {
    return errors::InvalidArgument("EmbeddingLookup: no params (shards)");
  }
  *element = PartialTensorShape();
  for (int k = 0; k < sh.num; ++k) {
    const PartialTensorShape& p = sh.shapes[k];
    if (p.unknown_rank()) continue;
    if (p.dims() < 1) {
      return errors::InvalidArgument("EmbeddingLookup: params[", k,
                                     "] must be at least 1-D, got shape ",
                                     p.DebugString());
    }
    const PartialTensorShape tail(p.dim_sizes().subspan(1));
    auto merged = element->MergeWith(tail);
    if (!merged.ok()) {
      return errors::InvalidArgument(
          "EmbeddingLookup: params[", k, "] has shape ", p.DebugString(),
          ", whose rows differ from the other shards' ",
          element->DebugString());
    }
    *element = *merged;
  }
  return absl::OkStatus();
}

// The total row count when every shard's is static, else -1.
int64_t StaticRows(const Shards& sh) {
  int64_t total = 0;
  for (const PartialTensorShape& p : sh.shapes) {
    if (p.unknown_rank() || p.dims() < 1 || p.dim_size(0) < 0) return -1;
    total += p.dim_size(0);
  }
  return total;
}

// Records ids.shape + element as the static shape of `rows` where both are
// known far enough (the gathers and the final Reshape cannot see it).
Output WithStaticShape(const Scope& s, const Output& rows, const Output& ids,
                       const PartialTensorShape& element) {
  if (!s.ok() || rows.node() == nullptr) return rows;
  const PartialTensorShape ids_shape = s.GetShape(ids);
  if (ids_shape.unknown_rank() || element.unknown_rank()) return rows;
  PartialTensorShape shape = ids_shape;
  for (int64_t d : element.dim_sizes()) shape.AddDim(d);
  s.UpdateStatus(s.refiner()->SetShape(rows.node(), rows.index(), shape));
  return s.ok() ? rows : Output();
}

// Note [Embedding lookup].
Output Lookup(const Scope& scope, const Shards& sh, const Output& ids,
              PartitionStrategy strategy) {
  if (!scope.ok()) return Output();
  if (ids.node() == nullptr) {
    Fail(scope, errors::InvalidArgument("EmbeddingLookup: ids is a null "
                                        "Output"));
    return Output();
  }
  const DataType it = BaseType(ids.type());
  if (it != DT_INT32 && it != DT_INT64) {
    Fail(scope, errors::InvalidArgument(
                    "EmbeddingLookup: ids must be int32 or int64, not ",
                    DataTypeString(it)));
    return Output();
  }
  PartialTensorShape element;
  if (Status s = CheckShards(sh, &element); !s.ok()) {
    Fail(scope, s);
    return Output();
  }
  const Scope s = scope.NewSubScope("embedding_lookup");
  if (sh.num == 1)
    return WithStaticShape(s, sh.gather(s, 0, ids), ids, element);

  const int64_t static_rows = StaticRows(sh);
  if (static_rows >= 0 && static_rows < sh.num) {
    Fail(scope, errors::InvalidArgument(
                    "EmbeddingLookup: ", sh.num, " shards hold only ",
                    static_rows, " rows; every shard needs at least one"));
    return Output();
  }
  const Output flat = ops::Reshape(s, ids, {-1});
  const Output positions = ops::Range(s, 0, ops::Size(s, flat), 1);
  const Output np = ops::Const(s, int64_t{sh.num}, it);
  Output shard, local;
  if (strategy == PartitionStrategy::kMod) {
    shard = ops::FloorMod(s, flat, np);
    local = ops::FloorDiv(s, flat, np);
  } else {
    Output total;
    if (static_rows >= 0) {
      total = ops::Const(s, static_rows, it);
    } else {
      std::vector<Output> rows;
      for (int k = 0; k < sh.num; ++k) rows.push_back(sh.rows(s, k, it));
      total = ops::AddN(s, rows);
    }
    const Output q = ops::FloorDiv(s, total, np);
    const Output r = ops::FloorMod(s, total, np);
    const Output q1 = ops::Add(s, q, ops::Const(s, int64_t{1}, it));
    const Output past_extras = ops::Sub(s, flat, r);
    shard = ops::Maximum(s, ops::FloorDiv(s, flat, q1),
                         ops::FloorDiv(s, past_extras, q));
    local = ops::SelectV2(s, ops::Less(s, shard, r), ops::FloorMod(s, flat, q1),
                          ops::FloorMod(s, past_extras, q));
  }
  const Output shard32 = ops::Cast(s, shard, DT_INT32);
  auto local_ids = ops::DynamicPartition(s, local, shard32, sh.num);
  auto local_positions = ops::DynamicPartition(s, positions, shard32, sh.num);
  if (!s.ok()) return Output();
  std::vector<Output> rows, indices;
  for (int k = 0; k < sh.num; ++k) {
    rows.push_back(
        sh.gather(s.NewSubScope(absl::StrCat("shard_", k)), k, local_ids[k]));
    indices.push_back(local_positions[k]);
  }
  const Output stitched = ops::ParallelDynamicStitch(s, indices, rows);
  // ids.shape + params.shape[1:].
  Output tail;
  if (element.IsFullyDefined()) {
    std::vector<int32_t> dims;
    for (int64_t d : element.dim_sizes())
      dims.push_back(static_cast<int32_t>(d));
    tail = ops::Const(
        s, Tensor::FromVector<int32_t>(dims, TensorShape({element.dims()})));
  } else {
    tail = ops::Slice(s, ops::Shape(s, stitched), {1}, {-1});
  }
  return WithStaticShape(
      s,
      ops::Reshape(s, stitched,
                   ops::ConcatV2(s, {Output(ops::Shape(s, ids)), tail}, 0)),
      ids, element);
}

Shards VariableShards(const std::vector<Variable>& params) {
  Shards sh;
  sh.num = static_cast<int>(params.size());
  for (const Variable& v : params) {
    sh.shapes.push_back(v.ok() ? PartialTensorShape(v.shape())
                               : PartialTensorShape());
  }
  if (!params.empty()) sh.dtype = params[0].dtype();
  // Each gather runs where its shard lives (TF colocates it too): on a
  // cluster only the looked-up rows leave the PS task, never the shard.
  sh.gather = [params](const Scope& s, int k, const Output& ids) {
    return Output(ops::ResourceGather(s.ColocateWith(params[k].handle()),
                                      params[k].handle(), ids,
                                      params[k].dtype()));
  };
  sh.rows = [params](const Scope& s, int k, DataType dtype) {
    return ops::Const(s, params[k].shape().dim_size(0), dtype);
  };
  return sh;
}

Status CheckVariables(const std::vector<Variable>& params) {
  for (size_t k = 0; k < params.size(); ++k) {
    if (!params[k].ok()) {
      return errors::InvalidArgument("EmbeddingLookup: params[", k,
                                     "] is a null Variable");
    }
    if (params[k].dtype() != params[0].dtype()) {
      return errors::InvalidArgument(
          "EmbeddingLookup: params[", k, "] '", params[k].name(),
          "' has dtype ", DataTypeString(params[k].dtype()),
          " but params[0] has ", DataTypeString(params[0].dtype()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<PartitionStrategy> ParsePartitionStrategy(absl::string_view name) {
  if (name == "mod") return PartitionStrategy::kMod;
  if (name == "div") return PartitionStrategy::kDiv;
  return errors::InvalidArgument(
      "partition strategy must be \"mod\" or "
      "\"div\", got \"",
      name, "\"");
}

std::vector<int64_t> ShardRows(int64_t rows, int num_shards) {
  std::vector<int64_t> out;
  if (num_shards <= 0) return out;
  for (int k = 0; k < num_shards; ++k) {
    out.push_back(rows / num_shards + (k < rows % num_shards ? 1 : 0));
  }
  return out;
}

PartitionedVariable::PartitionedVariable(
    const Scope& scope, absl::string_view name, const TensorShape& shape,
    int num_shards, const Initializer& init, DataType dtype, bool trainable) {
  if (!scope.ok()) return;
  if (shape.dims() < 1 || num_shards < 1 || shape.dim_size(0) < num_shards) {
    scope.UpdateStatus(errors::InvalidArgument(
        "PartitionedVariable '", name, "': cannot split shape ",
        shape.DebugString(), " into ", num_shards,
        " shards along dimension 0 (need rank >= 1 and at least one row per "
        "shard)"));
    return;
  }
  const Scope ps = scope.NewSubScope(name);
  std::vector<Variable> shards;
  const std::vector<int64_t> rows = ShardRows(shape.dim_size(0), num_shards);
  for (int k = 0; k < num_shards; ++k) {
    TensorShape part = shape;
    part.set_dim(0, rows[k]);
    shards.emplace_back(ps, absl::StrCat("part_", k), part, init, dtype,
                        trainable);
    if (!scope.ok()) return;
  }
  name_ = ps.name();
  shape_ = shape;
  dtype_ = dtype;
  shards_ = std::move(shards);
}

Output PartitionedVariable::AsTensor(const Scope& scope,
                                     PartitionStrategy strategy) const {
  if (!scope.ok()) return Output();
  if (!ok()) {
    scope.UpdateStatus(errors::InvalidArgument(
        "PartitionedVariable::AsTensor: a null PartitionedVariable"));
    return Output();
  }
  if (shards_.size() == 1) return ops::Identity(scope, shards_[0].value());
  if (strategy == PartitionStrategy::kDiv) {
    std::vector<Output> values;
    for (const Variable& v : shards_) values.push_back(v.value());
    return ops::ConcatV2(scope, values, 0);
  }
  const Output all = ops::Range(scope, ops::Const(scope, int64_t{0}),
                                ops::Const(scope, shape_.dim_size(0)),
                                ops::Const(scope, int64_t{1}));
  return EmbeddingLookup(scope, shards_, all, strategy);
}

Output EmbeddingLookup(const Scope& scope, const PartitionedVariable& params,
                       const Output& ids, PartitionStrategy strategy) {
  if (!scope.ok()) return Output();
  if (!params.ok()) {
    scope.UpdateStatus(
        errors::InvalidArgument("EmbeddingLookup: a null PartitionedVariable"));
    return Output();
  }
  return EmbeddingLookup(scope, params.shards(), ids, strategy);
}

Output EmbeddingLookup(const Scope& scope, const std::vector<Variable>& params,
                       const Output& ids, PartitionStrategy strategy) {
  if (!scope.ok()) return Output();
  if (Status s = CheckVariables(params); !s.ok()) {
    scope.UpdateStatus(s);
    return Output();
  }
  return Lookup(scope, VariableShards(params), ids, strategy);
}

Output EmbeddingLookup(const Scope& scope, const std::vector<Output>& params,
                       const Output& ids, PartitionStrategy strategy) {
  if (!scope.ok()) return Output();
  Shards sh;
  sh.num = static_cast<int>(params.size());
  for (size_t k = 0; k < params.size(); ++k) {
    if (params[k].node() == nullptr) {
      scope.UpdateStatus(errors::InvalidArgument("EmbeddingLookup: params[", k,
                                                 "] is a null Output"));
      return Output();
    }
    if (BaseType(params[k].type()) != BaseType(params[0].type())) {
      scope.UpdateStatus(errors::InvalidArgument(
          "EmbeddingLookup: params[", k, "] has dtype ",
          DataTypeString(BaseType(params[k].type())), " but params[0] has ",
          DataTypeString(BaseType(params[0].type()))));
      return Output();
    }
    sh.shapes.push_back(scope.GetShape(params[k]));
  }
  sh.gather = [params](const Scope& s, int k, const Output& ids) {
    return Output(ops::GatherV2(s, params[k], ids, 0));
  };
  sh.rows = [params](const Scope& s, int k, DataType dtype) {
    const Output shape = ops::Shape(s, params[k], ops::Shape::OutType(dtype));
    return Output(
        ops::Reshape(s, ops::Slice(s, shape, {0}, {1}),
                     ops::Const(s, Tensor(DT_INT32, TensorShape({0})))));
  };
  return Lookup(scope, sh, ids, strategy);
}

Output EmbeddingLookupSparse(const Scope& scope,
                             const PartitionedVariable& params,
                             const Output& ids, const Output& segment_ids,
                             Combiner combiner, PartitionStrategy strategy,
                             const Output& num_segments) {
  if (!scope.ok()) return Output();
  if (!params.ok()) {
    scope.UpdateStatus(errors::InvalidArgument(
        "EmbeddingLookupSparse: a null PartitionedVariable"));
    return Output();
  }
  return EmbeddingLookupSparse(scope, params.shards(), ids, segment_ids,
                               combiner, strategy, num_segments);
}

Output EmbeddingLookupSparse(const Scope& scope_in,
                             const std::vector<Variable>& params,
                             const Output& ids, const Output& segment_ids,
                             Combiner combiner, PartitionStrategy strategy,
                             const Output& num_segments) {
  if (!scope_in.ok()) return Output();
  if (ids.node() == nullptr || segment_ids.node() == nullptr) {
    scope_in.UpdateStatus(errors::InvalidArgument(
        "EmbeddingLookupSparse: ids and segment_ids must not be null"));
    return Output();
  }
  const Scope s = scope_in.NewSubScope("embedding_lookup_sparse");
  // Each distinct id once: rows[k] = table[unique.y[k]], and id i's row is
  // rows[unique.idx[i]].
  auto unique = ops::Unique(s, ids);
  const Output rows = EmbeddingLookup(s, params, unique.y, strategy);
  if (!s.ok()) return Output();
  const bool n = num_segments.node() != nullptr;
  switch (combiner) {
    case Combiner::kSum:
      return n ? Output(ops::SparseSegmentSumWithNumSegments(
                     s, rows, unique.idx, segment_ids, num_segments))
               : Output(
                     ops::SparseSegmentSum(s, rows, unique.idx, segment_ids));
    case Combiner::kMean:
      return n ? Output(ops::SparseSegmentMeanWithNumSegments(
                     s, rows, unique.idx, segment_ids, num_segments))
               : Output(
                     ops::SparseSegmentMean(s, rows, unique.idx, segment_ids));
    case Combiner::kSqrtN:
      return n ? Output(ops::SparseSegmentSqrtNWithNumSegments(
                     s, rows, unique.idx, segment_ids, num_segments))
               : Output(
                     ops::SparseSegmentSqrtN(s, rows, unique.idx, segment_ids));
  }
  return Output();
}

}  // namespace runnel::training
