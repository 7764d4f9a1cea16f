// Memory types: whether each input and output of a node lives in the
// device's own memory or in host memory when the node runs on a device type
// (TensorFlow's memory_types.h). The partitioner uses them to choose
// _HostSend/_HostRecv, so a kernel's HostMemory args (shapes, indices, loop
// counters) never take a round trip through an accelerator's memory.
//
// Rules, as in TF: on the CPU (and any device type whose memory is host
// memory) everything is kDeviceMemory — there is nothing to choose. On other
// device types an arg is kHostMemory when the node's kernel lists it as
// HostMemory (KernelDefBuilder::HostMemory) or its dtype always lives on the
// host (string, resource, variant) or is int32 (TF keeps int32 tensors on
// the host on GPUs); everything else is kDeviceMemory.
#ifndef RUNNEL_FRAMEWORK_MEMORY_TYPES_H_
#define RUNNEL_FRAMEWORK_MEMORY_TYPES_H_

#include <string>
#include <vector>

#include "runnel/base/status.h"
#include "runnel/framework/node_properties.h"

namespace runnel {

enum class MemoryType { kDeviceMemory, kHostMemory };

// One entry per input and per output of `node` on `device_type`. NotFound
// (from the kernel registry, naming the node) if no kernel exists there.
Status MemoryTypesForNode(const std::string& device_type,
                          const NodeProperties& node,
                          std::vector<MemoryType>* input_types,
                          std::vector<MemoryType>* output_types);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_MEMORY_TYPES_H_
