// The CNN of examples/fashion_mnist_cnn.cc (and benchmarks/input_pipeline),
// NHWC:
//   conv 5x5x32 (SAME) -> ReLU -> max-pool 2x2 ->
//   conv 5x5x64 (SAME) -> ReLU -> max-pool 2x2 ->
//   dense 1024 -> ReLU -> dense 10, softmax cross-entropy.
#ifndef RUNNEL_EXAMPLES_FASHION_MNIST_CNN_MODEL_H_
#define RUNNEL_EXAMPLES_FASHION_MNIST_CNN_MODEL_H_

#include "examples/fashion_mnist_common.h"

namespace runnel::examples {

// Adds the logits and the loss of the CNN over model->images [batch, 28, 28,
// 1] and model->labels.
inline void BuildCnn(const Scope& root, Classifier* model) {
  using training::Activation;
  auto c1 = training::Conv2D(root, model->images, 32, {5, 5}, {1, 1}, "SAME",
                             Activation::kRelu);
  auto p1 = training::MaxPool2D(root, c1, {2, 2}, {2, 2});  // 14x14x32
  auto c2 =
      training::Conv2D(root, p1, 64, {5, 5}, {1, 1}, "SAME", Activation::kRelu);
  auto p2 = training::MaxPool2D(root, c2, {2, 2}, {2, 2});  // 7x7x64
  auto fc = training::Dense(root, training::Flatten(root, p2), 1024,
                            Activation::kRelu);
  model->logits = training::Dense(root, fc, 10);
  model->loss = training::SparseSoftmaxCrossEntropyLoss(root, model->logits,
                                                        model->labels);
}

}  // namespace runnel::examples

#endif  // RUNNEL_EXAMPLES_FASHION_MNIST_CNN_MODEL_H_
