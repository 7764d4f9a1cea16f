// Parsing ops: DecodeRaw (bytes -> numbers) and the tf.Example parsers
// ParseExample (TensorFlow's V1 op: a batch, keys as inputs), ParseExampleV2
// (TF 2's tf.io.parse_example: a batch or one example, keys as vectors,
// ragged features) and ParseSingleExample (one example, keys as attrs).
// Example protos are proto/example.proto (TensorFlow's field numbers).
//
// None of these ops is differentiable: their inputs are strings.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "proto/example.pb.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// DecodeRaw

REGISTER_OP("DecodeRaw")
    .Input("bytes: string")
    .Output("output: out_type")
    .Attr(
        "out_type: {half, float, double, int32, uint16, uint8, int16, int8, "
        "int64, complex64, complex128, bool, bfloat16}")
    .Attr("little_endian: bool = true")
    .SetShapeFn([](InferenceContext* c) {
      // The last dimension depends on the string lengths.
      PartialTensorShape out = c->input(0);
      if (!out.unknown_rank()) out.AddDim(-1);
      c->set_output(0, out);
      return absl::OkStatus();
    })
    .Doc(
        "Reinterprets the bytes of a string as a vector of numbers.\n"
        "All elements of `bytes` must have the same length, a multiple of the "
        "size of `out_type`; the output has one more dimension than `bytes`, "
        "of size length / sizeof(out_type). `little_endian` gives the byte "
        "order of the input (ignored for one-byte types; complex parts are "
        "swapped separately). Bytes decoded as bool are true when non-zero.");

class DecodeRawKernel : public OpKernel {
 public:
  explicit DecodeRawKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("out_type", &out_type_));
    OP_REQUIRES_OK(c, c->GetAttr("little_endian", &little_endian_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const auto in = input.flat<tstring>();
    const size_t elem = static_cast<size_t>(DataTypeSize(out_type_));
    size_t str_size = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (i == 0) {
        str_size = in[0].size();
      } else {
        OP_REQUIRES(ctx, in[i].size() == str_size,
                    errors::InvalidArgument(
                        "DecodeRaw requires input strings to all be the same "
                        "size, but element ",
                        i, " has size ", in[i].size(), " != ", str_size));
      }
    }
    OP_REQUIRES(
        ctx, str_size % elem == 0,
        errors::InvalidArgument("Input to DecodeRaw has length ", str_size,
                                " that is not a multiple of ", elem,
                                ", the size of ", DataTypeString(out_type_)));
    TensorShape out_shape = input.shape();
    out_shape.AddDim(static_cast<int64_t>(str_size / elem));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (str_size == 0 || in.empty()) return;

    char* dst = static_cast<char*>(out->raw_data());
    // Complex numbers swap their real and imaginary parts separately.
    const bool swap = !little_endian_ && elem > 1;
    const size_t swap_unit = DataTypeIsComplex(out_type_) ? elem / 2 : elem;
    const bool is_bool = out_type_ == DT_BOOL;
    ctx->intra_op_threadpool()->ParallelFor(
        static_cast<int64_t>(in.size()), static_cast<int64_t>(str_size / 4 + 1),
        [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            const char* src = in[i].data();
            char* row = dst + i * str_size;
            if (is_bool) {
              // Only 0 and 1 are valid bool objects.
              for (size_t k = 0; k < str_size; ++k) row[k] = src[k] != 0;
            } else if (!swap) {
              std::memcpy(row, src, str_size);
            } else {
              for (size_t k = 0; k < str_size; k += swap_unit) {
                std::reverse_copy(src + k, src + k + swap_unit, row + k);
              }
            }
          }
        });
  }

 private:
  DataType out_type_;
  bool little_endian_ = true;
};
REGISTER_KERNEL_BUILDER(
    Name("DecodeRaw")
        .Device(kDeviceCpu)
        .TypeConstraint("out_type",
                        {DT_HALF, DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT16,
                         DT_UINT8, DT_INT16, DT_INT8, DT_INT64, DT_COMPLEX64,
                         DT_COMPLEX128, DT_BOOL, DT_BFLOAT16}),
    DecodeRawKernel);
REGISTER_NO_GRADIENT("DecodeRaw", "its input is a string");

// ---------------------------------------------------------------------------
// tf.Example parsing, shared by ParseExample and ParseSingleExample.
//
// Note [Example feature semantics] (TensorFlow's, tf.io.parse_example):
// - A dense feature of shape S (fully defined) must hold exactly
//   S.num_elements() values; when it is missing, the default (of shape S)
//   is used, and an empty default makes the feature required.
// - A dense feature whose shape's first dimension is -1 is variable-length:
//   it holds any multiple of the inner size; a batch is padded to the
//   longest with the default, which must be a single (padding) value.
// - A sparse feature gives (indices, values, dense_shape) of a SparseTensor:
//   [batch, position] indices (just [position] for a single example).
// - A ragged feature (ParseExampleV2) gives the values of all examples,
//   concatenated, and row splits [0, n0, n0 + n1, ...] of B + 1 elements
//   (an empty splits tensor for a single example); a missing feature is an
//   empty row.
// - The list kind must match the dtype (float_list <-> float, int64_list <->
//   int64, bytes_list <-> string); a Feature with no list set is empty.

struct DenseConfig {
  std::string key;
  DataType dtype = DT_INVALID;
  PartialTensorShape shape;
  bool variable_length = false;
  // Shape of one row: the whole shape, or the inner dims if variable-length.
  TensorShape row_shape;
  int64_t stride = 1;  // row_shape.num_elements().
  Tensor default_value;
};

struct SparseConfig {
  std::string key;
  DataType dtype = DT_INVALID;
};

struct RaggedConfig {
  std::string key;
  DataType dtype = DT_INVALID;
  DataType splits_dtype = DT_INT64;  // DT_INT32 or DT_INT64.
};

struct ExampleConfig {
  std::vector<SparseConfig> sparse;
  std::vector<DenseConfig> dense;
  std::vector<RaggedConfig> ragged;  // ParseExampleV2 only.
};

Status CheckParseTypes(absl::Span<const DataType> types, const char* attr) {
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] != DT_FLOAT && types[i] != DT_INT64 && types[i] != DT_STRING) {
      return errors::InvalidArgument(attr, "[", i, "] is ",
                                     DataTypeString(types[i]),
                                     "; only float, int64 and string are "
                                     "supported");
    }
  }
  return absl::OkStatus();
}

// Fills the type and shape part of the configs from the attrs.
Status InitExampleConfig(int64_t num_sparse, int64_t num_dense,
                         const std::vector<DataType>& sparse_types,
                         const std::vector<DataType>& dense_types,
                         const std::vector<PartialTensorShape>& dense_shapes,
                         ExampleConfig* config) {
  if (static_cast<int64_t>(sparse_types.size()) != num_sparse) {
    return errors::InvalidArgument("len(sparse_types) ", sparse_types.size(),
                                   " != number of sparse keys ", num_sparse);
  }
  if (static_cast<int64_t>(dense_types.size()) != num_dense) {
    return errors::InvalidArgument("len(Tdense) ", dense_types.size(),
                                   " != number of dense keys ", num_dense);
  }
  if (static_cast<int64_t>(dense_shapes.size()) != num_dense) {
    return errors::InvalidArgument("len(dense_shapes) ", dense_shapes.size(),
                                   " != number of dense keys ", num_dense);
  }
  RETURN_IF_ERROR(CheckParseTypes(sparse_types, "sparse_types"));
  RETURN_IF_ERROR(CheckParseTypes(dense_types, "Tdense"));
  config->sparse.resize(num_sparse);
  for (int64_t i = 0; i < num_sparse; ++i) {
    config->sparse[i].dtype = sparse_types[i];
  }
  config->dense.resize(num_dense);
  for (int64_t i = 0; i < num_dense; ++i) {
    DenseConfig& d = config->dense[i];
    const PartialTensorShape& s = dense_shapes[i];
    d.dtype = dense_types[i];
    d.shape = s;
    bool ok = !s.unknown_rank();
    for (int k = 1; ok && k < s.dims(); ++k) ok = s.dim_size(k) >= 0;
    if (ok && s.dims() > 0 && s.dim_size(0) < -1) ok = false;
    if (!ok) {
      return errors::InvalidArgument(
          "dense_shapes[", i,
          "] has unknown rank or unknown inner dimensions: ", s.DebugString());
    }
    d.variable_length = s.dims() > 0 && s.dim_size(0) == -1;
    // The attr is untrusted: a row shape like [2^40, 2^40] must be an error,
    // not an overflowing element count.
    const auto dims = s.dim_sizes();
    StatusOr<TensorShape> row = TensorShape::FromDims(
        absl::MakeConstSpan(dims).subspan(d.variable_length ? 1 : 0));
    if (!row.ok()) {
      return errors::InvalidArgument("dense_shapes[", i,
                                     "]: ", row.status().message());
    }
    d.row_shape = *std::move(row);
    d.stride = d.row_shape.num_elements();
  }
  return absl::OkStatus();
}

// Checks dense default `value` for config `d` (index i) and stores it.
Status SetDenseDefault(int i, const Tensor& value, DenseConfig* d) {
  if (value.dtype() != d->dtype) {
    return errors::InvalidArgument(
        "dense_defaults[", i, "].dtype() == ", DataTypeString(value.dtype()),
        " != Tdense[", i, "] == ", DataTypeString(d->dtype));
  }
  if (d->variable_length) {
    if (value.NumElements() != 1) {
      return errors::InvalidArgument(
          "dense_shapes[", i,
          "] is a variable length shape: ", d->shape.DebugString(),
          ", therefore dense_defaults[", i,
          "] must contain a single element (the padding element), but its "
          "shape is ",
          value.shape().DebugString());
    }
  } else if (value.NumElements() > 0 &&
             !d->shape.IsCompatibleWith(value.shape())) {
    return errors::InvalidArgument("dense_defaults[", i,
                                   "].shape() == ", value.shape().DebugString(),
                                   " is not compatible with dense_shapes[", i,
                                   "] == ", d->shape.DebugString());
  }
  d->default_value = value;
  return absl::OkStatus();
}

const char* FeatureTypeName(const Feature& f) {
  switch (f.kind_case()) {
    case Feature::kBytesList:
      return "string";
    case Feature::kFloatList:
      return "float";
    case Feature::kInt64List:
      return "int64";
    default:
      return "none";
  }
}

bool FeatureTypeMatches(const Feature& f, DataType dt) {
  switch (f.kind_case()) {
    case Feature::kBytesList:
      return dt == DT_STRING;
    case Feature::kFloatList:
      return dt == DT_FLOAT;
    case Feature::kInt64List:
      return dt == DT_INT64;
    default:
      return true;  // No list: empty of any type.
  }
}

int64_t FeatureSize(const Feature& f) {
  switch (f.kind_case()) {
    case Feature::kBytesList:
      return f.bytes_list().value_size();
    case Feature::kFloatList:
      return f.float_list().value_size();
    case Feature::kInt64List:
      return f.int64_list().value_size();
    default:
      return 0;
  }
}

// Copies the feature's values (already type-checked) to out[offset...].
void CopyFeature(const Feature& f, DataType dt, Tensor* out, int64_t offset) {
  const int64_t n = FeatureSize(f);
  if (n == 0) return;
  if (dt == DT_FLOAT) {
    std::memcpy(out->data<float>() + offset, f.float_list().value().data(),
                n * sizeof(float));
  } else if (dt == DT_INT64) {
    int64_t* dst = out->data<int64_t>() + offset;
    for (int64_t i = 0; i < n; ++i) dst[i] = f.int64_list().value(i);
  } else {
    tstring* dst = out->data<tstring>() + offset;
    for (int64_t i = 0; i < n; ++i) dst[i] = f.bytes_list().value(i);
  }
}

// Sets out[offset, offset + n) to value[0] (padding), or copies value's n
// elements (a whole default row).
void FillFromDefault(const Tensor& value, bool broadcast, Tensor* out,
                     int64_t offset, int64_t n) {
  if (n <= 0) return;
  DispatchAll(out->dtype(), [&]<typename T>() {
    const T* src = value.data<T>();
    T* dst = out->data<T>() + offset;
    for (int64_t i = 0; i < n; ++i) dst[i] = broadcast ? src[0] : src[i];
  });
}

// One example being parsed, for error messages.
struct ExampleRef {
  const Example* example;
  absl::string_view name;  // "<unknown>" without names.
  int64_t index;
};

std::string Where(const ExampleRef& ex, const std::string& key) {
  return absl::StrCat("Name: ", ex.name, ", Key: ", key, ", Index: ", ex.index,
                      ".  ");
}

// The feature `key` of the example, or nullptr.
const Feature* FindFeature(const ExampleRef& ex, const std::string& key) {
  const auto& map = ex.example->features().feature();
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

Status CheckType(const ExampleRef& ex, const std::string& key, const Feature& f,
                 DataType dt) {
  if (!FeatureTypeMatches(f, dt)) {
    return errors::InvalidArgument(
        Where(ex, key),
        "Data types don't match. Data type: ", FeatureTypeName(f),
        " but expected type: ", DataTypeString(dt));
  }
  return absl::OkStatus();
}

// Parses `n` serialized Examples in parallel.
Status ParseExamples(OpKernelContext* ctx, const tstring* serialized, int64_t n,
                     const std::vector<std::string>& names,
                     std::vector<Example>* examples) {
  examples->resize(n);
  std::vector<char> bad(n, 0);
  int64_t avg_size = 0;
  for (int64_t i = 0; i < n; ++i) avg_size += serialized[i].size();
  avg_size = n > 0 ? avg_size / n : 0;
  ctx->intra_op_threadpool()->ParallelFor(
      n, avg_size + 1000, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          bad[i] = !(*examples)[i].ParseFromString(serialized[i]);
        }
      });
  for (int64_t i = 0; i < n; ++i) {
    if (bad[i]) {
      const tstring& s = serialized[i];
      return errors::InvalidArgument(
          "Could not parse example input, value: '",
          absl::CEscape(absl::string_view(s).substr(0, 64)),
          s.size() > 64 ? "...'" : "'", " (Name: ", names[i], ", Index: ", i,
          ")");
    }
  }
  return absl::OkStatus();
}

// Validates and counts the values of dense feature `d` in each example:
// rows[b] is the number of rows example b contributes (-1: use default).
Status CountDenseRows(const DenseConfig& d, const std::vector<ExampleRef>& refs,
                      std::vector<int64_t>* rows) {
  rows->assign(refs.size(), -1);
  for (size_t b = 0; b < refs.size(); ++b) {
    const Feature* f = FindFeature(refs[b], d.key);
    if (f == nullptr) {
      if (!d.variable_length && d.default_value.NumElements() == 0) {
        return errors::InvalidArgument("Name: ", refs[b].name,
                                       ", Feature: ", d.key,
                                       " (data type: ", DataTypeString(d.dtype),
                                       ") is required but could not be found.");
      }
      continue;
    }
    RETURN_IF_ERROR(CheckType(refs[b], d.key, *f, d.dtype));
    const int64_t size = FeatureSize(*f);
    if (d.variable_length) {
      if (d.stride == 0 ? size != 0 : size % d.stride != 0) {
        return errors::InvalidArgument(
            Where(refs[b], d.key), "Number of ", DataTypeString(d.dtype),
            " values is not a multiple of stride length. Saw ", size,
            " values but output shape is: ", d.shape.DebugString());
      }
      (*rows)[b] = d.stride == 0 ? 0 : size / d.stride;
    } else {
      if (size != d.stride) {
        return errors::InvalidArgument(
            Where(refs[b], d.key), "Number of ", DataTypeString(d.dtype),
            " values != expected.  values size: ", size,
            " but output shape: ", d.row_shape.DebugString());
      }
      (*rows)[b] = 1;
    }
  }
  return absl::OkStatus();
}

// Builds dense output `d` for the examples: [B] + shape when batched, the
// shape alone otherwise.
Status MakeDenseOutput(OpKernelContext* ctx, int output, const DenseConfig& d,
                       const std::vector<ExampleRef>& refs, bool batched) {
  std::vector<int64_t> rows;
  RETURN_IF_ERROR(CountDenseRows(d, refs, &rows));
  int64_t max_rows = 0;
  for (int64_t r : rows) max_rows = std::max(max_rows, r);
  TensorShape shape;
  if (batched) shape.AddDim(static_cast<int64_t>(refs.size()));
  if (d.variable_length) shape.AddDim(max_rows);
  for (int64_t dim : d.row_shape.dim_sizes()) shape.AddDim(dim);
  Tensor* out;
  RETURN_IF_ERROR(ctx->allocate_output(output, shape, &out));
  // Elements per example in the output.
  const int64_t per_example =
      d.variable_length ? max_rows * d.stride : d.stride;
  ctx->intra_op_threadpool()->ParallelFor(
      static_cast<int64_t>(refs.size()), per_example + 10,
      [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
          const int64_t base = b * per_example;
          int64_t filled = 0;
          if (rows[b] >= 0) {
            const Feature* f = FindFeature(refs[b], d.key);
            CopyFeature(*f, d.dtype, out, base);
            filled = FeatureSize(*f);
          } else if (!d.variable_length) {
            FillFromDefault(d.default_value, false, out, base, per_example);
            filled = per_example;
          }
          // Variable-length rows are padded with the default.
          if (d.variable_length) {
            FillFromDefault(d.default_value, true, out, base + filled,
                            per_example - filled);
          }
        }
      });
  return absl::OkStatus();
}

// Builds the three outputs of sparse feature `s`.
Status MakeSparseOutputs(OpKernelContext* ctx, int indices_out, int values_out,
                         int shape_out, const SparseConfig& s,
                         const std::vector<ExampleRef>& refs, bool batched) {
  int64_t total = 0, max_size = 0;
  std::vector<const Feature*> features(refs.size(), nullptr);
  for (size_t b = 0; b < refs.size(); ++b) {
    const Feature* f = FindFeature(refs[b], s.key);
    if (f == nullptr) continue;
    RETURN_IF_ERROR(CheckType(refs[b], s.key, *f, s.dtype));
    features[b] = f;
    total += FeatureSize(*f);
    max_size = std::max(max_size, FeatureSize(*f));
  }
  const int rank = batched ? 2 : 1;
  Tensor *indices, *values, *dense_shape;
  RETURN_IF_ERROR(
      ctx->allocate_output(indices_out, TensorShape({total, rank}), &indices));
  RETURN_IF_ERROR(
      ctx->allocate_output(values_out, TensorShape({total}), &values));
  RETURN_IF_ERROR(
      ctx->allocate_output(shape_out, TensorShape({rank}), &dense_shape));
  int64_t* idx = indices->data<int64_t>();
  int64_t offset = 0;
  for (size_t b = 0; b < refs.size(); ++b) {
    if (features[b] == nullptr) continue;
    const int64_t n = FeatureSize(*features[b]);
    CopyFeature(*features[b], s.dtype, values, offset);
    for (int64_t i = 0; i < n; ++i) {
      int64_t* row = idx + (offset + i) * rank;
      if (batched) {
        row[0] = static_cast<int64_t>(b);
        row[1] = i;
      } else {
        row[0] = i;
      }
    }
    offset += n;
  }
  auto shape = dense_shape->flat<int64_t>();
  if (batched) {
    shape[0] = static_cast<int64_t>(refs.size());
    shape[1] = max_size;
  } else {
    shape[0] = max_size;
  }
  return absl::OkStatus();
}

// Builds the two outputs of ragged feature `r` (Note [Example feature
// semantics]).
Status MakeRaggedOutputs(OpKernelContext* ctx, int values_out, int splits_out,
                         const RaggedConfig& r,
                         const std::vector<ExampleRef>& refs, bool batched) {
  std::vector<const Feature*> features(refs.size(), nullptr);
  int64_t total = 0;
  for (size_t b = 0; b < refs.size(); ++b) {
    const Feature* f = FindFeature(refs[b], r.key);
    if (f == nullptr) continue;
    RETURN_IF_ERROR(CheckType(refs[b], r.key, *f, r.dtype));
    features[b] = f;
    total += FeatureSize(*f);
  }
  if (r.splits_dtype == DT_INT32 &&
      total > std::numeric_limits<int32_t>::max()) {
    return errors::InvalidArgument("Ragged feature ", r.key, " has ", total,
                                   " values, too many for int32 row splits");
  }
  const int64_t num_splits =
      batched ? static_cast<int64_t>(refs.size()) + 1 : 0;
  Tensor *values, *splits;
  RETURN_IF_ERROR(
      ctx->allocate_output(values_out, TensorShape({total}), &values));
  RETURN_IF_ERROR(
      ctx->allocate_output(splits_out, TensorShape({num_splits}), &splits));
  auto set_split = [&](int64_t i, int64_t v) {
    if (r.splits_dtype == DT_INT32) {
      splits->data<int32_t>()[i] = static_cast<int32_t>(v);
    } else {
      splits->data<int64_t>()[i] = v;
    }
  };
  if (batched) set_split(0, 0);
  int64_t offset = 0;
  for (size_t b = 0; b < refs.size(); ++b) {
    if (features[b] != nullptr) {
      CopyFeature(*features[b], r.dtype, values, offset);
      offset += FeatureSize(*features[b]);
    }
    if (batched) set_split(static_cast<int64_t>(b) + 1, offset);
  }
  return absl::OkStatus();
}

// Parses the examples and sets every output. Outputs are laid out as
// TensorFlow's: sparse indices, sparse values, sparse shapes, dense values,
// then (ParseExampleV2) ragged values and ragged row splits.
void ParseAndOutput(OpKernelContext* ctx, const ExampleConfig& config,
                    const tstring* serialized, int64_t n,
                    const std::vector<std::string>& names, bool batched) {
  std::vector<Example> examples;
  OP_REQUIRES_OK(ctx, ParseExamples(ctx, serialized, n, names, &examples));
  std::vector<ExampleRef> refs(n);
  for (int64_t i = 0; i < n; ++i) refs[i] = {&examples[i], names[i], i};
  const int ns = static_cast<int>(config.sparse.size());
  const int nd = static_cast<int>(config.dense.size());
  const int nr = static_cast<int>(config.ragged.size());
  for (int j = 0; j < ns; ++j) {
    OP_REQUIRES_OK(ctx, MakeSparseOutputs(ctx, j, ns + j, 2 * ns + j,
                                          config.sparse[j], refs, batched));
  }
  for (int d = 0; d < nd; ++d) {
    OP_REQUIRES_OK(
        ctx, MakeDenseOutput(ctx, 3 * ns + d, config.dense[d], refs, batched));
  }
  for (int r = 0; r < nr; ++r) {
    OP_REQUIRES_OK(ctx,
                   MakeRaggedOutputs(ctx, 3 * ns + nd + r, 3 * ns + nd + nr + r,
                                     config.ragged[r], refs, batched));
  }
}

// Output shapes of a parse op: sparse indices [?, rank], values [?], shapes
// [rank], dense prefix + dense_shapes[i] (unknown if the prefix is; a
// sparse_rank of -1 is unknown too).
Status ParseOutputShapes(InferenceContext* c, int64_t num_sparse,
                         const std::vector<PartialTensorShape>& dense_shapes,
                         const PartialTensorShape& prefix, int sparse_rank) {
  int out = 0;
  for (int64_t i = 0; i < num_sparse; ++i) {
    c->set_output(out++, PartialTensorShape({-1, sparse_rank}));
  }
  for (int64_t i = 0; i < num_sparse; ++i) {
    c->set_output(out++, PartialTensorShape({-1}));
  }
  for (int64_t i = 0; i < num_sparse; ++i) {
    c->set_output(out++, PartialTensorShape({sparse_rank}));
  }
  for (const PartialTensorShape& s : dense_shapes) {
    PartialTensorShape full = prefix;
    if (s.unknown_rank() || prefix.unknown_rank()) {
      full = PartialTensorShape();
    } else {
      for (int64_t d : s.dim_sizes()) full.AddDim(d);
    }
    c->set_output(out++, full);
  }
  return absl::OkStatus();
}

// Reads the type and shape attrs common to both parse ops.
template <typename Ctx>
Status GetParseAttrs(Ctx* c, std::vector<DataType>* sparse_types,
                     std::vector<DataType>* dense_types,
                     std::vector<PartialTensorShape>* dense_shapes) {
  RETURN_IF_ERROR(c->GetAttr("sparse_types", sparse_types));
  RETURN_IF_ERROR(c->GetAttr("Tdense", dense_types));
  return c->GetAttr("dense_shapes", dense_shapes);
}

// ---------------------------------------------------------------------------
// ParseExample

REGISTER_OP("ParseExample")
    .Input("serialized: string")
    .Input("names: string")
    .Input("sparse_keys: Nsparse * string")
    .Input("dense_keys: Ndense * string")
    .Input("dense_defaults: Tdense")
    .Output("sparse_indices: Nsparse * int64")
    .Output("sparse_values: sparse_types")
    .Output("sparse_shapes: Nsparse * int64")
    .Output("dense_values: Tdense")
    .Attr("Nsparse: int >= 0")
    .Attr("Ndense: int >= 0")
    .Attr("sparse_types: list({float, int64, string}) >= 0")
    .Attr("Tdense: list({float, int64, string}) >= 0")
    .Attr("dense_shapes: list(shape) >= 0")
    .SetShapeFn([](InferenceContext* c) {
      int64_t num_sparse, num_dense;
      RETURN_IF_ERROR(c->GetAttr("Nsparse", &num_sparse));
      RETURN_IF_ERROR(c->GetAttr("Ndense", &num_dense));
      std::vector<DataType> sparse_types, dense_types;
      std::vector<PartialTensorShape> dense_shapes;
      RETURN_IF_ERROR(
          GetParseAttrs(c, &sparse_types, &dense_types, &dense_shapes));
      ExampleConfig config;
      Status s = InitExampleConfig(num_sparse, num_dense, sparse_types,
                                   dense_types, dense_shapes, &config);
      if (!s.ok()) return c->InvalidArgument(s.message());
      PartialTensorShape input, names;
      RETURN_IF_ERROR(c->WithRank(0, 1, &input));
      RETURN_IF_ERROR(c->WithRankAtMost(1, 1, &names));
      return ParseOutputShapes(c, num_sparse, dense_shapes, input, 2);
    })
    .Doc(
        "Transforms a vector of tf.Example protos (as strings) into typed "
        "tensors.\n"
        "`serialized` is a batch of B serialized Examples; `names` their names "
        "for error messages (an empty vector, or B names). For each of the "
        "Nsparse `sparse_keys` the op outputs a SparseTensor of "
        "`sparse_types[j]`: indices [N, 2] of (batch, position), values [N] "
        "and dense shape [B, longest]. For each of the Ndense `dense_keys` it "
        "outputs dense_values[j] of shape [B] + dense_shapes[j]; every "
        "example must hold exactly dense_shapes[j].num_elements() values, or "
        "lack the feature and take dense_defaults[j] (an empty default makes "
        "the feature required). A dense shape whose first dimension is -1 is "
        "variable-length: rows are padded to the longest with the "
        "single-element default. Feature list kinds must match the types: "
        "float_list = float, int64_list = int64, bytes_list = string.");

class ParseExampleKernel : public OpKernel {
 public:
  explicit ParseExampleKernel(OpKernelConstruction* c) : OpKernel(c) {
    int64_t num_sparse, num_dense;
    OP_REQUIRES_OK(c, c->GetAttr("Nsparse", &num_sparse));
    OP_REQUIRES_OK(c, c->GetAttr("Ndense", &num_dense));
    std::vector<DataType> sparse_types, dense_types;
    std::vector<PartialTensorShape> dense_shapes;
    OP_REQUIRES_OK(
        c, GetParseAttrs(c, &sparse_types, &dense_types, &dense_shapes));
    OP_REQUIRES_OK(c, InitExampleConfig(num_sparse, num_dense, sparse_types,
                                        dense_types, dense_shapes, &config_));
  }

  void Compute(OpKernelContext* ctx) override {
    const int ns = static_cast<int>(config_.sparse.size());
    const int nd = static_cast<int>(config_.dense.size());
    const Tensor& serialized = ctx->input(0);
    const Tensor& names = ctx->input(1);
    OP_REQUIRES(ctx, serialized.dims() == 1,
                errors::InvalidArgument(
                    "Expected serialized to be a vector, got shape: ",
                    serialized.shape().DebugString()));
    OP_REQUIRES(ctx,
                names.NumElements() == 0 || names.shape() == serialized.shape(),
                errors::InvalidArgument(
                    "Expected names to be empty or to have the same shape as "
                    "serialized: names.shape=",
                    names.shape().DebugString(),
                    ", serialized.shape=", serialized.shape().DebugString()));
    ExampleConfig config = config_;
    for (int j = 0; j < ns; ++j) {
      OP_REQUIRES_OK(
          ctx, ScalarKey(ctx, 2 + j, "sparse_keys", j, &config.sparse[j].key));
    }
    for (int d = 0; d < nd; ++d) {
      OP_REQUIRES_OK(ctx, ScalarKey(ctx, 2 + ns + d, "dense_keys", d,
                                    &config.dense[d].key));
      OP_REQUIRES_OK(ctx, SetDenseDefault(d, ctx->input(2 + ns + nd + d),
                                          &config.dense[d]));
    }
    const int64_t n = serialized.NumElements();
    std::vector<std::string> example_names(n, "<unknown>");
    if (names.NumElements() > 0) {
      for (int64_t i = 0; i < n; ++i)
        example_names[i] = names.flat<tstring>()[i];
    }
    ParseAndOutput(ctx, config, serialized.data<tstring>(), n, example_names,
                   /*batched=*/true);
  }

 private:
  static Status ScalarKey(OpKernelContext* ctx, int input, const char* what,
                          int index, std::string* key) {
    const Tensor& t = ctx->input(input);
    if (t.dims() != 0) {
      return errors::InvalidArgument(
          "Expected ", what, "[", index,
          "] to be a scalar, got shape: ", t.shape().DebugString());
    }
    *key = t.scalar<tstring>();
    return absl::OkStatus();
  }

  ExampleConfig config_;  // Keys and defaults are filled per step.
};
REGISTER_KERNEL_BUILDER(Name("ParseExample").Device(kDeviceCpu),
                        ParseExampleKernel);
REGISTER_NO_GRADIENT("ParseExample", "its input is serialized protos");

// ---------------------------------------------------------------------------
// ParseExampleV2
//
// TF 2's parser. Unlike ParseExample: `serialized` may be a scalar (one
// example: outputs as ParseSingleExample's) or a vector; each kind of key
// comes as one string vector; num_sparse is an attr, there is no Ndense; and
// there are ragged features.

// The type and shape part of ParseExampleV2's config, from its attrs.
template <typename Ctx>
Status InitExampleV2Config(Ctx* c, ExampleConfig* config,
                           std::vector<PartialTensorShape>* dense_shapes) {
  int64_t num_sparse;
  RETURN_IF_ERROR(c->GetAttr("num_sparse", &num_sparse));
  std::vector<DataType> sparse_types, dense_types, ragged_value_types,
      ragged_split_types;
  RETURN_IF_ERROR(GetParseAttrs(c, &sparse_types, &dense_types, dense_shapes));
  RETURN_IF_ERROR(c->GetAttr("ragged_value_types", &ragged_value_types));
  RETURN_IF_ERROR(c->GetAttr("ragged_split_types", &ragged_split_types));
  RETURN_IF_ERROR(
      InitExampleConfig(num_sparse, static_cast<int64_t>(dense_types.size()),
                        sparse_types, dense_types, *dense_shapes, config));
  if (ragged_value_types.size() != ragged_split_types.size()) {
    return errors::InvalidArgument(
        "len(ragged_value_types) ", ragged_value_types.size(),
        " != len(ragged_split_types) ", ragged_split_types.size());
  }
  RETURN_IF_ERROR(CheckParseTypes(ragged_value_types, "ragged_value_types"));
  config->ragged.resize(ragged_value_types.size());
  for (size_t i = 0; i < ragged_value_types.size(); ++i) {
    if (ragged_split_types[i] != DT_INT32 &&
        ragged_split_types[i] != DT_INT64) {
      return errors::InvalidArgument("ragged_split_types[", i, "] is ",
                                     DataTypeString(ragged_split_types[i]),
                                     "; must be int32 or int64");
    }
    config->ragged[i].dtype = ragged_value_types[i];
    config->ragged[i].splits_dtype = ragged_split_types[i];
  }
  return absl::OkStatus();
}

REGISTER_OP("ParseExampleV2")
    .Input("serialized: string")
    .Input("names: string")
    .Input("sparse_keys: string")
    .Input("dense_keys: string")
    .Input("ragged_keys: string")
    .Input("dense_defaults: Tdense")
    .Output("sparse_indices: num_sparse * int64")
    .Output("sparse_values: sparse_types")
    .Output("sparse_shapes: num_sparse * int64")
    .Output("dense_values: Tdense")
    .Output("ragged_values: ragged_value_types")
    .Output("ragged_row_splits: ragged_split_types")
    .Attr("Tdense: list({float, int64, string}) >= 0")
    .Attr("num_sparse: int >= 0")
    .Attr("sparse_types: list({float, int64, string}) >= 0")
    .Attr("ragged_value_types: list({float, int64, string}) >= 0")
    .Attr("ragged_split_types: list({int32, int64}) >= 0")
    .Attr("dense_shapes: list(shape) >= 0")
    .SetShapeFn([](InferenceContext* c) {
      ExampleConfig config;
      std::vector<PartialTensorShape> dense_shapes;
      Status s = InitExampleV2Config(c, &config, &dense_shapes);
      if (!s.ok()) return c->InvalidArgument(s.message());
      PartialTensorShape input, unused;
      RETURN_IF_ERROR(c->WithRankAtMost(0, 1, &input));
      RETURN_IF_ERROR(c->WithRankAtMost(1, 1, &unused));  // names
      for (int i = 2; i <= 4; ++i) {
        RETURN_IF_ERROR(c->WithRankAtMost(i, 1, &unused));  // keys
      }
      const int sparse_rank = input.unknown_rank() ? -1 : input.dims() + 1;
      RETURN_IF_ERROR(
          ParseOutputShapes(c, static_cast<int64_t>(config.sparse.size()),
                            dense_shapes, input, sparse_rank));
      // Ragged values [?] and row splits [B + 1] (B unknown for a scalar:
      // its splits tensor is empty).
      const int nr = static_cast<int>(config.ragged.size());
      int out = 3 * static_cast<int>(config.sparse.size()) +
                static_cast<int>(dense_shapes.size());
      int64_t num_splits = -1;
      if (input.dims() == 1 && input.dim_size(0) >= 0) {
        num_splits = input.dim_size(0) + 1;
      }
      for (int r = 0; r < nr; ++r) {
        c->set_output(out + r, PartialTensorShape({-1}));
        c->set_output(out + nr + r, PartialTensorShape({num_splits}));
      }
      return absl::OkStatus();
    })
    .Doc(
        "Transforms a vector of tf.Example protos (as strings) into typed "
        "tensors.\n"
        "`serialized` is a vector of B serialized Examples, or a scalar (one "
        "example); `names` their names for error messages (empty, or of "
        "serialized's shape). `sparse_keys`, `dense_keys` and `ragged_keys` "
        "are string vectors with num_sparse, len(Tdense) and "
        "len(ragged_value_types) keys. Each sparse feature gives a "
        "SparseTensor of `sparse_types[j]`: indices [N, R + 1] of (batch, "
        "position) (just position for a scalar), values [N] and dense shape "
        "[B, longest] ([longest] for a scalar), R being serialized's rank. "
        "Each dense feature gives dense_values[j] of shape serialized.shape + "
        "dense_shapes[j], with the semantics of ParseExample: exactly "
        "dense_shapes[j].num_elements() values per example or the default "
        "(an empty default makes the feature required); a first dimension of "
        "-1 is variable-length, padded with the single-element default. Each "
        "ragged feature gives ragged_values[j], the values of all examples "
        "concatenated, and ragged_row_splits[j] of `ragged_split_types[j]`, "
        "B + 1 offsets into them (empty for a scalar); a missing feature is "
        "an empty row. Feature list kinds must match the types: float_list = "
        "float, int64_list = int64, bytes_list = string.");

class ParseExampleV2Kernel : public OpKernel {
 public:
  explicit ParseExampleV2Kernel(OpKernelConstruction* c) : OpKernel(c) {
    std::vector<PartialTensorShape> dense_shapes;
    OP_REQUIRES_OK(c, InitExampleV2Config(c, &config_, &dense_shapes));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& serialized = ctx->input(0);
    const Tensor& names = ctx->input(1);
    OP_REQUIRES(ctx, serialized.dims() <= 1,
                errors::InvalidArgument(
                    "Expected serialized to be a scalar or vector, got shape: ",
                    serialized.shape().DebugString()));
    OP_REQUIRES(ctx,
                names.NumElements() == 0 || names.shape() == serialized.shape(),
                errors::InvalidArgument(
                    "Expected names to be empty or to have the same shape as "
                    "serialized: names.shape=",
                    names.shape().DebugString(),
                    ", serialized.shape=", serialized.shape().DebugString()));
    ExampleConfig config = config_;
    OP_REQUIRES_OK(ctx, SetKeys(ctx->input(2), "sparse_keys", "num_sparse",
                                &config.sparse));
    OP_REQUIRES_OK(ctx, SetKeys(ctx->input(3), "dense_keys", "len(dense_types)",
                                &config.dense));
    OP_REQUIRES_OK(ctx, SetKeys(ctx->input(4), "ragged_keys",
                                "len(ragged_value_types)", &config.ragged));
    for (size_t d = 0; d < config.dense.size(); ++d) {
      const int i = static_cast<int>(d);
      OP_REQUIRES_OK(ctx,
                     SetDenseDefault(i, ctx->input(5 + i), &config.dense[d]));
    }
    const int64_t n = serialized.NumElements();
    std::vector<std::string> example_names(n, "<unknown>");
    if (names.NumElements() > 0) {
      for (int64_t i = 0; i < n; ++i)
        example_names[i] = names.flat<tstring>()[i];
    }
    ParseAndOutput(ctx, config, serialized.data<tstring>(), n, example_names,
                   /*batched=*/serialized.dims() == 1);
  }

 private:
  // Sets the keys of `configs` from the string vector `keys` (input `what`),
  // which must hold one key per config.
  template <typename Config>
  static Status SetKeys(const Tensor& keys, const char* what,
                        const char* expected, std::vector<Config>* configs) {
    if (keys.dims() > 1) {
      return errors::InvalidArgument(
          "Expected ", what,
          " to be a vector, got shape: ", keys.shape().DebugString());
    }
    if (keys.NumElements() != static_cast<int64_t>(configs->size())) {
      return errors::InvalidArgument("Expected len(", what, ") == ", expected,
                                     " but got: ", keys.NumElements(), " vs. ",
                                     configs->size());
    }
    for (size_t i = 0; i < configs->size(); ++i) {
      (*configs)[i].key = keys.flat<tstring>()[i];
    }
    return absl::OkStatus();
  }

  ExampleConfig config_;  // Keys and defaults are filled per step.
};
REGISTER_KERNEL_BUILDER(Name("ParseExampleV2").Device(kDeviceCpu),
                        ParseExampleV2Kernel);
REGISTER_NO_GRADIENT("ParseExampleV2", "its input is serialized protos");

// ---------------------------------------------------------------------------
// ParseSingleExample

REGISTER_OP("ParseSingleExample")
    .Input("serialized: string")
    .Input("dense_defaults: Tdense")
    .Output("sparse_indices: num_sparse * int64")
    .Output("sparse_values: sparse_types")
    .Output("sparse_shapes: num_sparse * int64")
    .Output("dense_values: Tdense")
    .Attr("num_sparse: int >= 0")
    .Attr("sparse_keys: list(string) >= 0")
    .Attr("dense_keys: list(string) >= 0")
    .Attr("sparse_types: list({float, int64, string}) >= 0")
    .Attr("Tdense: list({float, int64, string}) >= 0")
    .Attr("dense_shapes: list(shape) >= 0")
    .SetShapeFn([](InferenceContext* c) {
      int64_t num_sparse;
      RETURN_IF_ERROR(c->GetAttr("num_sparse", &num_sparse));
      std::vector<std::string> sparse_keys, dense_keys;
      RETURN_IF_ERROR(c->GetAttr("sparse_keys", &sparse_keys));
      RETURN_IF_ERROR(c->GetAttr("dense_keys", &dense_keys));
      std::vector<DataType> sparse_types, dense_types;
      std::vector<PartialTensorShape> dense_shapes;
      RETURN_IF_ERROR(
          GetParseAttrs(c, &sparse_types, &dense_types, &dense_shapes));
      if (static_cast<int64_t>(sparse_keys.size()) != num_sparse) {
        return c->InvalidArgument("len(sparse_keys) ", sparse_keys.size(),
                                  " != num_sparse ", num_sparse);
      }
      ExampleConfig config;
      Status s = InitExampleConfig(num_sparse, dense_keys.size(), sparse_types,
                                   dense_types, dense_shapes, &config);
      if (!s.ok()) return c->InvalidArgument(s.message());
      PartialTensorShape input;
      RETURN_IF_ERROR(c->WithRank(0, 0, &input));
      return ParseOutputShapes(c, num_sparse, dense_shapes,
                               PartialTensorShape({}), 1);
    })
    .Doc(
        "Transforms a single tf.Example proto (as a string) into typed "
        "tensors.\n"
        "Like ParseExample for one scalar `serialized`, with the keys given "
        "as attrs: each sparse feature gives indices [N, 1], values [N] and "
        "dense shape [N]; each dense feature gives a tensor of "
        "dense_shapes[j] (for a variable-length shape [-1, ...], as many rows "
        "as the example holds, none if it lacks the feature).");

class ParseSingleExampleKernel : public OpKernel {
 public:
  explicit ParseSingleExampleKernel(OpKernelConstruction* c) : OpKernel(c) {
    int64_t num_sparse;
    OP_REQUIRES_OK(c, c->GetAttr("num_sparse", &num_sparse));
    std::vector<std::string> sparse_keys, dense_keys;
    OP_REQUIRES_OK(c, c->GetAttr("sparse_keys", &sparse_keys));
    OP_REQUIRES_OK(c, c->GetAttr("dense_keys", &dense_keys));
    OP_REQUIRES(c, static_cast<int64_t>(sparse_keys.size()) == num_sparse,
                errors::InvalidArgument("len(sparse_keys) ", sparse_keys.size(),
                                        " != num_sparse ", num_sparse));
    std::vector<DataType> sparse_types, dense_types;
    std::vector<PartialTensorShape> dense_shapes;
    OP_REQUIRES_OK(
        c, GetParseAttrs(c, &sparse_types, &dense_types, &dense_shapes));
    OP_REQUIRES_OK(c, InitExampleConfig(
                          num_sparse, static_cast<int64_t>(dense_keys.size()),
                          sparse_types, dense_types, dense_shapes, &config_));
    for (int64_t i = 0; i < num_sparse; ++i) {
      config_.sparse[i].key = sparse_keys[i];
    }
    for (size_t i = 0; i < dense_keys.size(); ++i) {
      config_.dense[i].key = dense_keys[i];
    }
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& serialized = ctx->input(0);
    OP_REQUIRES(ctx, serialized.dims() == 0,
                errors::InvalidArgument(
                    "Expected serialized to be a scalar, got shape: ",
                    serialized.shape().DebugString()));
    ExampleConfig config = config_;
    for (size_t d = 0; d < config.dense.size(); ++d) {
      OP_REQUIRES_OK(ctx, SetDenseDefault(static_cast<int>(d),
                                          ctx->input(1 + static_cast<int>(d)),
                                          &config.dense[d]));
    }
    ParseAndOutput(ctx, config, serialized.data<tstring>(), 1, {"<unknown>"},
                   /*batched=*/false);
  }

 private:
  ExampleConfig config_;  // Defaults are filled per step.
};
REGISTER_KERNEL_BUILDER(Name("ParseSingleExample").Device(kDeviceCpu),
                        ParseSingleExampleKernel);
REGISTER_NO_GRADIENT("ParseSingleExample", "its input is a serialized proto");

}  // namespace
}  // namespace runnel
