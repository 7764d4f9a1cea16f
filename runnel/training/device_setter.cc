#include "runnel/training/device_setter.h"

#include <algorithm>
#include <memory>

#include "runnel/framework/device_name.h"
#include "runnel/framework/tensor_shape.h"
#include "runnel/framework/types.h"

namespace runnel::training {
namespace {

// TF's STANDARD_PS_OPS.
const std::vector<std::string>& DefaultPsOps() {
  static const auto* ops = new std::vector<std::string>{
      "Variable",
      "VariableV2",
      "AutoReloadVariable",
      "MutableHashTable",
      "MutableHashTableV2",
      "MutableHashTableOfTensors",
      "MutableHashTableOfTensorsV2",
      "MutableDenseHashTable",
      "MutableDenseHashTableV2",
      "VarHandleOp",
      "BoostedTreesEnsembleResourceHandleOp",
      "BoostedTreesQuantileStreamResourceHandleOp",
  };
  return *ops;
}

// `base` with every field `over` sets replaced (TF's make_merged_spec).
DeviceName Merged(DeviceName base, const DeviceName& over) {
  if (!over.job.empty()) base.job = over.job;
  if (over.replica >= 0) base.replica = over.replica;
  if (over.task >= 0) base.task = over.task;
  if (!over.type.empty()) base.type = over.type;
  if (over.id >= 0) base.id = over.id;
  return base;
}

// The bytes a variable-making op's variable takes (0 when unknown).
int64_t VariableBytes(const AttrMap& attrs) {
  PartialTensorShape shape;
  DataType dtype = DT_INVALID;
  if (!GetAttr(attrs, "shape", &shape).ok() ||
      !GetAttr(attrs, "dtype", &dtype).ok() || !shape.IsFullyDefined()) {
    return 0;
  }
  int64_t n = 1;
  for (int64_t d : shape.dim_sizes()) {
    if (d != 0 && n > INT64_MAX / d) return INT64_MAX;
    n *= d;
  }
  const int64_t size = DataTypeIsPod(dtype) ? DataTypeSize(dtype) : 0;
  return size != 0 && n > INT64_MAX / size ? INT64_MAX : n * size;
}

struct SetterState {
  ReplicaDeviceSetterOptions options;
  DeviceName ps, worker;
  int next_task = 0;           // kRoundRobin.
  std::vector<int64_t> loads;  // kGreedyByBytes: bytes per task.

  int ChooseTask(const AttrMap& attrs) {
    const int n = options.ps_tasks;
    if (options.strategy == PsStrategy::kRoundRobin) {
      const int t = next_task;
      next_task = (next_task + 1) % n;
      return t;
    }
    const int t = static_cast<int>(
        std::min_element(loads.begin(), loads.end()) - loads.begin());
    const int64_t bytes = VariableBytes(attrs);
    loads[t] = bytes > INT64_MAX - loads[t] ? INT64_MAX : loads[t] + bytes;
    return t;
  }

  std::string Device(absl::string_view op, const AttrMap& attrs,
                     absl::string_view device) {
    if (!options.merge_devices && !device.empty()) return std::string(device);
    auto current = DeviceName::Parse(device);
    if (!current.ok()) return std::string(device);  // The placer says why.
    const auto& ps_ops = options.ps_ops;
    if (options.ps_tasks > 0 &&
        std::find(ps_ops.begin(), ps_ops.end(), op) != ps_ops.end()) {
      DeviceName d = ps;
      if (!d.job.empty() && (current->job.empty() || current->job == d.job)) {
        d.task = ChooseTask(attrs);
      }
      return Merged(d, *current).ToString();
    }
    return Merged(worker, *current).ToString();
  }
};

}  // namespace

StatusOr<Scope::DeviceFunction> ReplicaDeviceSetter(
    const ReplicaDeviceSetterOptions& options) {
  auto state = std::make_shared<SetterState>();
  state->options = options;
  ReplicaDeviceSetterOptions& o = state->options;
  if (o.ps_tasks < 0) {
    return errors::InvalidArgument("ReplicaDeviceSetter: ps_tasks is ",
                                   o.ps_tasks, "; it must be >= 0");
  }
  if (o.ps_tasks == 0 && o.cluster != nullptr) {
    for (const auto& job : o.cluster->job()) {
      if (job.name() == "ps") o.ps_tasks = job.tasks_size();
    }
  }
  o.cluster = nullptr;
  if (o.ps_ops.empty()) o.ps_ops = DefaultPsOps();
  auto ps = DeviceName::Parse(o.ps_device);
  if (!ps.ok()) {
    return errors::InvalidArgument("ReplicaDeviceSetter: bad ps_device '",
                                   o.ps_device, "': ", ps.status().message());
  }
  auto worker = DeviceName::Parse(o.worker_device);
  if (!worker.ok()) {
    return errors::InvalidArgument("ReplicaDeviceSetter: bad worker_device '",
                                   o.worker_device,
                                   "': ", worker.status().message());
  }
  state->ps = *ps;
  state->worker = *worker;
  state->loads.assign(std::max(o.ps_tasks, 0), 0);
  return Scope::DeviceFunction([state](absl::string_view op,
                                       const AttrMap& attrs,
                                       absl::string_view device) {
    return state->Device(op, attrs, device);
  });
}

}  // namespace runnel::training
