#include "testing/op_test_util.h"

namespace runnel {

CpuDevice* TestCpuDevice() {
  static CpuDevice* d = new CpuDevice(
      "/job:localhost/replica:0/task:0/device:CPU:0", CpuThreadPool());
  return d;
}

OpTestCase::OpTestCase(std::string op, std::string node_name)
    : op_(std::move(op)), node_name_(std::move(node_name)) {}

Status OpTestCase::Run() { return RunImpl(true); }
Status OpTestCase::RunKernelOnly() { return RunImpl(false); }

namespace {

StatusOr<std::vector<PartialTensorShape>> RunShapeFn(
    const NodeProperties& props, const std::vector<PartialTensorShape>& shapes,
    const std::vector<const Tensor*>& values) {
  if (!props.op_reg->shape_fn) {
    return errors::Internal("op ", props.op, " has no shape function");
  }
  InferenceContext c(props.name, props.op, &props.attrs, props.input_types,
                     shapes, values,
                     static_cast<int>(props.output_types.size()));
  RETURN_IF_ERROR(props.op_reg->shape_fn(&c));
  return c.outputs();
}

}  // namespace

StatusOr<std::vector<PartialTensorShape>> InferShapes(
    const std::string& op, const AttrMap& attrs,
    const std::vector<PartialTensorShape>& input_shapes) {
  ASSIGN_OR_RETURN(auto props, NodeProperties::Create("infer", op, "", attrs));
  return RunShapeFn(*props, input_shapes,
                    std::vector<const Tensor*>(input_shapes.size(), nullptr));
}

Status OpTestCase::RunImpl(bool check_shapes) {
  outputs_.clear();
  ASSIGN_OR_RETURN(auto props,
                   NodeProperties::Create(node_name_, op_, "", attrs_));
  if (props->input_types.size() != inputs_.size()) {
    return errors::InvalidArgument("test declares ", inputs_.size(),
                                   " inputs but ", op_, " takes ",
                                   props->input_types.size());
  }
  std::vector<PartialTensorShape> shapes;
  std::vector<const Tensor*> values;
  for (const Tensor& t : inputs_) {
    shapes.push_back(t.shape());
    values.push_back(&t);
  }
  if (check_shapes) {
    // Values unknown first: must not fail where values known would succeed.
    ASSIGN_OR_RETURN(
        auto unknown_values,
        RunShapeFn(*props, shapes,
                   std::vector<const Tensor*>(shapes.size(), nullptr)));
    ASSIGN_OR_RETURN(inferred_, RunShapeFn(*props, shapes, values));
    for (size_t i = 0; i < unknown_values.size(); ++i) {
      if (!unknown_values[i].IsCompatibleWith(inferred_[i])) {
        return errors::Internal("shape function of ", op_, " output ", i,
                                " gives ", unknown_values[i].DebugString(),
                                " without input values but ",
                                inferred_[i].DebugString(), " with them");
      }
    }
  }
  std::unique_ptr<OpKernel> kernel;
  RETURN_IF_ERROR(CreateOpKernel("CPU", TestCpuDevice(), props, &kernel));
  std::vector<Tensor> in_copies = inputs_;
  std::vector<TensorValue> in_values;
  for (Tensor& t : in_copies) in_values.push_back({&t, nullptr});
  OpKernelContext::Params params;
  params.op_kernel = kernel.get();
  params.device = TestCpuDevice();
  params.inputs = in_values;
  params.resource_manager = TestCpuDevice()->resource_manager();
  static StepResources* step_resources =
      new StepResources(TestCpuDevice()->resource_manager());
  params.step_resources = step_resources;
  OpKernelContext ctx(&params);
  kernel->Compute(&ctx);
  if (!ctx.status().ok()) {
    return errors::Prefix(ctx.status(), kernel->ErrorPrefix());
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    auto* slot = ctx.mutable_output_slot(i);
    if (!slot->has_value) {
      return errors::Internal(op_, " kernel did not set output ", i);
    }
    Tensor out = slot->ref ? *slot->ref : slot->value;
    if (check_shapes && !inferred_[i].IsCompatibleWith(out.shape())) {
      return errors::Internal("shape function of ", op_, " inferred ",
                              inferred_[i].DebugString(), " for output ", i,
                              " but the kernel produced ",
                              out.shape().DebugString());
    }
    outputs_.push_back(std::move(out));
  }
  return absl::OkStatus();
}

}  // namespace runnel
