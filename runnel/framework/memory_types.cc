#include "runnel/framework/memory_types.h"

#include <map>

#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

bool AlwaysOnHost(DataType dt) {
  dt = BaseType(dt);
  return dt == DT_STRING || dt == DT_RESOURCE || dt == DT_VARIANT ||
         dt == DT_INT32;
}

}  // namespace

Status MemoryTypesForNode(const std::string& device_type,
                          const NodeProperties& node,
                          std::vector<MemoryType>* input_types,
                          std::vector<MemoryType>* output_types) {
  input_types->assign(node.input_types.size(), MemoryType::kDeviceMemory);
  output_types->assign(node.output_types.size(), MemoryType::kDeviceMemory);
  if (device_type == kDeviceCpu) return absl::OkStatus();
  const KernelDef* def = nullptr;
  const KernelFactory* factory = nullptr;
  RETURN_IF_ERROR(
      KernelRegistry::Global()->FindKernel(device_type, node, &def, &factory));
  for (size_t i = 0; i < node.input_types.size(); ++i) {
    if (AlwaysOnHost(node.input_types[i]))
      (*input_types)[i] = MemoryType::kHostMemory;
  }
  for (size_t i = 0; i < node.output_types.size(); ++i) {
    if (AlwaysOnHost(node.output_types[i]))
      (*output_types)[i] = MemoryType::kHostMemory;
  }
  if (def->host_memory_args.empty()) return absl::OkStatus();
  std::map<std::string, std::pair<int, int>> in_ranges, out_ranges;
  RETURN_IF_ERROR(
      NameRangesForNode(node.op_def(), node.attrs, &in_ranges, &out_ranges));
  for (const std::string& arg : def->host_memory_args) {
    auto mark = [](const std::pair<int, int>& r, std::vector<MemoryType>* v) {
      for (int i = r.first; i < r.second && i < static_cast<int>(v->size());
           ++i) {
        (*v)[i] = MemoryType::kHostMemory;
      }
    };
    bool found = false;
    if (auto it = in_ranges.find(arg); it != in_ranges.end()) {
      mark(it->second, input_types);
      found = true;
    }
    if (auto it = out_ranges.find(arg); it != out_ranges.end()) {
      mark(it->second, output_types);
      found = true;
    }
    if (!found) {
      return errors::Internal("kernel for ", node.op, " on ", device_type,
                              " names HostMemory arg '", arg,
                              "', which the op does not have (node '",
                              node.name, "')");
    }
  }
  return absl::OkStatus();
}

}  // namespace runnel
