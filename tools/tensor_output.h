// How the `runnel` commands print tensors: one line of text, or a JSON
// object. Shared by `run` (tools/runnel.cc), `run SAVED_MODEL_DIR`
// (saved_model_command.cc) and `ckpt` (ckpt_command.cc), so that the three
// print alike.
#ifndef RUNNEL_TOOLS_TENSOR_OUTPUT_H_
#define RUNNEL_TOOLS_TENSOR_OUTPUT_H_

#include <string>

#include "runnel/framework/tensor.h"

namespace runnel {

// {"dtype": "float32", "shape": [2], "values": [1, 2]}: strings are JSON
// strings; NaN and the infinities are the strings "NaN", "Infinity",
// "-Infinity".
std::string JsonTensor(const Tensor& t);

// "NAME (float32 [2]): [1 2]" (at most 1000 values; no newline).
std::string TensorLine(const std::string& name, const Tensor& t);

}  // namespace runnel

#endif  // RUNNEL_TOOLS_TENSOR_OUTPUT_H_
