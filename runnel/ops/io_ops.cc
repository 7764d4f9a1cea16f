// Checkpoint ops: SaveV2 / RestoreV2 write and read TensorFlow's V2 tensor
// bundles (runnel/io/tensor_bundle.h), MergeV2Checkpoints joins the shards
// of a sharded save, and ShardedFilename / ShardedFilespec build the shard
// names a Saver graph uses. Save and Restore are ordinary graph ops (OSDI
// §4.3): a Saver is just a few of these nodes.
//
// Partitioned variables (non-empty shape_and_slices) are not supported: the
// kernels reject them with Unimplemented.
#include <unistd.h>

#include "absl/strings/str_format.h"
#include "runnel/base/env.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/gradients.h"
#include "runnel/io/tensor_bundle.h"

namespace runnel {
namespace {

// Checks that the string input `i` is a scalar.
Status ScalarInput(OpKernelContext* ctx, int i, const char* what) {
  if (ctx->input(i).dims() != 0) {
    return errors::InvalidArgument(what, " must be a scalar, got shape ",
                                   ctx->input(i).shape().DebugString());
  }
  return absl::OkStatus();
}

// tensor_names and shape_and_slices: vectors of `n` strings each.
Status NamesAndSlices(OpKernelContext* ctx, int64_t n) {
  const Tensor& names = ctx->input(1);
  const Tensor& slices = ctx->input(2);
  if (names.dims() != 1 || names.dim_size(0) != n) {
    return errors::InvalidArgument("tensor_names must be a vector of ", n,
                                   " names (one per tensor), got shape ",
                                   names.shape().DebugString());
  }
  if (slices.dims() != 1 || slices.dim_size(0) != n) {
    return errors::InvalidArgument("shape_and_slices must be a vector of ", n,
                                   " strings (one per tensor), got shape ",
                                   slices.shape().DebugString());
  }
  for (int64_t i = 0; i < n; ++i) {
    if (!slices.flat<tstring>()[i].empty()) {
      return errors::Unimplemented(
          "tensor '", names.flat<tstring>()[i], "' has shape_and_slice '",
          slices.flat<tstring>()[i],
          "': saving or restoring slices of partitioned variables is not "
          "supported (use \"\" for the whole tensor)");
    }
  }
  return absl::OkStatus();
}

// Shape fn checks shared by SaveV2 and RestoreV2: prefix scalar, names and
// slices vectors of `n` (when n >= 0).
Status CheckSaveRestoreInputs(InferenceContext* c, int64_t n) {
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->WithRank(0, 0, &unused));
  for (int i = 1; i <= 2; ++i) {
    PartialTensorShape s;
    RETURN_IF_ERROR(c->WithRank(i, 1, &s));
    if (n >= 0 && s.dim_size(0) >= 0 && s.dim_size(0) != n) {
      return c->InvalidArgument("input ", i, " has ", s.dim_size(0),
                                " elements but there are ", n, " tensors");
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// SaveV2

REGISTER_OP("SaveV2")
    .Input("prefix: string")
    .Input("tensor_names: string")
    .Input("shape_and_slices: string")
    .Input("tensors: dtypes")
    .Attr("dtypes: list(type)")
    .SetIsStateful()
    .SetDoesIO()
    .SetShapeFn([](InferenceContext* c) {
      return CheckSaveRestoreInputs(c, c->num_inputs() - 3);
    })
    .Doc(R"doc(Saves tensors in the V2 checkpoint format (a tensor bundle).

Writes `prefix`.index and `prefix`.data-00000-of-00001, each under a
temporary name first and then renamed, so the checkpoint appears complete
or not at all. tensor_names[i] names tensors[i]; shape_and_slices must be
all "" (whole tensors; slices of partitioned variables are unsupported).)doc");

class SaveV2Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int64_t n = ctx->num_inputs() - 3;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, 0, "prefix"));
    OP_REQUIRES_OK(ctx, NamesAndSlices(ctx, n));
    const std::string& prefix = ctx->input(0).scalar<tstring>();
    const auto names = ctx->input(1).flat<tstring>();
    BundleWriter writer(prefix);
    OP_REQUIRES_OK(ctx, writer.status());
    for (int64_t i = 0; i < n; ++i) {
      OP_REQUIRES_OK(ctx, writer.Add(names[i], ctx->input(3 + i)));
    }
    OP_REQUIRES_OK(ctx, writer.Finish());
  }
};
REGISTER_KERNEL_BUILDER(Name("SaveV2").Device(kDeviceCpu), SaveV2Kernel);

// ---------------------------------------------------------------------------
// RestoreV2

REGISTER_OP("RestoreV2")
    .Input("prefix: string")
    .Input("tensor_names: string")
    .Input("shape_and_slices: string")
    .Output("tensors: dtypes")
    .Attr("dtypes: list(type)")
    .SetIsStateful()
    .SetDoesIO()
    .SetShapeFn([](InferenceContext* c) {
      RETURN_IF_ERROR(CheckSaveRestoreInputs(c, c->num_outputs()));
      // The shapes are in the checkpoint, not the graph.
      return shape_fns::UnknownShape(c);
    })
    .Doc(R"doc(Restores tensors from a V2 checkpoint.

Reads tensor_names[i] from the checkpoint at `prefix` into tensors[i], with
the shape stored there; its stored dtype must equal dtypes[i]. Every
tensor's checksum is verified: a corrupt or truncated checkpoint is a
DataLoss error naming the tensor, a missing one NotFound. shape_and_slices
must be all "" (slices of partitioned variables are unsupported).)doc");

class RestoreV2Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int64_t n = num_outputs();
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, 0, "prefix"));
    OP_REQUIRES_OK(ctx, NamesAndSlices(ctx, n));
    const std::string& prefix = ctx->input(0).scalar<tstring>();
    const auto names = ctx->input(1).flat<tstring>();
    BundleReader reader(prefix);
    OP_REQUIRES_OK(ctx, reader.status());
    // Read (and verify) everything before setting any output.
    std::vector<Tensor> values(n);
    for (int64_t i = 0; i < n; ++i) {
      DataType dtype;
      TensorShape shape;
      OP_REQUIRES_OK(ctx, reader.LookupDtypeAndShape(names[i], &dtype, &shape));
      OP_REQUIRES(ctx, dtype == output_type(static_cast<int>(i)),
                  errors::InvalidArgument(
                      "tensor '", names[i], "' in checkpoint ", prefix,
                      " has type ", DataTypeString(dtype), " but ",
                      DataTypeString(output_type(static_cast<int>(i))),
                      " was expected"));
      OP_REQUIRES_OK(ctx, reader.Lookup(names[i], &values[i]));
    }
    for (int64_t i = 0; i < n; ++i) {
      ctx->set_output(static_cast<int>(i), std::move(values[i]));
    }
  }
};
REGISTER_KERNEL_BUILDER(Name("RestoreV2").Device(kDeviceCpu), RestoreV2Kernel);

// ---------------------------------------------------------------------------
// MergeV2Checkpoints

REGISTER_OP("MergeV2Checkpoints")
    .Input("checkpoint_prefixes: string")
    .Input("destination_prefix: string")
    .Attr("delete_old_dirs: bool = true")
    .Attr("allow_missing_files: bool = false")
    .SetIsStateful()
    .SetDoesIO()
    .SetShapeFn([](InferenceContext* c) {
      PartialTensorShape unused;
      RETURN_IF_ERROR(c->WithRank(0, 1, &unused));
      return c->WithRank(1, 0, &unused);
    })
    .Doc(R"doc(Merges the V2 checkpoints of a sharded save into one.

Renames the data files of every checkpoint in checkpoint_prefixes to
`destination_prefix`.data-i-of-n and writes one index for them (atomically),
deleting the old index files. With delete_old_dirs, then removes each old
prefix's directory if it is empty and not the destination's. With
allow_missing_files, prefixes without an index are skipped (but at least
one must exist).)doc");

class MergeV2CheckpointsKernel : public OpKernel {
 public:
  explicit MergeV2CheckpointsKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("delete_old_dirs", &delete_old_dirs_));
    OP_REQUIRES_OK(c, c->GetAttr("allow_missing_files", &allow_missing_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& prefixes = ctx->input(0);
    OP_REQUIRES(ctx, prefixes.dims() == 1,
                errors::InvalidArgument(
                    "checkpoint_prefixes must be a vector, got shape ",
                    prefixes.shape().DebugString()));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, 1, "destination_prefix"));
    const std::string& dest = ctx->input(1).scalar<tstring>();
    std::vector<std::string> inputs;
    for (const tstring& p : prefixes.flat<tstring>()) {
      if (allow_missing_ && !FileExists(MetaFilename(p))) continue;
      inputs.push_back(p);
    }
    OP_REQUIRES(
        ctx, !inputs.empty(),
        errors::InvalidArgument(
            "no checkpoints to merge into ", dest,
            prefixes.NumElements() > 0 ? " (none of the inputs exist)" : ""));
    OP_REQUIRES_OK(ctx, MergeBundles(inputs, dest));
    if (delete_old_dirs_) {
      const std::string dest_dir = Dirname(dest);
      for (const std::string& p : inputs) {
        const std::string dir = Dirname(p);
        // Best effort, as TF: only an empty directory goes.
        if (!dir.empty() && dir != dest_dir) ::rmdir(dir.c_str());
      }
    }
  }

 private:
  static std::string Dirname(const std::string& path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash);
  }

  bool delete_old_dirs_ = true;
  bool allow_missing_ = false;
};
REGISTER_KERNEL_BUILDER(Name("MergeV2Checkpoints").Device(kDeviceCpu),
                        MergeV2CheckpointsKernel);

// ---------------------------------------------------------------------------
// ShardedFilename, ShardedFilespec

Status ScalarInputsScalarOutput(InferenceContext* c) {
  PartialTensorShape unused;
  for (int i = 0; i < c->num_inputs(); ++i) {
    RETURN_IF_ERROR(c->WithRank(i, 0, &unused));
  }
  return shape_fns::ScalarShape(c);
}

REGISTER_OP("ShardedFilename")
    .Input("basename: string")
    .Input("shard: int32")
    .Input("num_shards: int32")
    .Output("filename: string")
    .SetShapeFn(ScalarInputsScalarOutput)
    .Doc(R"doc(Generates a sharded filename: "%s-%05d-of-%05d" of
basename, shard and num_shards.)doc");

class ShardedFilenameKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, 0, "basename"));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, 1, "shard"));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, 2, "num_shards"));
    const int32_t shard = ctx->input(1).scalar<int32_t>();
    const int32_t num = ctx->input(2).scalar<int32_t>();
    OP_REQUIRES(
        ctx, num > 0 && shard >= 0 && shard < num,
        errors::InvalidArgument("shard ", shard,
                                " must be in [0, num_shards = ", num, ")"));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->scalar<tstring>() = absl::StrFormat(
        "%s-%05d-of-%05d", ctx->input(0).scalar<tstring>(), shard, num);
  }
};
REGISTER_KERNEL_BUILDER(Name("ShardedFilename").Device(kDeviceCpu),
                        ShardedFilenameKernel);

REGISTER_OP("ShardedFilespec")
    .Input("basename: string")
    .Input("num_shards: int32")
    .Output("filename: string")
    .SetShapeFn(ScalarInputsScalarOutput)
    .Doc(R"doc(Generates a glob pattern matching all sharded file names:
"%s-?????" "-of-%05d" of basename and num_shards.)doc");

class ShardedFilespecKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, 0, "basename"));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, 1, "num_shards"));
    const int32_t num = ctx->input(1).scalar<int32_t>();
    OP_REQUIRES(
        ctx, num > 0,
        errors::InvalidArgument("num_shards must be positive, got ", num));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->scalar<tstring>() = absl::StrFormat(
        "%s-?????"
        "-of-%05d",
        ctx->input(0).scalar<tstring>(), num);
  }
};
REGISTER_KERNEL_BUILDER(Name("ShardedFilespec").Device(kDeviceCpu),
                        ShardedFilespecKernel);

}  // namespace

REGISTER_NO_GRADIENT("SaveV2", "it writes a file and has no outputs");
REGISTER_NO_GRADIENT("RestoreV2", "its outputs are read from a file");
REGISTER_NO_GRADIENT("MergeV2Checkpoints", "it renames files");
REGISTER_NO_GRADIENT("ShardedFilename", "its output is a file name (string)");
REGISTER_NO_GRADIENT("ShardedFilespec", "its output is a file name (string)");

}  // namespace runnel
