// Fashion-MNIST with a convolutional network (NHWC):
//   conv 5x5x32 (SAME) -> ReLU -> max-pool 2x2 ->
//   conv 5x5x64 (SAME) -> ReLU -> max-pool 2x2 ->
//   dense 1024 -> ReLU -> dense 10, softmax cross-entropy.
//
//   build/examples/fashion_mnist_cnn                  # Adam, 3 epochs
//   build/examples/fashion_mnist_cnn --optimizer=momentum --learning_rate=0.01
//
// Prints a progress bar per epoch (step, mean loss, examples/s), then the
// test accuracy (about 91% after 3 epochs with the defaults) and the
// training time.
#include "examples/fashion_mnist_common.h"

using namespace runnel;  // NOLINT: an example reads better this way.

int main(int argc, char** argv) {
  examples::Flags flags;
  flags.epochs = 3;   // Also batch 64, Adam, lr 1e-3,
  flags.decay = 0.7;  // multiplied by 0.7 after each epoch.
  examples::ParseFlags(argc, argv, "fashion_mnist_cnn", &flags);

  Scope root = Scope::NewRootScope();
  examples::Classifier model;
  model.example_shape = TensorShape({28, 28, 1});
  model.images = ops::Placeholder(root.WithOpName("images"), DT_FLOAT,
                                  ops::Placeholder::Shape({-1, 28, 28, 1}));
  model.labels = ops::Placeholder(root.WithOpName("labels"), DT_INT32,
                                  ops::Placeholder::Shape({-1}));
  using training::Activation;
  auto c1 = training::Conv2D(root, model.images, 32, {5, 5}, {1, 1}, "SAME",
                             Activation::kRelu);
  auto p1 = training::MaxPool2D(root, c1, {2, 2}, {2, 2});  // 14x14x32
  auto c2 =
      training::Conv2D(root, p1, 64, {5, 5}, {1, 1}, "SAME", Activation::kRelu);
  auto p2 = training::MaxPool2D(root, c2, {2, 2}, {2, 2});  // 7x7x64
  auto fc = training::Dense(root, training::Flatten(root, p2), 1024,
                            Activation::kRelu);
  model.logits = training::Dense(root, fc, 10);
  model.loss =
      training::SparseSoftmaxCrossEntropyLoss(root, model.logits, model.labels);
  // Training: the optimizer adds the gradients and the update ops.
  std::unique_ptr<training::Optimizer> optimizer;
  model.train_op = examples::BuildTrainOp(root, model.loss, flags,
                                          /*train_examples=*/60000, &optimizer);
  return examples::TrainAndEvaluate(root, model, flags);
}
